package containerd

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/containerd/containerd/mount"
)

func TestReadCgroup(t *testing.T) {
	write := func(t *testing.T, root string, files map[string]string) {
		for name, content := range files {
			p := filepath.Join(root, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	rel := "minik/ns/c1"
	tests := []struct {
		name  string
		files map[string]string
		want  cgroupStats
	}{
		{"cgroup v2 reads memory.current, inactive_file, pids.current and cpu.stat's usage_usec in nanoseconds",
			map[string]string{
				rel + "/memory.current": "10485760\n",
				rel + "/memory.stat":    "anon 100\ninactive_file 4194304\nactive_file 10\n",
				rel + "/pids.current":   "3\n",
				rel + "/cpu.stat":       "usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\n",
				rel + "/cgroup.events":  "populated 1\nfrozen 0\n",
			},
			cgroupStats{workingSet: 6291456, memory: 10485760, tasks: 3, cpuNanos: 2_500_000_000, populated: true}},
		{"a cgroup v2 with no process left is not populated",
			map[string]string{
				rel + "/memory.current": "4096\n",
				rel + "/cgroup.events":  "populated 0\nfrozen 0\n",
			},
			cgroupStats{workingSet: 4096, memory: 4096}},
		{"cgroup v1 reads each controller's hierarchy, cpuacct.usage already in nanoseconds",
			map[string]string{
				"memory/" + rel + "/memory.usage_in_bytes": "8388608",
				"memory/" + rel + "/memory.stat":           "cache 10\ntotal_inactive_file 1048576\n",
				"pids/" + rel + "/pids.current":            "1",
				"cpuacct/" + rel + "/cpuacct.usage":        "123456789",
				"memory/" + rel + "/cgroup.procs":          "4242\n",
			},
			cgroupStats{workingSet: 7340032, memory: 8388608, tasks: 1, cpuNanos: 123456789, populated: true}},
		{"cgroup v1 with cpu and cpuacct mounted together",
			map[string]string{
				"memory/" + rel + "/memory.usage_in_bytes": "100",
				"cpu,cpuacct/" + rel + "/cpuacct.usage":    "42",
			},
			cgroupStats{workingSet: 100, memory: 100, cpuNanos: 42}},
		{"an inactive file count above usage gives no working set rather than a wrapped number",
			map[string]string{
				rel + "/memory.current": "100",
				rel + "/memory.stat":    "inactive_file 200\n",
			},
			cgroupStats{memory: 100}},
		{"a removed cgroup reads as zero", map[string]string{}, cgroupStats{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			write(t, root, tt.files)
			if got := readCgroup(root, rel); got != tt.want {
				t.Errorf("readCgroup = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestWritableDir(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mounts []mount.Mount
		want   string
	}{
		{"an overlay writes to its upper directory",
			[]mount.Mount{{Type: "overlay", Source: "overlay", Options: []string{"index=off", "workdir=/s/7/work", "upperdir=/s/7/fs", "lowerdir=/s/3/fs"}}}, "/s/7/fs"},
		{"a layer with no parent is a bind mount of its directory",
			[]mount.Mount{{Type: "bind", Source: "/s/8/fs", Options: []string{"rw", "rbind"}}}, "/s/8/fs"},
		{"an overlay without an upper directory (a view) names none",
			[]mount.Mount{{Type: "overlay", Source: "overlay", Options: []string{"lowerdir=/s/3/fs:/s/2/fs"}}}, ""},
		{"another snapshotter's mounts name none",
			[]mount.Mount{{Type: "ext4", Source: "/dev/loop3"}}, ""},
		{"several mounts name none", []mount.Mount{{Type: "bind", Source: "/a"}, {Type: "bind", Source: "/b"}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := writableDir(tc.mounts); got != tc.want {
				t.Errorf("writableDir = %q, want %q", got, tc.want)
			}
		})
	}
}
