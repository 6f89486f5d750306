package images

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// sharedLibraries returns what the dynamically linked programs among elves
// need at run time: their ELF interpreter (the loader) and every library
// named by DT_NEEDED, transitively, read from the host's copies beside its
// loader (Debian's /usr/lib/<multiarch>, i.e. the libc6 package). They
// go to lib/<multiarch>/ in the image, which Debian's loader searches
// without an ld.so.cache, and the interpreter's path (e.g.
// /lib64/ld-linux-x86-64.so.2) becomes a symlink to the loader there.
// Static programs need nothing.
func sharedLibraries(elves ...[]byte) ([]File, error) {
	var interp string
	var queue []string
	for _, data := range elves {
		f, err := elf.NewFile(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("not an ELF program: %w", err)
		}
		in, err := interpreter(f)
		if err != nil {
			return nil, err
		}
		needed, err := f.ImportedLibraries()
		if err != nil {
			return nil, err
		}
		f.Close()
		if in == "" {
			continue // static
		}
		if interp != "" && interp != in {
			return nil, fmt.Errorf("programs ask for two loaders, %s and %s", interp, in)
		}
		interp = in
		queue = append(queue, needed...)
	}
	if interp == "" {
		return nil, nil
	}
	hostLoader, err := filepath.EvalSymlinks(interp)
	if err != nil {
		return nil, fmt.Errorf("the programs' loader %s is not on this host: %w", interp, err)
	}
	hostDir := filepath.Dir(hostLoader)
	imageDir := path.Join("lib", filepath.Base(hostDir)) // lib/x86_64-linux-gnu
	files := []File{{Path: "lib", Mode: 0o755, Dir: true}, {Path: imageDir, Mode: 0o755, Dir: true}}
	added := map[string]bool{}
	add := func(name string) ([]string, error) {
		if added[name] {
			return nil, nil
		}
		added[name] = true
		data, err := os.ReadFile(filepath.Join(hostDir, name))
		if err != nil {
			return nil, fmt.Errorf("library %s (from Debian's libc6, beside %s): %w", name, hostLoader, err)
		}
		files = append(files, File{Path: path.Join(imageDir, name), Mode: 0o755, Data: data})
		f, err := elf.NewFile(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		defer f.Close()
		return f.ImportedLibraries()
	}
	if _, err := add(filepath.Base(hostLoader)); err != nil {
		return nil, err
	}
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		if strings.Contains(name, "/") {
			return nil, fmt.Errorf("library %s named by path is not supported", name)
		}
		more, err := add(name)
		if err != nil {
			return nil, err
		}
		queue = append(queue, more...)
	}
	// The interpreter's own path, when it is not the copy just placed.
	rel := strings.TrimPrefix(path.Clean(interp), "/")
	if rel != path.Join(imageDir, filepath.Base(hostLoader)) {
		for d := path.Dir(rel); d != "." && d != "lib"; d = path.Dir(d) {
			files = append(files, File{Path: d, Mode: 0o755, Dir: true})
		}
		files = append(files, File{Path: rel, Mode: 0o777, Linkname: "/" + path.Join(imageDir, filepath.Base(hostLoader))})
	}
	sort.SliceStable(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, nil
}

// interpreter returns the program's PT_INTERP path, "" for a static one.
func interpreter(f *elf.File) (string, error) {
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		b := make([]byte, p.Filesz)
		if _, err := p.ReadAt(b, 0); err != nil {
			return "", fmt.Errorf("reading PT_INTERP: %w", err)
		}
		return string(bytes.TrimRight(b, "\x00")), nil
	}
	return "", nil
}

// HostPrograms returns programs of this host placed in an image (image
// path → host path, e.g. "bin/sh" → "/bin/bash"), with every shared
// library they load, as the busybox image carries coreutils' printenv.
func HostPrograms(programs map[string]string) ([]File, error) {
	paths := make([]string, 0, len(programs))
	for p := range programs {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var files []File
	var elves [][]byte
	for _, p := range paths {
		data, err := os.ReadFile(programs[p])
		if err != nil {
			return nil, err
		}
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			files = append(files, File{Path: d, Mode: 0o755, Dir: true})
		}
		files = append(files, File{Path: p, Mode: 0o755, Data: data})
		elves = append(elves, data)
	}
	libs, err := sharedLibraries(elves...)
	if err != nil {
		return nil, err
	}
	return dedupDirs(append(files, libs...)), nil
}
