package images

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestWriteOCIArchive(t *testing.T) {
	files := []File{{Path: "bin", Mode: 0o755, Dir: true}, {Path: "bin/hello", Mode: 0o755, Data: []byte("#!/bin/sh\necho hi\n")},
		{Path: "bin/hi", Mode: 0o777, Linkname: "hello"}}
	var a, b bytes.Buffer
	if err := WriteOCIArchive(&a, "example.com/x:1", files, []string{"hello"}); err != nil {
		t.Fatal(err)
	}
	if err := WriteOCIArchive(&b, "example.com/x:1", files, []string{"hello"}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("two builds of the same files differ: the archive must be reproducible")
	}
	entries := archiveEntries(t, &a)
	if string(entries["oci-layout"]) != `{"imageLayoutVersion":"1.0.0"}` {
		t.Errorf("oci-layout = %q", entries["oci-layout"])
	}
	index := readIndex(t, entries)
	if len(index.Manifests) != 1 || index.Manifests[0].Annotations["io.containerd.image.name"] != "example.com/x:1" ||
		index.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "1" {
		t.Fatalf("index %+v", index)
	}
	if _, ok := entries["blobs/sha256/"+index.Manifests[0].Digest[len("sha256:"):]]; !ok {
		t.Error("the manifest blob named by index.json is missing")
	}
}

func TestWriteImage(t *testing.T) {
	base := []File{{Path: "bin", Mode: 0o755, Dir: true}, {Path: "bin/tool", Mode: 0o755, Data: []byte("tool")}}
	top := []File{{Path: "srv/index.html", Mode: 0o644, Data: []byte("hi")}}
	tests := []struct {
		name       string
		img        Image
		wantNames  []string
		wantLayers int // distinct layer blobs in the archive
	}{
		{
			name:       "an image with two names is listed in the index under each, with one manifest",
			img:        Image{Names: []string{"example.com/a:1", "example.com/b:2"}, Layers: [][]File{base}, Entrypoint: []string{"/bin/tool"}, Cmd: []string{"serve"}},
			wantNames:  []string{"example.com/a:1", "example.com/b:2"},
			wantLayers: 1,
		},
		{
			name:       "an image of two layers names both diff IDs, lowest first",
			img:        Image{Names: []string{"example.com/web:1"}, Layers: [][]File{base, top}, Entrypoint: []string{"/bin/tool"}, Cmd: []string{"serve"}},
			wantNames:  []string{"example.com/web:1"},
			wantLayers: 2,
		},
		{
			name:       "the same layer twice is stored once",
			img:        Image{Names: []string{"example.com/twice:1"}, Layers: [][]File{base, base}, Entrypoint: []string{"/bin/tool"}, Cmd: []string{"serve"}},
			wantNames:  []string{"example.com/twice:1"},
			wantLayers: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteImage(&buf, tt.img); err != nil {
				t.Fatal(err)
			}
			entries := archiveEntries(t, &buf)
			index := readIndex(t, entries)
			var names []string
			for _, m := range index.Manifests {
				names = append(names, m.Annotations["io.containerd.image.name"])
				if m.Digest != index.Manifests[0].Digest {
					t.Errorf("%s names manifest %s, the first name %s", names[len(names)-1], m.Digest, index.Manifests[0].Digest)
				}
			}
			if strings.Join(names, ",") != strings.Join(tt.wantNames, ",") {
				t.Errorf("names %v, want %v", names, tt.wantNames)
			}
			var manifest struct {
				Config struct{ Digest string }   `json:"config"`
				Layers []struct{ Digest string } `json:"layers"`
			}
			if err := json.Unmarshal(entries["blobs/sha256/"+strings.TrimPrefix(index.Manifests[0].Digest, "sha256:")], &manifest); err != nil {
				t.Fatal(err)
			}
			layerBlobs := map[string]bool{}
			for _, l := range manifest.Layers {
				if _, ok := entries["blobs/sha256/"+strings.TrimPrefix(l.Digest, "sha256:")]; !ok {
					t.Errorf("layer %s is not in the archive", l.Digest)
				}
				layerBlobs[l.Digest] = true
			}
			if len(layerBlobs) != tt.wantLayers {
				t.Errorf("%d distinct layers, want %d", len(layerBlobs), tt.wantLayers)
			}
			var config struct {
				Config struct{ Entrypoint, Cmd []string } `json:"config"`
				RootFS struct {
					DiffIDs []string `json:"diff_ids"`
				} `json:"rootfs"`
			}
			if err := json.Unmarshal(entries["blobs/sha256/"+strings.TrimPrefix(manifest.Config.Digest, "sha256:")], &config); err != nil {
				t.Fatal(err)
			}
			var wantDiffIDs []string
			for _, files := range tt.img.Layers {
				_, diffID, err := gzipLayer(files)
				if err != nil {
					t.Fatal(err)
				}
				wantDiffIDs = append(wantDiffIDs, diffID)
			}
			if strings.Join(config.RootFS.DiffIDs, ",") != strings.Join(wantDiffIDs, ",") {
				t.Errorf("diff IDs %v, want the layers' in order %v", config.RootFS.DiffIDs, wantDiffIDs)
			}
			if fmt.Sprint(config.Config.Entrypoint, config.Config.Cmd) != fmt.Sprint(tt.img.Entrypoint, tt.img.Cmd) {
				t.Errorf("entrypoint %v cmd %v, want %v %v", config.Config.Entrypoint, config.Config.Cmd, tt.img.Entrypoint, tt.img.Cmd)
			}
		})
	}
}

