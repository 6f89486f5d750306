package storage

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"minik/internal/etcd"
)

// sharedEtcd is one embedded member for the tests that do not compact;
// each test gets its own key prefix in it.
var (
	sharedEtcd *clientv3.Client
	prefixSeq  atomic.Int64
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "storage-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	member, cli, err := etcd.StartEmbedded(context.Background(), dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sharedEtcd = cli
	code := m.Run()
	cli.Close()
	member.Close()
	os.RemoveAll(dir)
	os.Exit(code)
}

// ownEtcd starts a member only this test uses (for compaction).
func ownEtcd(t *testing.T) *clientv3.Client {
	t.Helper()
	member, cli, err := etcd.StartEmbedded(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cli.Close()
		member.Close()
	})
	return cli
}

// podStore is a started store of pods under a prefix of its own.
type podStore struct {
	*Store
	client *clientv3.Client
}

func newPodStore(t *testing.T, cli *clientv3.Client, historySize int) *podStore {
	t.Helper()
	if cli == nil {
		cli = sharedEtcd
	}
	prefix := fmt.Sprintf("/registry/test-%d/pods/", prefixSeq.Add(1))
	s := NewStore(cli, prefix, corev1.Resource("pods"), corev1.SchemeGroupVersion.WithKind("Pod"), func() runtime.Object { return &corev1.Pod{} }, historySize)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return &podStore{Store: s, client: cli}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// podBuilder builds test pods: makePod("a").Label("app", "web").Obj().
type podBuilder struct{ pod *corev1.Pod }

func makePod(name string) *podBuilder {
	return &podBuilder{pod: &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}}
}

func (b *podBuilder) Namespace(ns string) *podBuilder { b.pod.Namespace = ns; return b }

func (b *podBuilder) Label(k, v string) *podBuilder {
	if b.pod.Labels == nil {
		b.pod.Labels = map[string]string{}
	}
	b.pod.Labels[k] = v
	return b
}

func (b *podBuilder) Obj() *corev1.Pod { return b.pod }

// create stores pod and returns its revision.
func (s *podStore) create(t *testing.T, pod *corev1.Pod) int64 {
	t.Helper()
	obj, err := s.Create(ctxT(t), pod)
	if err != nil {
		t.Fatalf("create %s: %v", pod.Name, err)
	}
	return rvOf(t, obj)
}

// relabel sets label k=v on the stored pod and returns the new revision.
func (s *podStore) relabel(t *testing.T, name, k, v string) int64 {
	t.Helper()
	obj, _, err := s.GuaranteedUpdate(ctxT(t), "ns", name, func(cur runtime.Object) (runtime.Object, error) {
		p := cur.(*corev1.Pod)
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[k] = v
		return p, nil
	})
	if err != nil {
		t.Fatalf("relabel %s: %v", name, err)
	}
	return rvOf(t, obj)
}

func rvOf(t *testing.T, obj runtime.Object) int64 {
	t.Helper()
	rv, err := ParseRV(metaOf(obj).GetResourceVersion())
	if err != nil || rv == 0 {
		t.Fatalf("bad resourceVersion %q: %v", metaOf(obj).GetResourceVersion(), err)
	}
	return rv
}

// waitSeen waits until the watch cache has seen revision rev.
func (s *podStore) waitSeen(t *testing.T, rev int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for s.Cache().LatestRevision() < rev {
		if time.Now().After(deadline) {
			t.Fatalf("watch cache stuck at revision %d, want %d", s.Cache().LatestRevision(), rev)
		}
		time.Sleep(time.Millisecond)
	}
}

// next receives one delivery, failing after a timeout.
func next(t *testing.T, w *Watcher) Delivery {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	d, ok := w.Next(ctx)
	if !ok {
		t.Fatal("watcher closed or no delivery within 10s, want a delivery")
	}
	return d
}

// nothingQueued asserts that no delivery arrives for a short while.
func nothingQueued(t *testing.T, w *Watcher) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if d, ok := w.Next(ctx); ok {
		t.Fatalf("got delivery %+v, want none", d)
	}
}

// summary is "TYPE name" for a delivery, or "BOOKMARK rev".
func summary(d Delivery) string {
	if d.Event == nil {
		return fmt.Sprintf("%s %d", d.Type, d.Rev)
	}
	return fmt.Sprintf("%s %s", d.Type, metaOf(d.Event.Object).GetName())
}

func metaOf(obj runtime.Object) metav1.Object {
	m, err := meta.Accessor(obj)
	if err != nil {
		panic(err)
	}
	return m
}
