// Package volumes sets up a pod's volumes on the node (emptyDir, tmpfs
// for secrets and projected volumes, config maps, downward API, host
// paths, claims), refreshes their service-account tokens, tears them
// down, and reclaims the node's local-path volumes. See README.md.
package volumes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"minik/client"
	"minik/internal/volumeutil"
	"minik/kubelet/fieldpath"
	"minik/kubelet/podstep"
)

// Config is what the volume manager needs from the kubelet.
type Config struct {
	NodeName string
	// NodeIP is the pod's hostIP in downward API files.
	NodeIP string
	// RootDir holds the local-path volumes (RootDir/local-path/PV).
	RootDir string
	// PodDir is a pod's directory: its volumes are in PodDir(uid)/volumes.
	PodDir func(uid string) string
	// Node is the kubelet's Node (nil before registration): its
	// allocatable memory sizes memory volumes, its labels select local
	// volumes.
	Node   func() *corev1.Node
	Client *client.Client
	Clock  clock.Clock
	Log    *slog.Logger
	// NoMounts keeps memory-backed volumes as plain directories (hollow
	// nodes: kubelet.Config.NoVolumeMounts).
	NoMounts bool
	// ConfigMaps and Secrets read the objects the volumes name (the
	// kubelet's watch-based caches, package objectcache); nil: a GET
	// through Client.
	ConfigMaps func(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error)
	Secrets    func(ctx context.Context, namespace, name string) (*corev1.Secret, error)
}

// Manager sets up and tears down the volumes of a node's pods.
type Manager struct {
	cfg Config
	// tokens are the service-account tokens of projected volumes.
	tokens *tokenManager
}

func (m *Manager) configMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	if m.cfg.ConfigMaps != nil {
		return m.cfg.ConfigMaps(ctx, namespace, name)
	}
	return m.cfg.Client.ConfigMaps().Get(ctx, namespace, name, metav1.GetOptions{})
}

func (m *Manager) secret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	if m.cfg.Secrets != nil {
		return m.cfg.Secrets(ctx, namespace, name)
	}
	return m.cfg.Client.Secrets().Get(ctx, namespace, name, metav1.GetOptions{})
}

// allocatable is the node's allocatable, nil before it registered: the
// downward API's value of a limit the container does not set.
func (m *Manager) allocatable() corev1.ResourceList {
	if node := m.cfg.Node(); node != nil {
		return node.Status.Allocatable
	}
	return nil
}

// New returns a Manager that gets tokens through cfg.Client.
func New(cfg Config) *Manager {
	return &Manager{cfg: cfg, tokens: newTokenManager(requestTokenFrom(func(ctx context.Context, method, path string, body, out any) error {
		return cfg.Client.Do(ctx, method, path, nil, body, out)
	}))}
}

// ForgetPod drops the pod's cached tokens, once it is gone.
func (m *Manager) ForgetPod(uid types.UID) { m.tokens.forgetPod(uid) }

// SetUp creates or refreshes the pod's volumes on disk. It returns when
// the projected tokens in them must be replaced (zero: none).
func (m *Manager) SetUp(ctx context.Context, pod *corev1.Pod, podIP string) (time.Time, error) {
	var refreshAt time.Time
	for i := range pod.Spec.Volumes {
		at, err := m.setUpVolume(ctx, pod, &pod.Spec.Volumes[i], podIP)
		if err != nil {
			return time.Time{}, err
		}
		refreshAt = earliest(refreshAt, at)
	}
	return refreshAt, nil
}

// RefreshTokens rewrites the projected volumes that hold a
// service-account token, with a fresh token when the old one is due; it
// returns when to come back.
func (m *Manager) RefreshTokens(ctx context.Context, pod *corev1.Pod, podIP string) (time.Time, error) {
	var refreshAt time.Time
	for i := range pod.Spec.Volumes {
		if !podstep.HasTokenProjection(&pod.Spec.Volumes[i]) {
			continue
		}
		at, err := m.setUpVolume(ctx, pod, &pod.Spec.Volumes[i], podIP)
		if err != nil {
			return time.Time{}, err
		}
		refreshAt = earliest(refreshAt, at)
	}
	return refreshAt, nil
}

