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

// DefaultBusyboxPath is Debian's busybox package (the dynamically linked
// build, not busybox-static), where deploy/deps.sh downloads it with
// `apt-get download busybox`. It is not installed: it conflicts with
// busybox-static, which the host may keep.
const DefaultBusyboxPath = "/var/cache/minik/busybox.deb"

// PrintenvPath is GNU printenv from Debian's coreutils (an essential
// package, on every Debian host). Debian builds busybox without its
// printenv applet, so the image takes this one, linked against the same
// libc as busybox.
const PrintenvPath = "/usr/bin/printenv"

// nsswitch is the image's /etc/nsswitch.conf: names from /etc/hosts (the
// kubelet's managed file) first, then DNS (the pod's resolv.conf). glibc
// 2.34 and later have the files and dns services built in, so no
// libnss_*.so is needed.
const nsswitch = "passwd:         files\ngroup:          files\nshadow:         files\nhosts:          files dns\nnetworks:       files\nprotocols:      files\nservices:       files\n"

// File is one entry of an image layer.
type File struct {
	Path     string // relative, e.g. "bin/sh"
	Mode     int64
	Data     []byte
	Linkname string // non-empty: a symlink
	Dir      bool
}

// Busybox returns the layer of the busybox image: the busybox binary
// (src is a Debian .deb holding bin/busybox, or the binary itself), one
// symlink per applet, printenv from coreutils when busybox lacks the
// applet, the shared libraries they load (the ELF interpreter and every
// DT_NEEDED, found beside the host's loader) and a minimal /etc.
func Busybox(src string) ([]File, error) {
	bin, err := busyboxBinary(src)
	if err != nil {
		return nil, err
	}
	applets, err := listApplets(bin)
	if err != nil {
		return nil, err
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
	have := map[string]bool{}
	for _, applet := range applets {
		if applet == "busybox" || strings.Contains(applet, "/") {
			continue
		}
		have[applet] = true
		files = append(files, File{Path: "bin/" + applet, Mode: 0o777, Linkname: "busybox"})
	}
	elves := [][]byte{bin}
	if !have["printenv"] {
		pe, err := os.ReadFile(PrintenvPath)
		if err != nil {
			return nil, fmt.Errorf("busybox has no printenv applet, and coreutils' is missing: %w", err)
		}
		files = append(files, File{Path: "bin/printenv", Mode: 0o755, Data: pe})
		elves = append(elves, pe)
	}
	libs, err := sharedLibraries(elves...)
	if err != nil {
		return nil, err
	}
	files = append(files, libs...)
	files = append(files,
		File{Path: "etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home:/bin/false\n")},
		File{Path: "etc/group", Mode: 0o644, Data: []byte("root:x:0:\nnobody:x:65534:\n")},
		File{Path: "etc/nsswitch.conf", Mode: 0o644, Data: []byte(nsswitch)},
	)
	return dedupDirs(files), nil
}

// busyboxBinary reads the busybox binary from src: a .deb (through
// dpkg-deb, so whatever compression Debian uses) or the file itself.
func busyboxBinary(src string) ([]byte, error) {
	if !strings.HasSuffix(src, ".deb") {
		bin, err := os.ReadFile(src)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", src, err)
		}
		return bin, nil
	}
	if _, err := os.Stat(src); err != nil {
		return nil, fmt.Errorf("%w (run `make deps`, or: apt-get download busybox && mv busybox_*.deb %s)", err, src)
	}
	cmd := exec.Command("dpkg-deb", "--fsys-tarfile", src)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("dpkg-deb: %w", err)
	}
	var bin []byte
	tr := tar.NewReader(out)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			_ = cmd.Wait()
			return nil, fmt.Errorf("reading %s: %w", src, err)
		}
		if path.Clean(h.Name) == "bin/busybox" && h.Typeflag == tar.TypeReg {
			if bin, err = io.ReadAll(tr); err != nil {
				_ = cmd.Wait()
				return nil, err
			}
		}
	}
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("dpkg-deb --fsys-tarfile %s: %w: %s", src, err, stderr.String())
	}
	if bin == nil {
		return nil, fmt.Errorf("%s holds no bin/busybox", src)
	}
	return bin, nil
}

// listApplets runs the binary's `--list` from a temporary copy.
func listApplets(bin []byte) ([]string, error) {
	f, err := os.CreateTemp("", "busybox-")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(bin); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Chmod(0o755); err != nil {
		f.Close()
		return nil, err
	}
	f.Close()
	out, err := exec.Command(f.Name(), "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("busybox --list: %w", err)
	}
	return strings.Fields(string(out)), nil
}