func TestWriteImagesSharesLayers(t *testing.T) {
	base := []File{{Path: "bin", Mode: 0o755, Dir: true}, {Path: "bin/tool", Mode: 0o755, Data: []byte("tool")}}
	top := []File{{Path: "srv/index.html", Mode: 0o644, Data: []byte("hi")}}
	var buf bytes.Buffer
	err := WriteImages(&buf,
		Image{Names: []string{"example.com/base:1"}, Layers: [][]File{base}, Cmd: []string{"sh"}},
		Image{Names: []string{"example.com/web:1", "example.com/web:2"}, Layers: [][]File{base, top}, Cmd: []string{"serve"}})
	if err != nil {
		t.Fatal(err)
	}
	entries := archiveEntries(t, &buf)
	index := readIndex(t, entries)
	manifests := map[string]bool{}
	for _, m := range index.Manifests {
		manifests[m.Digest] = true
	}
	if len(index.Manifests) != 3 || len(manifests) != 2 {
		t.Errorf("%d index entries for %d manifests, want 3 names of 2 images", len(index.Manifests), len(manifests))
	}
	blobs := 0
	for name := range entries {
		if strings.HasPrefix(name, "blobs/") {
			blobs++
		}
	}
	// Two layers (the shared one once), two configs, two manifests.
	if blobs != 6 {
		t.Errorf("%d blobs, want 6: the shared layer once", blobs)
	}
}

func TestHostPrograms(t *testing.T) {
	files, err := HostPrograms(map[string]string{"bin/sh": "/bin/bash", "usr/bin/printenv": PrintenvPath})
	if err != nil {
		t.Fatal(err)
	}
	byPath := layerByPath(t, files)
	tests := []struct {
		name string
		path string
	}{
		{"a program is at its image path", "bin/sh"},
		{"a program in a nested directory is there too", "usr/bin/printenv"},
		{"a nested program's directories are in the layer", "usr/bin"},
		{"the libraries only bash loads come with it", "lib/x86_64-linux-gnu/libtinfo.so.6"},
		{"the C library comes with them", "lib/x86_64-linux-gnu/libc.so.6"},
		{"the loader is at the path the programs name", "lib64/ld-linux-x86-64.so.2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, ok := byPath[tt.path]; !ok {
				t.Errorf("%s is missing from the layer", tt.path)
			}
		})
	}
}

// layerByPath indexes a layer's files by path; a path twice is an error.
func layerByPath(t *testing.T, files []File) map[string]File {
	t.Helper()
	byPath := map[string]File{}
	for _, f := range files {
		if _, dup := byPath[f.Path]; dup {
			t.Errorf("%s is in the layer twice", f.Path)
		}
		byPath[f.Path] = f
	}
	return byPath
}

// ociIndex is the part of an archive's index.json the tests read.
type ociIndex struct {
	Manifests []struct {
		Digest      string            `json:"digest"`
		Annotations map[string]string `json:"annotations"`
	} `json:"manifests"`
}

func readIndex(t *testing.T, entries map[string][]byte) ociIndex {
	t.Helper()
	var index ociIndex
	if err := json.Unmarshal(entries["index.json"], &index); err != nil {
		t.Fatal(err)
	}
	return index
}

// archiveEntries reads a tar archive into a map from name to contents.
func archiveEntries(t *testing.T, r io.Reader) map[string][]byte {
	t.Helper()
	entries := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return entries
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		entries[h.Name] = data
	}
}

