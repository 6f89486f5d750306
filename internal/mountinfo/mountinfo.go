// Package mountinfo reads the mount points of /proc/PID/mountinfo.
package mountinfo

import (
	"os"
	"strings"
)

// Self returns the mount points of this process's mount namespace.
func Self() ([]string, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	return Points(string(data)), nil
}

// Points returns the mount point of each line of mountinfo (the text of
// /proc/PID/mountinfo: "36 35 98:0 /mnt1 /mnt/point rw … - ext3 …"), with
// its octal escapes undone.
func Points(mountinfo string) []string {
	var out []string
	for _, line := range strings.Split(mountinfo, "\n") {
		if f := strings.Fields(line); len(f) >= 5 {
			out = append(out, unescape(f[4]))
		}
	}
	return out
}

// unescape undoes mountinfo's octal escapes (\040 for a space...).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			v := 0
			ok := true
			for _, c := range s[i+1 : i+4] {
				if c < '0' || c > '7' {
					ok = false
					break
				}
				v = v*8 + int(c-'0')
			}
			if ok {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
