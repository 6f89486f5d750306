package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"minik/deploy/images"
)

// testImage is an image of the e2e suite that the harness builds locally
// (no registry is reachable here), under every reference of that
// repository the suite lists (`e2e.test --list-images`).
type testImage struct {
	repo       string // e.g. registry.k8s.io/e2e-test-images/agnhost
	layers     func(l *layerSet) ([][]images.File, error)
	entrypoint []string
	cmd        []string
}

// layerSet builds each shared layer once.
type layerSet struct {
	busyboxDeb string // Debian's busybox .deb (images.DefaultBusyboxPath)
	agnhostBin string // agnhost, built static from k8s.io/kubernetes/test/images/agnhost
	kubeSrc    string // the k8s.io/kubernetes module's source (porter's certificates, kitten's pages)
	shBin      string // conformance/sh, built static: the images' /bin/sh

	busybox, shell, tools, agnhost []images.File
}

// agnhostTools are the clients upstream's agnhost image (alpine) has and
// the specs run in it, taken from this host (Debian's curl, libc-bin,
// bind9-dnsutils and netcat-openbsd; conformance/run.sh installs them).
var agnhostTools = map[string]string{
	"usr/bin/curl":   "/usr/bin/curl",
	"usr/bin/dig":    "/usr/bin/dig",
	"usr/bin/getent": "/usr/bin/getent",
	"usr/bin/nc":     "/usr/bin/nc",
}

// testImages are what the in-scope specs run. Their sh picks busybox's
// ash or bash (see stack). agnhost keeps what its
// upstream Dockerfile adds to alpine and the specs use (a shell and
// busybox's tools, /agnhost-2, /uploads, porter's certificate, the user
// and group defined in the image); pause is agnhost's `pause`;
// glibc-dns-testing is the same stack; nginx is a
// stand-in that serves /usr/share/nginx/html on port 80 with busybox's
// httpd; kitten and nautilus are agnhost's test-webserver with their
// pages, as upstream builds them.
var testImages = []testImage{
	{repo: "registry.k8s.io/e2e-test-images/busybox", cmd: []string{"sh"},
		layers: func(l *layerSet) ([][]images.File, error) { return l.stack(false) }},
	{repo: "registry.k8s.io/e2e-test-images/agnhost", entrypoint: []string{"/agnhost"}, cmd: []string{"pause"},
		layers: func(l *layerSet) ([][]images.File, error) { return l.stack(true) }},
	{repo: "registry.k8s.io/pause", entrypoint: []string{"/agnhost", "pause"},
		layers: func(l *layerSet) ([][]images.File, error) { return l.stack(true) }},
	// The DNS specs' glibc prober (dig, getent, hostname and a shell): the
	// same clients, which here are glibc's (Debian's) anyway.
	{repo: "registry.k8s.io/e2e-test-images/glibc-dns-testing", cmd: []string{"sh"},
		layers: func(l *layerSet) ([][]images.File, error) { return l.stack(true) }},
	{repo: "registry.k8s.io/e2e-test-images/nginx", cmd: []string{"httpd", "-f", "-p", "80", "-h", "/usr/share/nginx/html"},
		layers: func(l *layerSet) ([][]images.File, error) {
			return l.stack(false, images.File{Path: "usr/share/nginx/html/index.html", Mode: 0o644, Data: []byte("<html><body>minik's nginx stand-in</body></html>\n")})
		}},
	{repo: "registry.k8s.io/e2e-test-images/kitten", entrypoint: []string{"/agnhost"}, cmd: []string{"test-webserver"},
		layers: func(l *layerSet) ([][]images.File, error) { return l.stackWithPages("kitten") }},
	{repo: "registry.k8s.io/e2e-test-images/nautilus", entrypoint: []string{"/agnhost"}, cmd: []string{"test-webserver"},
		layers: func(l *layerSet) ([][]images.File, error) { return l.stackWithPages("nautilus") }},
}

