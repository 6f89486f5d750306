// Package integration drives the real `minik up` binary with the real
// client-go and kubectl.
package integration

import (
	"context"
	"fmt"
	"mime"
	"net/http"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"minik/internal/testcluster"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func makePod(name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
}

// encodings are the two wire formats client-go speaks: JSON (its default,
// and kubectl's) and protobuf (what Kubernetes components, and minik's own,
// use). The client-go tests run once with each, and check that every
// answer came in the encoding asked for.
var encodings = []struct {
	name, contentType string
}{
	{"json", "application/json"},
	{"protobuf", "application/vnd.kubernetes.protobuf"},
}

// forEachEncoding runs test against a fresh control plane once per encoding.
func forEachEncoding(t *testing.T, test func(t *testing.T, cs *kubernetes.Clientset)) {
	for _, enc := range encodings {
		t.Run(enc.name, func(t *testing.T) {
			c := testcluster.StartAPIOnly(t)
			cfg := c.RESTConfig()
			cfg.ContentType = enc.contentType
			cfg.AcceptContentTypes = enc.contentType + ",application/json"
			var mu sync.Mutex
			answered := map[string]int{}
			cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
				return roundTripFunc(func(req *http.Request) (*http.Response, error) {
					resp, err := rt.RoundTrip(req)
					if err == nil && resp.ContentLength != 0 {
						mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
						mu.Lock()
						answered[mt]++
						mu.Unlock()
					}
					return resp, err
				})
			}
			cs, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			test(t, cs)
			mu.Lock()
			defer mu.Unlock()
			if len(answered) != 1 || answered[enc.contentType] == 0 {
				t.Fatalf("answers came as %v, want only %s", answered, enc.contentType)
			}
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

func TestClientGoCRUDOnPodsAndNodes(t *testing.T) {
	forEachEncoding(t, testClientGoCRUD)
}

func testClientGoCRUD(t *testing.T, cs *kubernetes.Clientset) {
	ctx := ctxT(t)
	pods := cs.CoreV1().Pods("default")

	created, err := pods.Create(ctx, makePod("a", map[string]string{"app": "web", "tier": "front"}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("create fills uid, creationTimestamp, generation and defaults", func(t *testing.T) {
		if created.UID == "" || created.CreationTimestamp.IsZero() || created.ResourceVersion == "" {
			t.Fatalf("system fields missing: %+v", created.ObjectMeta)
		}
		if created.Spec.RestartPolicy != corev1.RestartPolicyAlways || created.Spec.SchedulerName != "default-scheduler" ||
			created.Spec.Containers[0].ImagePullPolicy != corev1.PullAlways || created.Status.Phase != corev1.PodPending {
			t.Fatalf("defaults not applied: %+v", created.Spec)
		}
	})
	t.Run("generateName creates a unique name", func(t *testing.T) {
		p := makePod("", map[string]string{"app": "web"})
		p.GenerateName = "gen-"
		got, err := pods.Create(ctx, p, metav1.CreateOptions{})
		if err != nil || len(got.Name) != len("gen-")+5 {
			t.Fatalf("got %v, %v", got.Name, err)
		}
	})
	t.Run("creating the same name again answers 409 AlreadyExists", func(t *testing.T) {
		_, err := pods.Create(ctx, makePod("a", nil), metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			t.Fatalf("want AlreadyExists, got %v", err)
		}
	})
	t.Run("list filters by label and field selectors", func(t *testing.T) {
		_, err := pods.Create(ctx, makePod("b", map[string]string{"app": "db"}), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cases := []struct {
			labels, fields string
			want           int
		}{
			{"app=web", "", 2},
			{"app!=web", "", 1},
			{"app in (web,db)", "", 3},
			{"app notin (web)", "", 1},
			{"tier", "", 1},
			{"!tier", "", 2},
			{"", "metadata.name=b", 1},
			{"", "status.phase=Pending", 3},
			{"", "spec.nodeName=", 3},
		}
		for _, tc := range cases {
			list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: tc.labels, FieldSelector: tc.fields})
			if err != nil {
				t.Fatalf("%q/%q: %v", tc.labels, tc.fields, err)
			}
			if len(list.Items) != tc.want {
				t.Errorf("labels %q fields %q: got %d pods, want %d", tc.labels, tc.fields, len(list.Items), tc.want)
			}
		}
	})
	t.Run("list pages with limit and continue", func(t *testing.T) {
		first, err := pods.List(ctx, metav1.ListOptions{Limit: 2})
		if err != nil || len(first.Items) != 2 || first.Continue == "" {
			t.Fatalf("first page: %d items, continue %q, %v", len(first.Items), first.Continue, err)
		}
		second, err := pods.List(ctx, metav1.ListOptions{Limit: 2, Continue: first.Continue})
		if err != nil || len(second.Items) != 1 || second.Continue != "" {
			t.Fatalf("second page: %d items, continue %q, %v", len(second.Items), second.Continue, err)
		}
	})
	t.Run("an update with a stale resourceVersion answers 409 Conflict", func(t *testing.T) {
		fresh, err := pods.Get(ctx, "a", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		fresh.Labels["v"] = "1"
		if _, err := pods.Update(ctx, fresh, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		fresh.Labels["v"] = "2" // still carries the old resourceVersion
		_, err = pods.Update(ctx, fresh, metav1.UpdateOptions{})
		if !apierrors.IsConflict(err) {
			t.Fatalf("want Conflict, got %v", err)
		}
	})
	t.Run("merge, strategic and JSON patches all apply", func(t *testing.T) {
		patches := []struct {
			typ  types.PatchType
			body string
		}{
			{types.MergePatchType, `{"metadata":{"labels":{"m":"1"}}}`},
			{types.StrategicMergePatchType, `{"metadata":{"labels":{"s":"1"}}}`},
			{types.JSONPatchType, `[{"op":"add","path":"/metadata/labels/j","value":"1"}]`},
		}
		for _, p := range patches {
			if _, err := pods.Patch(ctx, "a", p.typ, []byte(p.body), metav1.PatchOptions{}); err != nil {
				t.Fatalf("%s: %v", p.typ, err)
			}
		}
		got, _ := pods.Get(ctx, "a", metav1.GetOptions{})
		for _, k := range []string{"m", "s", "j"} {
			if got.Labels[k] != "1" {
				t.Errorf("label %s missing after patch: %v", k, got.Labels)
			}
		}
	})
	t.Run("nodes are cluster scoped and their status is a subresource", func(t *testing.T) {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"zone": "a"}}}
		n, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
		n, err = cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		if err != nil || len(n.Status.Conditions) != 1 {
			t.Fatalf("status update: %v", err)
		}
		n.Spec.Unschedulable = true
		n.Status.Conditions = nil // ignored by a main-resource update
		n, err = cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		if err != nil || !n.Spec.Unschedulable || len(n.Status.Conditions) != 1 {
			t.Fatalf("main update must keep status: %v %+v", err, n.Status)
		}
		if err := cs.CoreV1().Nodes().Delete(ctx, "n1", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("want NotFound after delete, got %v", err)
		}
	})
	t.Run("a bound pod is deleted gracefully and a second binding answers 409", func(t *testing.T) {
		bind := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}
		if err := pods.Bind(ctx, bind, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := pods.Bind(ctx, bind, metav1.CreateOptions{}); !apierrors.IsConflict(err) {
			t.Fatalf("second binding: want Conflict, got %v", err)
		}
		if err := pods.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		got, err := pods.Get(ctx, "a", metav1.GetOptions{})
		if err != nil || got.DeletionTimestamp == nil || *got.DeletionGracePeriodSeconds != 30 {
			t.Fatalf("want a terminating pod with grace 30, got %v %+v", err, got.ObjectMeta)
		}
		zero := int64(0)
		if err := pods.Delete(ctx, "a", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
		if _, err := pods.Get(ctx, "a", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("want NotFound after grace 0, got %v", err)
		}
	})
	t.Run("finalizers hold an object until removed", func(t *testing.T) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/hold"}}}
		cms := cs.CoreV1().ConfigMaps("default")
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := cms.Delete(ctx, "held", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		got, err := cms.Get(ctx, "held", metav1.GetOptions{})
		if err != nil || got.DeletionTimestamp == nil {
			t.Fatalf("want the object kept with deletionTimestamp, got %v", err)
		}
		if _, err := cms.Patch(ctx, "held", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cms.Get(ctx, "held", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("want NotFound once the finalizer is gone, got %v", err)
		}
	})
	t.Run("deletecollection removes every selected object", func(t *testing.T) {
		if err := pods.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "app=web"}); err != nil {
			t.Fatal(err)
		}
		list, _ := pods.List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if len(list.Items) != 0 {
			t.Fatalf("%d pods left", len(list.Items))
		}
	})
}

// Objects of every group travel in both encodings: client-go sends a
// delete's options in the group of the object (here RBAC's), and the
// e2e suite's clients send access and token reviews as protobuf.
func TestClientGoEveryGroupInBothEncodings(t *testing.T) {
	forEachEncoding(t, func(t *testing.T, cs *kubernetes.Clientset) {
		ctx := ctxT(t)
		tests := []struct {
			name string
			run  func() error
		}{
			{"a ClusterRole is created and deleted", func() error {
				role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "reader"}, Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}}}
				if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
					return err
				}
				return cs.RbacV1().ClusterRoles().Delete(ctx, "reader", metav1.DeleteOptions{})
			}},
			{"a SelfSubjectAccessReview is answered", func() error {
				r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
					ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "list", Resource: "pods"}}}, metav1.CreateOptions{})
				if err == nil && !r.Status.Allowed {
					err = fmt.Errorf("the admin may not list pods: %+v", r.Status)
				}
				return err
			}},
			{"a TokenReview is answered", func() error {
				r, err := cs.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: "not-a-token"}}, metav1.CreateOptions{})
				if err == nil && r.Status.Authenticated {
					err = fmt.Errorf("a garbage token authenticated: %+v", r.Status)
				}
				return err
			}},
		}
		for _, tt := range tests {
			if err := tt.run(); err != nil {
				t.Errorf("%s: %v", tt.name, err)
			}
		}
	})
}