// dedupDirs drops repeated directory entries, keeping the first.
func dedupDirs(files []File) []File {
	seen := map[string]bool{}
	out := files[:0]
	for _, f := range files {
		if f.Dir {
			if seen[f.Path] {
				continue
			}
			seen[f.Path] = true
		}
		out = append(out, f)
	}
	return out
}

// WriteOCIArchive writes an OCI image archive with one layer made of files,
// named ref, running cmd by default.
func WriteOCIArchive(w io.Writer, ref string, files []File, cmd []string) error {
	return WriteImage(w, Image{Names: []string{ref}, Layers: [][]File{files}, Cmd: cmd})
}

// Image is an image to pack into an OCI archive.
type Image struct {
	Names      []string // references it is stored under, e.g. docker.io/library/busybox:latest
	Layers     [][]File // lowest first; images sharing a layer share its blob in containerd
	Entrypoint []string
	Cmd        []string
}

// WriteImage writes img as an OCI image archive: one manifest, listed in
// index.json once under each of its names.
func WriteImage(w io.Writer, img Image) error {
	return WriteImages(w, img)
}

// WriteImages writes imgs into one OCI image archive, each blob once
// (images that share a layer share its blob). Every timestamp is fixed,
// so the same files give the same digests.
func WriteImages(w io.Writer, imgs ...Image) error {
	created := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	var blobs [][]byte
	var entries []any
	// Images built on the same layer slice share it: compress it once.
	type compressed struct {
		layer  []byte
		diffID string
	}
	done := map[*File]compressed{}
	for _, img := range imgs {
		if len(img.Names) == 0 {
			return fmt.Errorf("an image needs a name")
		}
		var layers [][]byte
		var diffIDs []string
		for _, files := range img.Layers {
			var key *File
			if len(files) > 0 {
				key = &files[0]
			}
			c, ok := done[key]
			if !ok || key == nil {
				layer, diffID, err := gzipLayer(files)
				if err != nil {
					return err
				}
				c = compressed{layer, diffID}
				done[key] = c
			}
			layers, diffIDs = append(layers, c.layer), append(diffIDs, c.diffID)
		}
		runConfig := map[string]any{
			"Env":        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
			"Cmd":        img.Cmd,
			"WorkingDir": "/",
		}
		if img.Entrypoint != nil {
			runConfig["Entrypoint"] = img.Entrypoint
		}
		history := make([]map[string]any, len(layers))
		layerDescriptors := make([]any, len(layers))
		for i, layer := range layers {
			history[i] = map[string]any{"created": created, "created_by": "minik deploy/images"}
			layerDescriptors[i] = descriptor("application/vnd.oci.image.layer.v1.tar+gzip", layer)
		}
		config := map[string]any{
			"created":      created,
			"architecture": runtime.GOARCH,
			"os":           "linux",
			"config":       runConfig,
			"rootfs":       map[string]any{"type": "layers", "diff_ids": diffIDs},
			"history":      history,
		}
		configJSON, _ := json.Marshal(config)
		manifest := map[string]any{
			"schemaVersion": 2,
			"mediaType":     "application/vnd.oci.image.manifest.v1+json",
			"config":        descriptor("application/vnd.oci.image.config.v1+json", configJSON),
			"layers":        layerDescriptors,
		}
		manifestJSON, _ := json.Marshal(manifest)
		for _, ref := range img.Names {
			md := descriptor("application/vnd.oci.image.manifest.v1+json", manifestJSON)
			md["annotations"] = map[string]string{
				"io.containerd.image.name":          ref,
				"org.opencontainers.image.ref.name": refTag(ref),
			}
			md["platform"] = map[string]string{"architecture": runtime.GOARCH, "os": "linux"}
			entries = append(entries, md)
		}
		blobs = append(append(blobs, layers...), configJSON, manifestJSON)
	}
	index, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": entries})

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
	written := map[string]bool{}
	for _, blob := range blobs {
		name := "blobs/sha256/" + sha(blob)
		if written[name] {
			continue // a layer two images share, or one image twice
		}
		written[name] = true
		if err := put(name, blob); err != nil {
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
// busyboxPath is a Debian busybox .deb or a busybox binary
// (DefaultBusyboxPath).
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
