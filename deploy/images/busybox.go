// Package images builds minik's container images locally, without a
// registry or a base image: each is one layer packed into an OCI image
// archive (oci-layout, index.json, blobs/sha256/...) that `minik image load`
// and `ctr images import` accept.
package images

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"runtime"
	"sort"
	"strings"
	"time"
)

// BusyboxName is the reference the busybox image is stored under; a pod's
// `image: busybox` normalizes to it.
const BusyboxName = "docker.io/library/busybox:latest"

// DefaultBusyboxPath is where Debian's busybox-static installs its binary.
const DefaultBusyboxPath = "/bin/busybox"

// File is one entry of an image layer.
type File struct {
	Path     string // relative, e.g. "bin/sh"
	Mode     int64
	Data     []byte
	Linkname string // non-empty: a symlink
	Dir      bool
}

// Busybox returns the layer of the busybox image: the static binary, one
// symlink per applet, and a minimal /etc.
func Busybox(busyboxPath string) ([]File, error) {
	bin, err := os.ReadFile(busyboxPath)
	if err != nil {
		return nil, fmt.Errorf("reading %s (apt-get install busybox-static): %w", busyboxPath, err)
	}
	out, err := exec.Command(busyboxPath, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --list: %w", busyboxPath, err)
	}
	files := []File{}
	for _, d := range []string{"bin", "etc", "tmp", "proc", "sys", "dev", "root", "home", "var", "usr", "usr/bin", "sbin"} {
		mode := int64(0o755)
		if d == "tmp" {
			mode = 0o1777
		}
		files = append(files, File{Path: d, Mode: mode, Dir: true})
	}
	files = append(files, File{Path: "bin/busybox", Mode: 0o755, Data: bin})
	for _, applet := range strings.Fields(string(out)) {
		if applet == "busybox" || strings.Contains(applet, "/") {
			continue
		}
		files = append(files, File{Path: "bin/" + applet, Mode: 0o777, Linkname: "busybox"})
	}
	files = append(files,
		File{Path: "etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home:/bin/false\n")},
		File{Path: "etc/group", Mode: 0o644, Data: []byte("root:x:0:\nnobody:x:65534:\n")},
	)
	return files, nil
}

// WriteOCIArchive writes an OCI image archive with one layer made of files,
// named ref, running cmd by default.
func WriteOCIArchive(w io.Writer, ref string, files []File, cmd []string) error {
	layer, diffID, err := gzipLayer(files)
	if err != nil {
		return err
	}
	created := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	config := map[string]any{
		"created":      created,
		"architecture": runtime.GOARCH,
		"os":           "linux",
		"config": map[string]any{
			"Env":        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
			"Cmd":        cmd,
			"WorkingDir": "/",
		},
		"rootfs":  map[string]any{"type": "layers", "diff_ids": []string{diffID}},
		"history": []map[string]any{{"created": created, "created_by": "minik deploy/images"}},
	}
	configJSON, _ := json.Marshal(config)
	manifest := map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.manifest.v1+json",
		"config":        descriptor("application/vnd.oci.image.config.v1+json", configJSON),
		"layers":        []any{descriptor("application/vnd.oci.image.layer.v1.tar+gzip", layer)},
	}
	manifestJSON, _ := json.Marshal(manifest)
	md := descriptor("application/vnd.oci.image.manifest.v1+json", manifestJSON)
	md["annotations"] = map[string]string{
		"io.containerd.image.name":          ref,
		"org.opencontainers.image.ref.name": refTag(ref),
	}
	md["platform"] = map[string]string{"architecture": runtime.GOARCH, "os": "linux"}
	index, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": []any{md}})

	tw := tar.NewWriter(w)
	put := func(name string, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: created, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	if err := put("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return err
	}
	for _, blob := range [][]byte{layer, configJSON, manifestJSON} {
		if err := put("blobs/sha256/"+sha(blob), blob); err != nil {
			return err
		}
	}
	if err := put("index.json", index); err != nil {
		return err
	}
	return tw.Close()
}

func refTag(ref string) string {
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		return ref[i+1:]
	}
	return "latest"
}

func descriptor(mediaType string, data []byte) map[string]any {
	return map[string]any{"mediaType": mediaType, "digest": "sha256:" + sha(data), "size": len(data)}
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// gzipLayer returns the compressed layer and the digest of its
// uncompressed tar (the diff ID).
func gzipLayer(files []File) ([]byte, string, error) {
	sort.SliceStable(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	mtime := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, f := range files {
		h := &tar.Header{Name: path.Clean(f.Path), Mode: f.Mode, ModTime: mtime, Format: tar.FormatPAX}
		switch {
		case f.Dir:
			h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
		case f.Linkname != "":
			h.Typeflag, h.Linkname = tar.TypeSymlink, f.Linkname
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.Data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, "", err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(f.Data); err != nil {
				return nil, "", err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, "", err
	}
	diffID := "sha256:" + sha(raw.Bytes())
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestSpeed)
	if _, err := zw.Write(raw.Bytes()); err != nil {
		return nil, "", err
	}
	if err := zw.Close(); err != nil {
		return nil, "", err
	}
	return gz.Bytes(), diffID, nil
}

// BuildBusybox writes the busybox image archive to path.
func BuildBusybox(path, busyboxPath string) error {
	files, err := Busybox(busyboxPath)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := WriteOCIArchive(&buf, BusyboxName, files, []string{"sh"}); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}
