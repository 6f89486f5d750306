package apiserver

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"minik/client"
)

// The admission caches must never change an answer: every case below
// creates right after the change that decides it, or with a cache that
// is deliberately stale, and expects what reading etcd would give.
func TestAdmissionCachesAnswerAsEtcdWould(t *testing.T) {
	ts := startTestServer(t)
	c := ts.client(t)
	cases := []struct {
		name string
		run  func(t *testing.T, ctx context.Context, ns string)
	}{
		{"a pod created right after its namespace is admitted", func(t *testing.T, ctx context.Context, ns string) {
			for i := 0; i < 20; i++ {
				name := fmt.Sprintf("%s-%d", ns, i)
				mustCreateNamespace(t, ctx, c, name)
				if _, err := c.Pods().Create(ctx, benchPod(name, "p"), metav1.CreateOptions{}); err != nil {
					t.Fatalf("pod in the new namespace %s: %v", name, err)
				}
			}
		}},
		{"a pod created right after its namespace's deletion is refused", func(t *testing.T, ctx context.Context, ns string) {
			for i := 0; i < 10; i++ {
				name := fmt.Sprintf("%s-%d", ns, i)
				mustCreateNamespace(t, ctx, c, name)
				waitCached(t, ts.srv.namespaceCache, name, func(o runtime.Object) bool { return o != nil })
				if err := c.Namespaces().Delete(ctx, "", name, metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
				_, err := c.Pods().Create(ctx, benchPod(name, "p"), metav1.CreateOptions{})
				if !apierrors.IsForbidden(err) {
					t.Fatalf("create in terminating namespace %s: %v, want Forbidden", name, err)
				}
			}
		}},
		{"a pod in a namespace the cache still shows active is refused once it terminates", func(t *testing.T, ctx context.Context, ns string) {
			mustCreateNamespace(t, ctx, c, ns)
			active := waitCached(t, ts.srv.namespaceCache, ns, func(o runtime.Object) bool { return o != nil })
			if err := c.Namespaces().Delete(ctx, "", ns, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			waitCached(t, ts.srv.namespaceCache, ns, func(o runtime.Object) bool { return o.(*corev1.Namespace).DeletionTimestamp != nil })
			restore(ts.srv.namespaceCache, ns, active) // stale: the active namespace again
			_, err := c.Pods().Create(ctx, benchPod(ns, "p"), metav1.CreateOptions{})
			if !apierrors.IsForbidden(err) {
				t.Fatalf("create with a stale cache: %v, want Forbidden", err)
			}
			if _, err := c.Pods().Get(ctx, ns, "p", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Fatalf("the pod was stored: %v", err)
			}
		}},
		{"a pod created right after a global default class appears takes its priority, and loses it right after it goes", func(t *testing.T, ctx context.Context, ns string) {
			mustCreateNamespace(t, ctx, c, ns)
			for i := 0; i < 5; i++ {
				pcName := fmt.Sprintf("%s-default-%d", ns, i)
				pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: pcName}, Value: 1000 + int32(i), GlobalDefault: true}
				if _, err := c.PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				with, err := c.Pods().Create(ctx, benchPod(ns, fmt.Sprintf("with-%d", i)), metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if with.Spec.PriorityClassName != pcName || with.Spec.Priority == nil || *with.Spec.Priority != pc.Value {
					t.Fatalf("pod got class %q priority %v, want %s and %d", with.Spec.PriorityClassName, with.Spec.Priority, pcName, pc.Value)
				}
				if err := c.PriorityClasses().Delete(ctx, "", pcName, metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
				without, err := c.Pods().Create(ctx, benchPod(ns, fmt.Sprintf("without-%d", i)), metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if without.Spec.PriorityClassName != "" || without.Spec.Priority == nil || *without.Spec.Priority != 0 {
					t.Fatalf("pod got class %q priority %v after the default went, want none and 0", without.Spec.PriorityClassName, without.Spec.Priority)
				}
			}
		}},
		{"a default class the cache has not seen still applies", func(t *testing.T, ctx context.Context, ns string) {
			mustCreateNamespace(t, ctx, c, ns)
			pcName := ns + "-default"
			pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: pcName}, Value: 7, GlobalDefault: true}
			if _, err := c.PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.PriorityClasses().Delete(context.Background(), "", pcName, metav1.DeleteOptions{}) })
			waitCached(t, ts.srv.priorityClassCache, pcName, func(o runtime.Object) bool { return o != nil })
			forget(ts.srv.priorityClassCache, pcName) // stale: as before the class existed
			got, err := c.Pods().Create(ctx, benchPod(ns, "p"), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Spec.PriorityClassName != pcName || *got.Spec.Priority != 7 {
				t.Fatalf("pod got class %q priority %d, want %s and 7", got.Spec.PriorityClassName, *got.Spec.Priority, pcName)
			}
		}},
		{"a pod naming a missing priority class is refused", func(t *testing.T, ctx context.Context, ns string) {
			mustCreateNamespace(t, ctx, c, ns)
			p := benchPod(ns, "p")
			p.Spec.PriorityClassName = "no-such-class"
			if _, err := c.Pods().Create(ctx, p, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
				t.Fatalf("err %v, want Forbidden", err)
			}
		}},
		{"a pod in a missing namespace is refused", func(t *testing.T, ctx context.Context, ns string) {
			if _, err := c.Pods().Create(ctx, benchPod(ns, "p"), metav1.CreateOptions{}); !apierrors.IsNotFound(err) {
				t.Fatalf("err %v, want NotFound", err)
			}
		}},
		{"a second pod of the same name answers AlreadyExists", func(t *testing.T, ctx context.Context, ns string) {
			mustCreateNamespace(t, ctx, c, ns)
			if _, err := c.Pods().Create(ctx, benchPod(ns, "p"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Pods().Create(ctx, benchPod(ns, "p"), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
				t.Fatalf("err %v, want AlreadyExists", err)
			}
		}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			tc.run(t, ctx, fmt.Sprintf("case-%d", i))
		})
	}
}

func mustCreateNamespace(t *testing.T, ctx context.Context, c *client.Client, name string) {
	t.Helper()
	if _, err := c.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitCached waits until the cache's object called name satisfies ok
// (nil when absent) and returns it.
func waitCached(t *testing.T, c *objectCache, name string, ok func(runtime.Object) bool) cachedObject {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		obj, rev, found := c.get("", name)
		if !found {
			obj = nil
		}
		if ok(obj) {
			return cachedObject{obj: obj, rev: rev}
		}
		if time.Now().After(deadline) {
			t.Fatalf("cache never got the wanted %s", name)
		}
		time.Sleep(time.Millisecond)
	}
}

// restore puts an old version back into the cache, as if it had missed
// the changes since.
func restore(c *objectCache, name string, old cachedObject) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.objs[name] = old
}

// forget drops an object and winds the cache's revision back to before
// it, as if its creation had not arrived yet.
func forget(c *objectCache, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rev = c.objs[name].rev - 1
	delete(c.objs, name)
}
