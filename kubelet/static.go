package kubelet

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"
)

// Annotations of static and mirror pods, as Kubernetes names them.
const (
	annotationConfigSource = "kubernetes.io/config.source"
	annotationConfigHash   = "kubernetes.io/config.hash"
	annotationConfigMirror = "kubernetes.io/config.mirror"
	staticScanPeriod       = 5 * time.Second
)

// staticPods runs the pods of --pod-manifest-path without the apiserver,
// and keeps a mirror pod of each in the apiserver so that kubectl shows
// them. Deleting a mirror pod only makes the kubelet create it again.
type staticPods struct {
	k    *Kubelet
	kick chan struct{}

	mu   sync.Mutex
	pods map[types.UID]*corev1.Pod
}

func newStaticPods(k *Kubelet) *staticPods {
	return &staticPods{k: k, kick: make(chan struct{}, 1), pods: map[types.UID]*corev1.Pod{}}
}

func (s *staticPods) uids() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for uid := range s.pods {
		out = append(out, string(uid))
	}
	return out
}

func (s *staticPods) run(ctx context.Context) error {
	for {
		s.scan(ctx)
		s.reconcileMirrors(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-s.kick:
		case <-s.k.cfg.Clock.After(staticScanPeriod):
		}
	}
}

// mirrorChanged is called for every mirror pod event.
func (s *staticPods) mirrorChanged(_ context.Context, _ *corev1.Pod) {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// readManifests parses every .yaml, .yml and .json file of dir.
func readManifests(dir, node string) (map[types.UID]*corev1.Pod, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[types.UID]*corev1.Pod{}
	for _, e := range entries {
		ext := strings.ToLower(filepath.Ext(e.Name()))
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") || (ext != ".yaml" && ext != ".yml" && ext != ".json") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		var pod corev1.Pod
		if err := yaml.Unmarshal(data, &pod); err != nil || pod.Name == "" {
			continue
		}
		sum := sha256.Sum256(append(data, []byte(node)...))
		hash := hex.EncodeToString(sum[:16])
		if pod.Namespace == "" {
			pod.Namespace = metav1.NamespaceDefault
		}
		pod.Name = pod.Name + "-" + node
		pod.UID = types.UID(hash)
		pod.Spec.NodeName = node
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[annotationConfigSource] = "file"
		pod.Annotations[annotationConfigHash] = hash
		if pod.Spec.RestartPolicy == "" {
			pod.Spec.RestartPolicy = corev1.RestartPolicyAlways
		}
		for i := range pod.Spec.Containers {
			if pod.Spec.Containers[i].ImagePullPolicy == "" {
				pod.Spec.Containers[i].ImagePullPolicy = corev1.PullIfNotPresent
			}
		}
		out[pod.UID] = &pod
	}
	return out, nil
}

func (s *staticPods) scan(ctx context.Context) {
	found, err := readManifests(s.k.cfg.PodManifestPath, s.k.cfg.NodeName)
	if err != nil {
		if !os.IsNotExist(err) {
			s.k.log.Warn("reading static pod manifests", "dir", s.k.cfg.PodManifestPath, "err", err)
		}
		found = map[types.UID]*corev1.Pod{}
	}
	s.mu.Lock()
	old := s.pods
	s.pods = found
	s.mu.Unlock()
	for uid, p := range found {
		if _, ok := old[uid]; ok {
			continue
		}
		s.k.log.Info("static pod", "pod", p.Namespace+"/"+p.Name)
		w := s.k.worker(ctx, uid)
		w.mu.Lock()
		w.static = true
		w.mu.Unlock()
		w.update(p.DeepCopy(), false)
	}
	for uid, p := range old {
		if _, ok := found[uid]; ok {
			continue
		}
		s.k.mu.Lock()
		w := s.k.workers[uid]
		s.k.mu.Unlock()
		if w != nil {
			w.update(p.DeepCopy(), true)
		}
		s.deleteMirror(ctx, p)
	}
}

// mirrorFor returns the mirror pod of a static pod, if the apiserver has one.
func (s *staticPods) mirrorFor(p *corev1.Pod) *corev1.Pod {
	if s.k.pods == nil {
		return nil
	}
	m, ok := s.k.pods.Store().Get(p.Namespace, p.Name)
	if !ok || m.Annotations[annotationConfigMirror] != p.Annotations[annotationConfigHash] || m.DeletionTimestamp != nil {
		return nil
	}
	return m
}

func (s *staticPods) deleteMirror(ctx context.Context, p *corev1.Pod) {
	m, ok := s.k.pods.Store().Get(p.Namespace, p.Name)
	if !ok || !isMirror(m) {
		return
	}
	uid := m.UID
	err := s.k.cfg.Client.Pods().Delete(ctx, m.Namespace, m.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64), Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) {
		s.k.log.Warn("deleting mirror pod", "pod", m.Namespace+"/"+m.Name, "err", err)
	}
}

// reconcileMirrors creates missing mirror pods and replaces those being
// deleted or out of date.
func (s *staticPods) reconcileMirrors(ctx context.Context) {
	if s.k.pods == nil || !s.k.pods.HasSynced() {
		return
	}
	s.mu.Lock()
	pods := make([]*corev1.Pod, 0, len(s.pods))
	for _, p := range s.pods {
		pods = append(pods, p)
	}
	s.mu.Unlock()
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	for _, p := range pods {
		if s.mirrorFor(p) != nil {
			continue
		}
		if m, ok := s.k.pods.Store().Get(p.Namespace, p.Name); ok {
			// Deleted (kubectl delete) or outdated: remove it for good first.
			if isMirror(m) {
				s.deleteMirror(ctx, p)
			}
			continue
		}
		mirror := p.DeepCopy()
		mirror.UID = ""
		mirror.ResourceVersion = ""
		mirror.Status = corev1.PodStatus{}
		mirror.Annotations[annotationConfigMirror] = p.Annotations[annotationConfigHash]
		if n := s.k.nodes.Node(); n != nil && n.UID != "" {
			ctrl := true
			mirror.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: n.Name, UID: n.UID, Controller: &ctrl}}
		}
		if _, err := s.k.cfg.Client.Pods().Create(ctx, mirror, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			s.k.log.Warn("creating mirror pod", "pod", p.Namespace+"/"+p.Name, "err", err)
			continue
		}
		// The new mirror needs the status again.
		s.k.mu.Lock()
		w := s.k.workers[p.UID]
		s.k.mu.Unlock()
		if w != nil {
			w.mu.Lock()
			w.lastStatus = nil
			w.mu.Unlock()
			w.wake()
		}
	}
}

// eventTarget is the object events about pod are recorded on: the mirror
// pod for a static pod, so that kubectl describe shows them.
func (k *Kubelet) eventTarget(pod *corev1.Pod) *corev1.Pod {
	if k.static != nil && pod.Annotations[annotationConfigSource] == "file" {
		if m := k.static.mirrorFor(pod); m != nil {
			return m
		}
	}
	return pod
}