func TestWatchDeliversEveryEventInOrder(t *testing.T) {
	forEachEncoding(t, testWatchInOrder)
}

func testWatchInOrder(t *testing.T, cs *kubernetes.Clientset) {
	ctx := ctxT(t)
	cms := cs.CoreV1().ConfigMaps("default")
	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "w"}, Data: map[string]string{"n": "0"}}
	if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		p := fmt.Sprintf(`{"data":{"n":"%d"}}`, i)
		if _, err := cms.Patch(ctx, "w", types.MergePatchType, []byte(p), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := cms.Delete(ctx, "w", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want := []string{"ADDED 0", "MODIFIED 1", "MODIFIED 2", "MODIFIED 3", "MODIFIED 4", "MODIFIED 5", "DELETED 5"}
	for i, exp := range want {
		select {
		case ev := <-w.ResultChan():
			got := fmt.Sprintf("%s %s", ev.Type, ev.Object.(*corev1.ConfigMap).Data["n"])
			if got != exp {
				t.Fatalf("event %d: got %q, want %q", i, got, exp)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("event %d (%s) never arrived", i, exp)
		}
	}
}

func TestInformerSeesEveryEventInOrder(t *testing.T) {
	forEachEncoding(t, testInformerInOrder)
}

func testInformerInOrder(t *testing.T, cs *kubernetes.Clientset) {
	ctx := ctxT(t)
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace("default"))
	inf := factory.Core().V1().Pods().Informer()
	var mu sync.Mutex
	var seen []string
	record := func(s string) { mu.Lock(); seen = append(seen, s); mu.Unlock() }
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { record("add " + o.(*corev1.Pod).Labels["v"]) },
		UpdateFunc: func(_, o any) { record("update " + o.(*corev1.Pod).Labels["v"]) },
		DeleteFunc: func(o any) {
			if p, ok := o.(*corev1.Pod); ok {
				record("delete " + p.Labels["v"])
			}
		},
	})
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer never synced")
	}
	pods := cs.CoreV1().Pods("default")
	if _, err := pods.Create(ctx, makePod("i", map[string]string{"v": "0"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 20; i++ {
		p := fmt.Sprintf(`{"metadata":{"labels":{"v":"%d"}}}`, i)
		if _, err := pods.Patch(ctx, "i", types.StrategicMergePatchType, []byte(p), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	zero := int64(0)
	if err := pods.Delete(ctx, "i", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	want := []string{"add 0"}
	for i := 1; i <= 20; i++ {
		want = append(want, fmt.Sprintf("update %d", i))
	}
	want = append(want, "delete 20")
	deadline := time.Now().Add(15 * time.Second)
	for {
		mu.Lock()
		n := len(seen)
		got := append([]string(nil), seen...)
		mu.Unlock()
		if n >= len(want) {
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("event %d: got %q, want %q (all: %v)", i, got[i], want[i], got)
				}
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("saw only %v", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestWatchTooOldAnswers410AndInformerRelists uses a tiny watch cache so
// that a resourceVersion falls out of the window, as it does after
// compaction on a busy cluster.
func TestWatchTooOldAnswers410AndInformerRelists(t *testing.T) {
	c := testcluster.StartAPIOnly(t, "--watch-cache-size", "20")
	cs := c.Clientset()
	ctx := ctxT(t)
	cms := cs.CoreV1().ConfigMaps("default")
	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	oldRV := list.ResourceVersion
	for i := 0; i < 40; i++ {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}}
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("a watch from a resourceVersion older than the window answers 410 Gone", func(t *testing.T) {
		// The cache follows etcd asynchronously: until it has seen the
		// newest writes it can still serve the old version, so retry.
		var last any
		for i := 0; i < 50; i++ {
			w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: oldRV})
			if err != nil {
				if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
					return
				}
				t.Fatalf("want 410, got %v", err)
			}
			// client-go may surface the 410 as an ERROR event instead.
			ev := <-w.ResultChan()
			w.Stop()
			if ev.Type == watch.Error {
				st := apierrors.FromObject(ev.Object)
				if apierrors.IsResourceExpired(st) || apierrors.IsGone(st) {
					return
				}
			}
			last = ev
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("never got 410; last event %v", last)
	})
	t.Run("an informer whose watch gets 410 re-lists and catches up", func(t *testing.T) {
		// The first watch ends after 2s; before the informer's second watch
		// (from its last resourceVersion) we push that version out of the
		// window, so the server answers 410 and the informer must re-list.
		// client-go may list with LIST or with a watch that sends initial
		// events; both count as a list here.
		var mu sync.Mutex
		lists, watches := 0, 0
		lw := &cache.ListWatch{
			ListFunc: func(opts metav1.ListOptions) (runtime.Object, error) {
				mu.Lock()
				lists++
				mu.Unlock()
				return cms.List(ctx, opts)
			},
			WatchFunc: func(opts metav1.ListOptions) (watch.Interface, error) {
				mu.Lock()
				watches++
				n := watches
				if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
					lists++
				}
				mu.Unlock()
				switch n {
				case 1:
					two := int64(2)
					opts.TimeoutSeconds = &two
				case 2:
					for i := 0; i < 40; i++ {
						cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("late-%d", i)}}
						if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
							return nil, err
						}
					}
				}
				return cms.Watch(ctx, opts)
			},
		}
		inf := cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})
		go inf.Run(ctx.Done())
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			mu.Lock()
			n := lists
			mu.Unlock()
			if n >= 2 && len(inf.GetStore().ListKeys()) == 80 {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("lists=%d watches=%d cached=%d; want a re-list and 80 objects", lists, watches, len(inf.GetStore().ListKeys()))
	})
}

// TestContinueAfterCompactionAnswers410 lets the apiserver compact etcd
// for real and checks that an old continue token expires.
func TestContinueAfterCompactionAnswers410(t *testing.T) {
	c := testcluster.StartAPIOnly(t, "--etcd-compaction-interval", "300ms")
	cs := c.Clientset()
	ctx := ctxT(t)
	cms := cs.CoreV1().ConfigMaps("default")
	for i := 0; i < 3; i++ {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("c%d", i)}}
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	page, err := cms.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil || page.Continue == "" {
		t.Fatalf("first page: %v", err)
	}
	// Newer writes, then at least two compaction intervals.
	for i := 0; i < 3; i++ {
		if _, err := cms.Patch(ctx, "c0", types.MergePatchType, []byte(fmt.Sprintf(`{"data":{"i":"%d"}}`, i)), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		_, err = cms.List(ctx, metav1.ListOptions{Limit: 1, Continue: page.Continue})
		if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("continue token never expired: %v", err)
}

var _ kubernetes.Interface = (*kubernetes.Clientset)(nil)
