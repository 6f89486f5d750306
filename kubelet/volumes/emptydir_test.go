package volumes

import (
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"minik/kubelet/internal/podtest"
)

func TestMemoryBackedEmptyDirSize(t *testing.T) {
	q := func(s string) *resource.Quantity { v := resource.MustParse(s); return &v }
	limited := func(limits ...string) *corev1.Pod {
		p := podtest.MakePod().Obj()
		for i, l := range limits {
			c := corev1.Container{Name: string(rune('a' + i))}
			if l != "" {
				c.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(l)}
			}
			p.Spec.Containers = append(p.Spec.Containers, c)
		}
		return p
	}
	withInit := limited("32Mi")
	withInit.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{
		Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")}}}}
	for _, tc := range []struct {
		name        string
		pod         *corev1.Pod
		sizeLimit   *resource.Quantity
		allocatable *resource.Quantity
		want        int64
	}{
		{"without limits it is the node's allocatable memory", limited(""), nil, q("8Gi"), 8 << 30},
		{"the sizeLimit when it is the smallest", limited("1Gi"), q("16Mi"), q("8Gi"), 16 << 20},
		{"the pod's memory limit, the sum of its containers'", limited("64Mi", "32Mi"), nil, q("8Gi"), 96 << 20},
		{"the pod's limit when the sizeLimit is larger", limited("64Mi"), q("1Gi"), q("8Gi"), 64 << 20},
		{"no pod limit when one container has none", limited("64Mi", ""), q("1Gi"), q("8Gi"), 1 << 30},
		{"an init container's larger limit is the pod's", withInit, nil, q("8Gi"), 128 << 20},
		{"a sizeLimit above allocatable is capped by it", limited(""), q("16Gi"), q("8Gi"), 8 << 30},
		{"nothing known leaves the kernel's default", limited(""), nil, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := memoryBackedSize(tc.pod, &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: tc.sizeLimit}, tc.allocatable); got != tc.want {
				t.Errorf("size %d, want %d", got, tc.want)
			}
		})
	}
}

// TestMemoryVolumeOfAHollowNodeIsAPlainDirectory: with NoMounts (hollow
// nodes) a memory-backed volume is a directory, never a mount; a real
// node (as root) mounts a tmpfs there, which Remove takes away.
func TestMemoryVolumeOfAHollowNodeIsAPlainDirectory(t *testing.T) {
	v := &corev1.Volume{Name: "m", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}}
	pod := podtest.MakePod().Obj()
	for _, tc := range []struct {
		name      string
		noMounts  bool
		wantMount bool
	}{
		{"hollow", true, false},
		{"real", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.wantMount && (testing.Short() || os.Geteuid() != 0) {
				t.Skip("mounts a tmpfs: needs root; skipped under -short")
			}
			root := t.TempDir()
			m := &Manager{cfg: Config{NoMounts: tc.noMounts, Node: func() *corev1.Node { return nil },
				PodDir: func(uid string) string { return filepath.Join(root, uid) }}}
			dir := filepath.Join(root, string(pod.UID), "volumes", v.Name)
			if err := m.setUpEmptyDir(pod, v, dir); err != nil {
				t.Fatal(err)
			}
			if mounted, err := isMountPoint(dir); err != nil || mounted != tc.wantMount {
				t.Fatalf("mount point = %v (%v), want %v", mounted, err, tc.wantMount)
			}
			if err := m.Remove(string(pod.UID)); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Fatalf("volume dir after Remove: %v, want gone", err)
			}
		})
	}
}
