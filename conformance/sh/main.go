// Command sh is the /bin/sh of the conformance harness's busybox image:
// busybox's ash, as in the suite's image, except when the environment
// holds a variable whose name is not a shell identifier (`data-1`, which
// envFrom may set): Debian's busybox 1.35 ash drops those from what it
// passes on, where the suite's busybox 1.37 keeps them; bash keeps them
// too, so it runs then. Messages stay ash's otherwise ("/bin/sh: can't
// create /file: Read-only file system", which a spec expects).
package main

import (
	"os"
	"strings"
	"syscall"
)

const (
	busybox = "/bin/busybox"
	bash    = "/usr/bin/bash"
)

func main() {
	prog, argv := busybox, os.Args // busybox runs ash as argv[0] names it: sh
	if !allIdentifiers(os.Environ()) {
		prog = bash
		argv = append([]string{"sh"}, os.Args[1:]...) // bash as sh: POSIX mode
	}
	err := syscall.Exec(prog, argv, os.Environ())
	os.Stderr.WriteString("sh: " + prog + ": " + err.Error() + "\n")
	os.Exit(127)
}

// allIdentifiers reports whether every variable of env has a name ash
// keeps: a letter or '_', then letters, digits or '_'.
func allIdentifiers(env []string) bool {
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !isIdentifier(name) {
			return false
		}
	}
	return true
}

func isIdentifier(s string) bool {
	for i, r := range s {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return s != ""
}
