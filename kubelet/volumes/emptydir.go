package volumes

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"minik/kubelet/podstep"
)

// setUpEmptyDir makes an emptyDir volume at dir: a directory on the
// node's disk, or with medium Memory a tmpfs of memoryBackedSize.
func (m *Manager) setUpEmptyDir(pod *corev1.Pod, v *corev1.Volume, dir string) error {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	switch v.EmptyDir.Medium {
	case corev1.StorageMediumDefault:
		return os.Chmod(dir, 0o777)
	case corev1.StorageMediumMemory:
		return m.mountMemoryVolume(pod, v.EmptyDir, dir)
	}
	return podstep.ConfigErrorf("volume %q: emptyDir medium %q is not supported", v.Name, v.EmptyDir.Medium)
}

// setUpSecretDir makes the directory of a secret volume a tmpfs, sized
// as a memory-backed emptyDir without a sizeLimit: as in the kubelet,
// secrets are never written to the node's disk.
func (m *Manager) setUpSecretDir(pod *corev1.Pod, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return m.mountMemoryVolume(pod, &corev1.EmptyDirVolumeSource{}, dir)
}

// mountMemoryVolume mounts a tmpfs of memoryBackedSize at dir, unless
// one is there already: a pod's volumes outlive a kubelet restart.
func (m *Manager) mountMemoryVolume(pod *corev1.Pod, ed *corev1.EmptyDirVolumeSource, dir string) error {
	if m.cfg.NoMounts {
		return nil
	}
	if mounted, err := isMountPoint(dir); err != nil || mounted {
		return err
	}
	var allocatable *resource.Quantity
	if node := m.cfg.Node(); node != nil {
		allocatable = node.Status.Allocatable.Memory()
	}
	return mountTmpfs(dir, memoryBackedSize(pod, ed, allocatable))
}

// memoryBackedSize is the size of a memory-backed emptyDir, as in the
// kubelet: the smallest of the node's allocatable memory, the pod's
// memory limit (when every container has one) and the volume's
// sizeLimit. 0 leaves the kernel's default (half of RAM).
func memoryBackedSize(pod *corev1.Pod, ed *corev1.EmptyDirVolumeSource, allocatable *resource.Quantity) int64 {
	size := int64(0)
	if allocatable != nil {
		size = allocatable.Value()
	}
	smaller := func(v int64) {
		if v > 0 && (size == 0 || v <= size) {
			size = v
		}
	}
	smaller(podMemoryLimit(pod))
	if ed.SizeLimit != nil {
		smaller(ed.SizeLimit.Value())
	}
	return size
}

// podMemoryLimit is the pod's memory limit, 0 when a container has none:
// the app containers' sum, or the largest init container's when larger.
func podMemoryLimit(pod *corev1.Pod) int64 {
	var sum int64
	for _, c := range pod.Spec.Containers {
		lim := c.Resources.Limits.Memory().Value()
		if lim == 0 {
			return 0
		}
		sum += lim
	}
	for _, c := range pod.Spec.InitContainers {
		sum = max(sum, c.Resources.Limits.Memory().Value())
	}
	return sum
}

// mountTmpfs mounts a tmpfs of size bytes (0: the kernel's default) at
// dir, with noswap where the kernel has it (6.4 and later), as the kubelet
// does, so that a pod's memory volume is never written to swap.
func mountTmpfs(dir string, size int64) error {
	opts := ""
	if size > 0 {
		opts = fmt.Sprintf("size=%d", size)
	}
	withNoswap := "noswap"
	if opts != "" {
		withNoswap = opts + ",noswap"
	}
	err := syscall.Mount("tmpfs", dir, "tmpfs", 0, withNoswap)
	if errors.Is(err, syscall.EINVAL) {
		err = syscall.Mount("tmpfs", dir, "tmpfs", 0, opts)
	}
	if err != nil {
		return fmt.Errorf("mounting tmpfs at %s: %w", dir, err)
	}
	return nil
}

// isMountPoint reports whether dir is on another filesystem than its
// parent.
func isMountPoint(dir string) (bool, error) {
	var st, parent syscall.Stat_t
	if err := syscall.Lstat(dir, &st); err != nil {
		return false, err
	}
	if err := syscall.Lstat(filepath.Dir(dir), &parent); err != nil {
		return false, err
	}
	return st.Dev != parent.Dev, nil
}

// Remove unmounts the pod's memory-backed volumes and removes its
// volume directories.
func (m *Manager) Remove(uid string) error {
	dir := filepath.Join(m.cfg.PodDir(uid), "volumes")
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if mounted, err := isMountPoint(p); err == nil && mounted {
			if err := syscall.Unmount(p, 0); err != nil {
				return fmt.Errorf("unmounting %s: %w", p, err)
			}
		}
	}
	return os.RemoveAll(dir)
}