// stack returns the busybox layer, the shell's, the clients' and
// agnhost's on top if withAgnhost, and a last layer of extra files if any.
func (l *layerSet) stack(withAgnhost bool, extra ...images.File) ([][]images.File, error) {
	if l.busybox == nil {
		files, err := images.Busybox(l.busyboxDeb)
		if err != nil {
			return nil, err
		}
		l.busybox = files
	}
	if l.shell == nil {
		// Debian's busybox 1.35 ash drops environment variables whose
		// names are not identifiers ("data-1", which envFrom may set);
		// the suite's busybox 1.37 passes them on. /bin/sh is a shim
		// (conformance/sh) that runs ash, or bash, which keeps them, for
		// such an environment.
		files, err := images.HostPrograms(map[string]string{"usr/bin/bash": "/bin/bash"})
		if err != nil {
			return nil, err
		}
		shim, err := os.ReadFile(l.shBin)
		if err != nil {
			return nil, fmt.Errorf("the sh shim: %w", err)
		}
		l.shell = append(files, images.File{Path: "bin/sh", Mode: 0o755, Data: shim})
	}
	layers := [][]images.File{l.busybox, l.shell}
	if withAgnhost {
		if l.tools == nil {
			files, err := images.HostPrograms(agnhostTools)
			if err != nil {
				return nil, err
			}
			l.tools = files
		}
		if l.agnhost == nil {
			files, err := agnhostLayer(l.agnhostBin, l.kubeSrc)
			if err != nil {
				return nil, err
			}
			l.agnhost = files
		}
		layers = append(layers, l.tools, l.agnhost)
	}
	if len(extra) > 0 {
		layers = append(layers, withParents(extra))
	}
	return layers, nil
}

// stackWithPages is agnhost plus test/images/NAME/html at the root, as
// upstream's kitten and nautilus images are.
func (l *layerSet) stackWithPages(name string) ([][]images.File, error) {
	dir := filepath.Join(l.kubeSrc, "test", "images", name, "html")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []images.File
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		files = append(files, images.File{Path: e.Name(), Mode: 0o644, Data: data})
	}
	return l.stack(true, files...)
}

// agnhostLayer is what agnhost's Dockerfile adds to its base image.
func agnhostLayer(bin, kubeSrc string) ([]images.File, error) {
	agnhost, err := os.ReadFile(bin)
	if err != nil {
		return nil, fmt.Errorf("agnhost: %w", err)
	}
	files := []images.File{
		{Path: "agnhost", Mode: 0o755, Data: agnhost},
		{Path: "agnhost-2", Mode: 0o777, Linkname: "agnhost"},
		{Path: "uploads", Mode: 0o755, Dir: true},
		{Path: "etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home:/bin/false\nuser-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh\n")},
		{Path: "etc/group", Mode: 0o644, Data: []byte("root:x:0:\nnobody:x:65534:\nuser-defined-in-image:x:1000:\ngroup-defined-in-image:x:50000:user-defined-in-image\n")},
	}
	for _, name := range []string{"localhost.crt", "localhost.key"} {
		data, err := os.ReadFile(filepath.Join(kubeSrc, "test", "images", "agnhost", "porter", name))
		if err != nil {
			return nil, err
		}
		files = append(files, images.File{Path: name, Mode: 0o644, Data: data})
	}
	return withParents(files), nil
}

// withParents adds a directory entry for each parent of the files.
func withParents(files []images.File) []images.File {
	seen := map[string]bool{}
	var dirs []images.File
	for _, f := range files {
		for d := filepath.Dir(f.Path); d != "." && !seen[d]; d = filepath.Dir(d) {
			seen[d] = true
			dirs = append(dirs, images.File{Path: d, Mode: 0o755, Dir: true})
		}
	}
	return append(dirs, files...)
}

// refsByRepo groups the suite's image references (`e2e.test
// --list-images`, one per line) by repository.
func refsByRepo(list string) map[string][]string {
	out := map[string][]string{}
	for _, ref := range strings.Fields(list) {
		i := strings.LastIndex(ref, ":")
		if i <= strings.LastIndex(ref, "/") {
			continue // no tag
		}
		out[ref[:i]] = append(out[ref[:i]], ref)
	}
	for _, refs := range out {
		sort.Strings(refs)
	}
	return out
}

// BuildTestImages writes the test images into one OCI archive at path
// (their shared layers once), each named under the references the suite
// lists.
func BuildTestImages(path string, suiteImages string, l *layerSet) error {
	refs := refsByRepo(suiteImages)
	var imgs []images.Image
	for _, ti := range testImages {
		names := refs[ti.repo]
		if len(names) == 0 {
			return fmt.Errorf("the suite lists no image of %s", ti.repo)
		}
		layers, err := ti.layers(l)
		if err != nil {
			return fmt.Errorf("%s: %w", ti.repo, err)
		}
		imgs = append(imgs, images.Image{Names: names, Layers: layers, Entrypoint: ti.entrypoint, Cmd: ti.cmd})
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := images.WriteImages(f, imgs...); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
