package volumes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/internal/volumeutil"
	"minik/kubelet/podstep"
)

// The kubelet's half of persistent volumes: it resolves a pod's claim to
// its volume and makes the volume's directory available (a local-path
// volume's directory is created here, on first mount), and it is the
// deleter of the local-path volumes of its node: once such a volume is
// Released with reclaim Delete, it removes the directory, then the object.
//
//	pod volume ─▶ claim (GET) ─▶ bound? no ─▶ MountError "PVC is not bound" (FailedMount, retried)
//	                               │yes
//	                               ▼
//	           volume (GET) ─▶ node affinity matches? ─▶ hostPath / local path ─▶ pods/UID/volumes/NAME → path (symlink)
//
//	ReclaimLoop (every localPathReclaimPeriod): for each dir in RootDir/local-path/
//	           volume (GET) Released|Failed, reclaim Delete, ours ─▶ rm -rf dir ─▶ DELETE volume

// localPathReclaimPeriod is how often Released local-path volumes are looked for.
const localPathReclaimPeriod = 5 * time.Second

// LocalPathDir is where this kubelet keeps local-path volumes, one
// directory per PersistentVolume: RootDir/local-path/PV.
func (m *Manager) LocalPathDir() string {
	return filepath.Join(m.cfg.RootDir, volumeutil.LocalPathDir)
}

// claimVolumePath resolves a pod's claim to the directory on this node
// that backs it, creating a local-path volume's directory.
func (m *Manager) claimVolumePath(ctx context.Context, pod *corev1.Pod, claimName string) (string, error) {
	key := pod.Namespace + "/" + claimName
	pvc, err := m.cfg.Client.PersistentVolumeClaims().Get(ctx, pod.Namespace, claimName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "", &podstep.MountError{Msg: fmt.Sprintf("error processing PVC %s: PVC %s not found", key, key)}
	case err != nil:
		return "", err
	case pvc.DeletionTimestamp != nil:
		return "", &podstep.MountError{Msg: fmt.Sprintf("error processing PVC %s: PVC is being deleted", key)}
	case pvc.Spec.VolumeName == "" || pvc.Status.Phase != corev1.ClaimBound:
		return "", &podstep.MountError{Msg: fmt.Sprintf("error processing PVC %s: PVC is not bound", key)}
	}
	pv, err := m.cfg.Client.PersistentVolumes().Get(ctx, "", pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return "", &podstep.MountError{Msg: fmt.Sprintf("error processing PVC %s: getting volume %s: %v", key, pvc.Spec.VolumeName, err)}
	}
	if node := m.cfg.Node(); node != nil && !volumeutil.NodeAffinityMatches(pv, node) {
		return "", &podstep.MountError{Msg: fmt.Sprintf("volume %s has node affinity that does not match node %s", pv.Name, node.Name)}
	}
	switch {
	case pv.Spec.HostPath != nil:
		p := pv.Spec.HostPath.Path
		if t := pv.Spec.HostPath.Type; t != nil && *t == corev1.HostPathDirectoryOrCreate {
			return p, os.MkdirAll(p, 0o755)
		}
		if _, err := os.Stat(p); err != nil {
			return "", &podstep.MountError{Msg: fmt.Sprintf("volume %s: hostPath %s: %v", pv.Name, p, err)}
		}
		return p, nil
	case pv.Spec.Local != nil:
		p := filepath.Clean(pv.Spec.Local.Path)
		if volumeutil.LocalPathNode(pv) == m.cfg.NodeName && filepath.Dir(p) == m.LocalPathDir() {
			// Everyone may write, as in k3s' local-path provisioner: the
			// pod's user is not known when the volume is made.
			if err := os.MkdirAll(p, 0o777); err != nil {
				return "", err
			}
			return p, os.Chmod(p, 0o777)
		}
		if _, err := os.Stat(p); err != nil {
			return "", &podstep.MountError{Msg: fmt.Sprintf("volume %s: local path %s: %v", pv.Name, p, err)}
		}
		return p, nil
	}
	return "", podstep.ConfigErrorf("volume %s: only hostPath and local persistent volumes can be mounted on this node", pv.Name)
}