// HostPath is where the volume's files are on the node: a host path's
// own, a claim's directory (a *podstep.MountError while it is not set up),
// every other one under the pod's directory.
func (m *Manager) HostPath(pod *corev1.Pod, v *corev1.Volume) (string, error) {
	if v.HostPath != nil {
		return v.HostPath.Path, nil
	}
	host := filepath.Join(m.cfg.PodDir(string(pod.UID)), "volumes", v.Name)
	if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
		// The link setUpVolume made; the runtime gets the real path.
		real, err := filepath.EvalSymlinks(host)
		if err != nil {
			return "", &podstep.MountError{Msg: fmt.Sprintf("volume %q is not mounted: %v", v.Name, err)}
		}
		return real, nil
	}
	return host, nil
}

// earliest is the earlier of two times, zero meaning never.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// setUpVolume writes one volume under the pod's directory; for a
// projected volume with a token it returns when the token is due.
func (m *Manager) setUpVolume(ctx context.Context, pod *corev1.Pod, vol *corev1.Volume, podIP string) (time.Time, error) {
	v := *vol
	target := filepath.Join(m.cfg.PodDir(string(pod.UID)), "volumes", v.Name)
	switch {
	case v.Projected != nil:
		files, refreshAt, err := projectVolume(ctx, managerSources{m}, pod, v.Projected, podIP, m.cfg.NodeIP, m.cfg.Clock.Now())
		if err != nil {
			return time.Time{}, err
		}
		// On a tmpfs, as the kubelet keeps projected volumes: they hold
		// tokens and secrets.
		if err := m.setUpSecretDir(pod, target); err != nil {
			return time.Time{}, err
		}
		return refreshAt, files.write(target, v.Projected.DefaultMode)
	case v.EmptyDir != nil:
		if err := m.setUpEmptyDir(pod, &v, target); err != nil {
			return time.Time{}, err
		}
	case v.PersistentVolumeClaim != nil || v.Ephemeral != nil:
		path, err := m.claimVolumePath(ctx, pod, volumeutil.ClaimVolumeName(pod, &v))
		if err != nil {
			var me *podstep.MountError
			if errors.As(err, &me) {
				me.Msg = fmt.Sprintf("MountVolume.SetUp failed for volume %q : %s", v.Name, me.Msg)
			}
			return time.Time{}, err
		}
		if err := linkVolume(target, path); err != nil {
			return time.Time{}, err
		}
	case v.HostPath != nil:
		t := corev1.HostPathUnset
		if v.HostPath.Type != nil {
			t = *v.HostPath.Type
		}
		switch t {
		case corev1.HostPathDirectoryOrCreate:
			if err := os.MkdirAll(v.HostPath.Path, 0o755); err != nil {
				return time.Time{}, err
			}
		case corev1.HostPathFileOrCreate:
			if _, err := os.Stat(v.HostPath.Path); errors.Is(err, os.ErrNotExist) {
				if err := os.WriteFile(v.HostPath.Path, nil, 0o644); err != nil {
					return time.Time{}, err
				}
			}
		case corev1.HostPathDirectory, corev1.HostPathFile, corev1.HostPathSocket:
			if _, err := os.Stat(v.HostPath.Path); err != nil {
				return time.Time{}, podstep.ConfigErrorf("hostPath %s: %v", v.HostPath.Path, err)
			}
		}
	case v.ConfigMap != nil:
		cm, err := m.configMap(ctx, pod.Namespace, v.ConfigMap.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && v.ConfigMap.Optional != nil && *v.ConfigMap.Optional {
				cm = &corev1.ConfigMap{}
			} else {
				return time.Time{}, podstep.ConfigErrorf("configmap %q not found", v.ConfigMap.Name)
			}
		}
		err = writeVolumeFiles(target, configMapBytes(cm), v.ConfigMap.Items, v.ConfigMap.DefaultMode)
		if err := keyError(err, v.ConfigMap.Optional, "configmap references non-existent config key: %s"); err != nil {
			return time.Time{}, err
		}
	case v.Secret != nil:
		s, err := m.secret(ctx, pod.Namespace, v.Secret.SecretName)
		if err != nil {
			if apierrors.IsNotFound(err) && v.Secret.Optional != nil && *v.Secret.Optional {
				s = &corev1.Secret{}
			} else {
				return time.Time{}, podstep.ConfigErrorf("secret %q not found", v.Secret.SecretName)
			}
		}
		if err := m.setUpSecretDir(pod, target); err != nil {
			return time.Time{}, err
		}
		err = writeVolumeFiles(target, s.Data, v.Secret.Items, v.Secret.DefaultMode)
		if err := keyError(err, v.Secret.Optional, "references non-existent secret key: %s"); err != nil {
			return time.Time{}, err
		}
	case v.DownwardAPI != nil:
		data, items, err := downwardAPIFiles(pod, v.DownwardAPI.Items, podIP, m.cfg.NodeIP, m.allocatable())
		if err != nil {
			return time.Time{}, err
		}
		if err := writeVolumeFiles(target, data, items, v.DownwardAPI.DefaultMode); err != nil {
			return time.Time{}, err
		}
	default:
		return time.Time{}, podstep.ConfigErrorf("volume %q: unsupported volume type", v.Name)
	}
	return time.Time{}, nil
}

