package objectcache_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/internal/testcluster"
	"minik/kubelet/objectcache"
)

// A node's cache watches each config map its pods name, as the node
// authorizer lets that node (a list of one name), sees changes and
// deletion through the watch, and stops watching once no pod names it.
func TestTheCacheWatchesWhatThePodsNameAsTheirNode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an apiserver; skipped with -short")
	}
	c := testcluster.StartAPIOnly(t)
	ctx := t.Context()
	admin := c.Clientset().CoreV1()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "default"}, Data: map[string]string{"k": "v1"}}
	if _, err := admin.ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	usesSettings := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: corev1.PodSpec{
			NodeName:   "n1",
			Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
			Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{
				ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}}}}}
	}
	var pods []*corev1.Pod
	for _, name := range []string{"a", "b"} {
		p, err := admin.Pods("default").Create(ctx, usesSettings(name), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pods = append(pods, p)
	}

	node := c.ClientAs("system:node:n1", "system:nodes")
	cache := objectcache.NewConfigMaps(ctx, node, nil, slog.New(slog.DiscardHandler))
	cache.RegisterPod(pods[0])
	cache.RegisterPod(pods[1])
	if n := cache.Watched(); n != 1 {
		t.Fatalf("watching %d objects for two pods naming one, want 1", n)
	}
	value := func() string {
		got, err := cache.Get(ctx, "default", "settings")
		if apierrors.IsNotFound(err) {
			return "<not found>"
		}
		if err != nil {
			return "<" + err.Error() + ">"
		}
		return got.Data["k"]
	}
	eventually(t, "the first value", func() bool { return value() == "v1" })

	cm.Data["k"] = "v2"
	if _, err := admin.ConfigMaps("default").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the change, through the watch", func() bool { return value() == "v2" })
	if err := admin.ConfigMaps("default").Delete(ctx, "settings", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the deletion, through the watch", func() bool { return value() == "<not found>" })

	// An update of a pod that no longer names it releases its reference.
	stripped := pods[0].DeepCopy()
	stripped.Spec.Volumes = nil
	cache.RegisterPod(stripped)
	if n := cache.Watched(); n != 1 {
		t.Fatalf("watching %d objects while pod b still names it, want 1", n)
	}
	cache.UnregisterPod(pods[1].UID)
	if n := cache.Watched(); n != 0 {
		t.Fatalf("watching %d objects once no pod names it, want 0", n)
	}
	// Not registered: a GET, which the node authorizer still judges.
	if _, err := cache.Get(ctx, "default", "other"); !apierrors.IsForbidden(err) {
		t.Fatalf("reading an object no pod of the node names: %v, want Forbidden", err)
	}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