// linkVolume points pods/UID/volumes/NAME at the volume's directory, so
// that containerMounts finds it where it finds every other volume.
func linkVolume(target, path string) error {
	if cur, err := os.Readlink(target); err == nil && cur == path {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	_ = os.Remove(target) // a stale link
	return os.Symlink(path, target)
}

// ReclaimLoop deletes the local-path volumes of this node once they are
// Released (or Failed) with reclaim Delete: first the directory, then the
// object. A directory whose volume is gone is left: with Retain the
// administrator deletes the object and keeps the data.
func (m *Manager) ReclaimLoop(ctx context.Context) error {
	for {
		m.reclaimLocalPath(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-m.cfg.Clock.After(localPathReclaimPeriod):
		}
	}
}

func (m *Manager) reclaimLocalPath(ctx context.Context) {
	entries, err := os.ReadDir(m.LocalPathDir())
	if err != nil {
		return // no local-path volume was ever mounted here
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		pv, err := m.cfg.Client.PersistentVolumes().Get(ctx, "", e.Name(), metav1.GetOptions{})
		if err != nil {
			continue
		}
		if !reclaimable(pv, m.cfg.NodeName, filepath.Join(m.LocalPathDir(), e.Name())) {
			continue
		}
		dir := filepath.Join(m.LocalPathDir(), e.Name())
		if err := os.RemoveAll(dir); err != nil {
			m.cfg.Log.Warn("removing a released local-path volume", "volume", pv.Name, "dir", dir, "err", err)
			continue
		}
		err = m.cfg.Client.PersistentVolumes().Delete(ctx, "", pv.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pv.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			m.cfg.Log.Warn("deleting a released local-path volume", "volume", pv.Name, "err", err)
			continue
		}
		m.cfg.Log.Info("deleted released local-path volume", "volume", pv.Name, "dir", dir)
	}
}

// reclaimable reports whether this node should delete pv, whose
// directory is dir: a local-path volume of this node, at dir, Released or
// Failed, with reclaim Delete.
func reclaimable(pv *corev1.PersistentVolume, node, dir string) bool {
	return volumeutil.LocalPathNode(pv) == node && pv.Spec.Local != nil && filepath.Clean(pv.Spec.Local.Path) == dir &&
		pv.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimDelete &&
		(pv.Status.Phase == corev1.VolumeReleased || pv.Status.Phase == corev1.VolumeFailed)
}

// ResolveSubPath returns the host path of sub inside the volume at root,
// creating it as a directory if missing, as the kubelet does. It refuses
// what would escape the volume: an absolute path, a ".." element, or a
// symlink (anywhere on the way) that points outside root.
func ResolveSubPath(root, sub string) (string, error) {
	if filepath.IsAbs(sub) {
		return "", podstep.ConfigErrorf("subPath %q must be a relative path", sub)
	}
	for _, part := range strings.Split(filepath.ToSlash(sub), "/") {
		if part == ".." {
			return "", podstep.ConfigErrorf("subPath %q must not contain '..'", sub)
		}
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", err
	}
	p := filepath.Join(realRoot, sub)
	if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
		// Create only below a checked parent: walk down, resolving each
		// existing element, so a symlink cannot lead the mkdir outside.
		if err := mkdirBelow(realRoot, sub); err != nil {
			return "", err
		}
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", err
	}
	if real != realRoot && !strings.HasPrefix(real, realRoot+string(filepath.Separator)) {
		return "", podstep.ConfigErrorf("subPath %q resolves to %s, outside the volume", sub, real)
	}
	return real, nil
}

// mkdirBelow creates the elements of sub under root one by one, checking
// after each existing one that it still resolves inside root.
func mkdirBelow(root, sub string) error {
	cur := root
	for _, part := range strings.Split(filepath.ToSlash(filepath.Clean(sub)), "/") {
		if part == "" || part == "." {
			continue
		}
		next := filepath.Join(cur, part)
		if _, err := os.Lstat(next); errors.Is(err, os.ErrNotExist) {
			if err := os.Mkdir(next, 0o750); err != nil && !errors.Is(err, os.ErrExist) {
				return err
			}
		}
		real, err := filepath.EvalSymlinks(next)
		if err != nil {
			return err
		}
		if real != root && !strings.HasPrefix(real, root+string(filepath.Separator)) {
			return podstep.ConfigErrorf("subPath %q resolves to %s, outside the volume", sub, real)
		}
		cur = real
	}
	return nil
}