// configMapBytes is a ConfigMap's data and binary data as files' contents.
func configMapBytes(cm *corev1.ConfigMap) map[string][]byte {
	data := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for key, val := range cm.Data {
		data[key] = []byte(val)
	}
	for key, val := range cm.BinaryData {
		data[key] = val
	}
	return data
}

// downwardAPIFiles resolves downward API items into files' contents and
// the items that write them.
func downwardAPIFiles(pod *corev1.Pod, files []corev1.DownwardAPIVolumeFile, podIP, nodeIP string, allocatable corev1.ResourceList) (map[string][]byte, []corev1.KeyToPath, error) {
	data := map[string][]byte{}
	var items []corev1.KeyToPath
	for _, it := range files {
		var val string
		var err error
		switch {
		case it.FieldRef != nil:
			val, err = fieldpath.FieldValue(pod, it.FieldRef.FieldPath, podIP, nodeIP)
		case it.ResourceFieldRef != nil:
			val, err = fieldpath.ResourceValue(pod, &pod.Spec.Containers[0], it.ResourceFieldRef, allocatable)
		}
		if err != nil {
			return nil, nil, err
		}
		data[it.Path] = []byte(val)
		items = append(items, corev1.KeyToPath{Key: it.Path, Path: it.Path, Mode: it.Mode})
	}
	return data, items, nil
}

// missingKeyError is an item's key that the data lacks.
type missingKeyError string

func (e missingKeyError) Error() string { return string(e) }

// keyError is writeVolumeFiles' error as the kubelet has it: a key the
// volume's items name but its source lacks fails the volume (format
// says so, with the key), unless the volume is optional.
func keyError(err error, optional *bool, format string) error {
	var missing missingKeyError
	switch {
	case !errors.As(err, &missing):
		return err
	case optional != nil && *optional:
		return nil
	}
	return podstep.ConfigErrorf(format, string(missing))
}

// writeVolumeFiles writes data (all keys, or only items) into dir. An
// item whose key the data lacks is skipped, and reported at the end as a
// missingKeyError (an error unless the volume is optional, as in the
// kubelet).
func writeVolumeFiles(dir string, data map[string][]byte, items []corev1.KeyToPath, defaultMode *int32) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	mode := os.FileMode(0o644)
	if defaultMode != nil {
		mode = os.FileMode(*defaultMode)
	}
	if len(items) == 0 {
		for key := range data {
			items = append(items, corev1.KeyToPath{Key: key, Path: key})
		}
	}
	var missing error
	for _, it := range items {
		val, ok := data[it.Key]
		if !ok {
			if missing == nil {
				missing = missingKeyError(it.Key)
			}
			continue
		}
		m := mode
		if it.Mode != nil {
			m = os.FileMode(*it.Mode)
		}
		p := filepath.Join(dir, filepath.Clean("/"+it.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		tmp := p + ".tmp"
		if err := os.WriteFile(tmp, val, m); err != nil {
			return err
		}
		_ = os.Chmod(tmp, m)
		if err := os.Rename(tmp, p); err != nil {
			return err
		}
	}
	return missing
}