// TestBusyboxImageIsAUsableClient builds the image from Debian's busybox
// package (deploy/deps.sh downloads it) and checks, in the layer itself,
// that every program's loader and libraries are there, then runs the
// client applets in a chroot of the layer: what a pod's minimal root
// filesystem holds.
func TestBusyboxImageIsAUsableClient(t *testing.T) {
	files, err := Busybox(DefaultBusyboxPath)
	if err != nil {
		t.Fatal(err)
	}
	byPath := layerByPath(t, files)
	for _, p := range []string{"bin/sh", "bin/wget", "bin/nslookup", "bin/printenv", "bin/env", "bin/httpd", "bin/sleep",
		"bin/cat", "bin/hostname", "etc/passwd", "etc/group", "etc/nsswitch.conf"} {
		if _, ok := byPath[p]; !ok {
			t.Errorf("the image lacks %s", p)
		}
	}
	if f := byPath["bin/printenv"]; f.Linkname != "" || len(f.Data) == 0 {
		t.Errorf("bin/printenv should be coreutils' program (Debian's busybox has no printenv applet), got %+v", f.Linkname)
	}
	// Every ELF's interpreter and DT_NEEDED libraries resolve in the layer.
	libDirs := []string{}
	for p, f := range byPath {
		if f.Dir && strings.HasPrefix(p, "lib/") {
			libDirs = append(libDirs, p)
		}
	}
	for p, f := range byPath {
		if f.Dir || f.Linkname != "" || !bytes.HasPrefix(f.Data, []byte("\x7fELF")) {
			continue
		}
		ef, err := elf.NewFile(bytes.NewReader(f.Data))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		in, _ := interpreter(ef)
		if in != "" {
			target := resolveLink(byPath, strings.TrimPrefix(in, "/"))
			if g, ok := byPath[target]; !ok || len(g.Data) == 0 {
				t.Errorf("%s: its loader %s is not in the layer", p, in)
			}
		}
		needed, _ := ef.ImportedLibraries()
		for _, lib := range needed {
			found := false
			for _, d := range libDirs {
				if _, ok := byPath[path.Join(d, lib)]; ok {
					found = true
				}
			}
			if !found {
				t.Errorf("%s needs %s, which is not in the layer", p, lib)
			}
		}
	}

	if testing.Short() {
		return // the rest runs programs in a chroot: root only
	}
	if os.Geteuid() != 0 {
		t.Fatal("running the image's programs in a chroot needs root (go test -short skips it)")
	}
	root := t.TempDir()
	for _, f := range files {
		dst := filepath.Join(root, f.Path)
		switch {
		case f.Dir:
			err = os.MkdirAll(dst, os.FileMode(f.Mode&0o777))
		case f.Linkname != "":
			err = os.Symlink(f.Linkname, dst)
		default:
			err = os.WriteFile(dst, f.Data, os.FileMode(f.Mode))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "etc/hosts"), []byte("127.0.0.1\tlocalhost web\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "tmp/index.html"), []byte("hello from httpd\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	httpd := exec.Command("chroot", root, "/bin/httpd", "-f", "-p", fmt.Sprintf("127.0.0.1:%d", port), "-h", "/tmp")
	if err := httpd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = httpd.Process.Kill(); _ = httpd.Wait() })
	run := func(env []string, args ...string) string {
		t.Helper()
		cmd := exec.Command("chroot", append([]string{root}, args...)...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	if got := run([]string{"POD_IP=10.1.2.3", "PATH=/bin"}, "printenv", "POD_IP"); got != "10.1.2.3\n" {
		t.Errorf("printenv POD_IP = %q", got)
	}
	if got := run([]string{"A=1"}, "/bin/env"); got != "A=1\n" {
		t.Errorf("env = %q", got)
	}
	var got string
	for i := 0; i < 50; i++ { // until httpd listens
		cmd := exec.Command("chroot", root, "/bin/wget", "-qO-", fmt.Sprintf("http://127.0.0.1:%d/index.html", port))
		out, err := cmd.CombinedOutput()
		if got = string(out); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got != "hello from httpd\n" {
		t.Fatalf("wget by IP = %q", got)
	}
	if got := run(nil, "/bin/wget", "-qO-", fmt.Sprintf("http://web:%d/index.html", port)); got != "hello from httpd\n" {
		t.Errorf("wget by a name from /etc/hosts = %q", got)
	}
}

// resolveLink follows symlinks inside the layer.
func resolveLink(byPath map[string]File, p string) string {
	for i := 0; i < 10; i++ {
		f, ok := byPath[p]
		if !ok || f.Linkname == "" {
			return p
		}
		if strings.HasPrefix(f.Linkname, "/") {
			p = strings.TrimPrefix(f.Linkname, "/")
		} else {
			p = path.Join(path.Dir(p), f.Linkname)
		}
	}
	return p
}
