package volumes

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"minik/kubelet/podstep"
)

// Projected volumes, as the kubelet's projected plugin makes them: the
// files of several sources (serviceAccountToken, configMap, secret,
// downwardAPI) in one directory, each source's items with their own
// mode or the volume's defaultMode (0644 unless set).
//
//	sources ─▶ projectVolume (reads through volumeSources) ─▶ projectedFiles ─▶ writeVolumeFiles (tmpfs)

// volumeSources is where a projected volume's contents come from: the
// apiserver, or a fake in tests.
type volumeSources interface {
	configMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error)
	secret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
	// token returns the pod's service-account token and when it is due.
	token(ctx context.Context, pod *corev1.Pod, audience string, seconds int64, now time.Time) (string, time.Time, error)
	// allocatable is the node's, for limits the containers do not set.
	allocatable() corev1.ResourceList
}

// managerSources reads through the kubelet's client and token manager.
type managerSources struct{ m *Manager }

func (s managerSources) configMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	return s.m.configMap(ctx, namespace, name)
}

func (s managerSources) secret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	return s.m.secret(ctx, namespace, name)
}

func (s managerSources) token(ctx context.Context, pod *corev1.Pod, audience string, seconds int64, now time.Time) (string, time.Time, error) {
	return s.m.tokens.get(ctx, pod, audience, seconds, now)
}

func (s managerSources) allocatable() corev1.ResourceList { return s.m.allocatable() }

// projectedFiles are a projected volume's files by path, with the item
// that writes each (its mode).
type projectedFiles struct {
	data  map[string][]byte
	items []corev1.KeyToPath
}

// add projects a source's data: its items (key to path), or every key
// when it names none. A key an item names but data lacks fails the
// volume unless the source is optional.
func (f *projectedFiles) add(data map[string][]byte, items []corev1.KeyToPath, optional *bool, missingFormat string) error {
	if len(items) == 0 {
		for key := range data {
			items = append(items, corev1.KeyToPath{Key: key, Path: key})
		}
	}
	for _, it := range items {
		val, ok := data[it.Key]
		if !ok {
			if optional != nil && *optional {
				continue
			}
			return podstep.ConfigErrorf(missingFormat, it.Key)
		}
		f.set(it.Path, val, it.Mode)
	}
	return nil
}

func (f *projectedFiles) set(path string, val []byte, mode *int32) {
	if f.data == nil {
		f.data = map[string][]byte{}
	}
	if _, dup := f.data[path]; !dup {
		f.items = append(f.items, corev1.KeyToPath{Key: path, Path: path, Mode: mode})
	}
	f.data[path] = val
}

// write puts the files into dir, each replaced atomically.
func (f *projectedFiles) write(dir string, defaultMode *int32) error {
	return writeVolumeFiles(dir, f.data, f.items, defaultMode)
}

// projectVolume reads a projected volume's sources and returns its files
// and when its token is due (zero: it has none).
func projectVolume(ctx context.Context, src volumeSources, pod *corev1.Pod, proj *corev1.ProjectedVolumeSource, podIP, nodeIP string, now time.Time) (*projectedFiles, time.Time, error) {
	files := &projectedFiles{}
	var refreshAt time.Time
	for _, s := range proj.Sources {
		switch {
		case s.ServiceAccountToken != nil:
			t := s.ServiceAccountToken
			seconds := int64(3600)
			if t.ExpirationSeconds != nil {
				seconds = *t.ExpirationSeconds
			}
			token, at, err := src.token(ctx, pod, t.Audience, seconds, now)
			if err != nil {
				return nil, time.Time{}, err
			}
			refreshAt = earliest(refreshAt, at)
			// The token file's mode: the volume's defaultMode, as upstream.
			files.set(t.Path, []byte(token), nil)
		case s.ConfigMap != nil:
			cm, err := src.configMap(ctx, pod.Namespace, s.ConfigMap.Name)
			if err != nil {
				if apierrors.IsNotFound(err) && s.ConfigMap.Optional != nil && *s.ConfigMap.Optional {
					continue
				}
				if apierrors.IsNotFound(err) {
					return nil, time.Time{}, podstep.ConfigErrorf("configmap %q not found", s.ConfigMap.Name)
				}
				return nil, time.Time{}, err
			}
			if err := files.add(configMapBytes(cm), s.ConfigMap.Items, s.ConfigMap.Optional, "configmap references non-existent config key: %s"); err != nil {
				return nil, time.Time{}, err
			}
		case s.Secret != nil:
			sec, err := src.secret(ctx, pod.Namespace, s.Secret.Name)
			if err != nil {
				if apierrors.IsNotFound(err) && s.Secret.Optional != nil && *s.Secret.Optional {
					continue
				}
				if apierrors.IsNotFound(err) {
					return nil, time.Time{}, podstep.ConfigErrorf("secret %q not found", s.Secret.Name)
				}
				return nil, time.Time{}, err
			}
			if err := files.add(sec.Data, s.Secret.Items, s.Secret.Optional, "references non-existent secret key: %s"); err != nil {
				return nil, time.Time{}, err
			}
		case s.DownwardAPI != nil:
			data, items, err := downwardAPIFiles(pod, s.DownwardAPI.Items, podIP, nodeIP, src.allocatable())
			if err != nil {
				return nil, time.Time{}, err
			}
			if err := files.add(data, items, nil, "downward API item %s"); err != nil {
				return nil, time.Time{}, err
			}
		}
	}
	return files, refreshAt, nil
}
