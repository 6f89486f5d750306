package namespace

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/client"
	"minik/controller/internal/testutil"
)

// doomed is a namespace being deleted, waiting for this controller.
func doomed() *corev1.Namespace {
	gone := metav1.NewTime(testutil.T0)
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "doomed", DeletionTimestamp: &gone},
		Spec:   corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"example.com/other", corev1.FinalizerKubernetes}},
		Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}
}

func TestPlan(t *testing.T) {
	deployments := client.Resource{Group: "apps", Version: "v1", Resource: "deployments", Namespaced: true}
	pods := client.Resource{Version: "v1", Resource: "pods", Namespaced: true}
	collections := []client.Resource{deployments, pods}
	active := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "doomed"}, Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}}}
	finalized := doomed()
	finalized.Spec.Finalizers = finalized.Spec.Finalizers[:1]
	left := &Remaining{Counts: map[string]int{"pods": 2, "deployments.apps": 0}, Finalizers: map[string]int{}}
	empty := &Remaining{Counts: map[string]int{"pods": 0, "deployments.apps": 0}}
	for _, c := range []struct {
		name        string
		ns          *corev1.Namespace
		obs         Observed
		want        []string
		wantRequeue time.Duration
	}{
		{"a deleted namespace first has every collection deleted, in discovery's order",
			doomed(), Observed{Collections: collections}, []string{"DeleteCollection doomed deployments.apps", "DeleteCollection doomed pods"}, 0},
		{"content left after the deletes is reported, and looked at again after the queue's backoff (-1)",
			doomed(), Observed{Collections: collections, Remaining: left}, []string{"UpdateStatus doomed"}, -1},
		{"nothing left: the namespace is finalized",
			doomed(), Observed{Collections: collections, Remaining: empty}, []string{"Finalize doomed"}, 0},
		{"a namespace not being deleted is left alone", active, Observed{Collections: collections}, nil, 0},
		{"a namespace already finalized by this controller is left alone", finalized, Observed{Collections: collections}, nil, 0},
		{"a namespace gone from the cache is left alone", nil, Observed{Collections: collections}, nil, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := Plan(c.ns, c.obs, testutil.T0)
			var got []string
			for _, a := range out.Actions {
				got = append(got, a.String())
			}
			requeue := out.RequeueAfter
			if out.Backoff {
				requeue = -1
			}
			if !slices.Equal(got, c.want) || requeue != c.wantRequeue {
				t.Errorf("actions %v, requeue %v; want %v, %v", got, requeue, c.want, c.wantRequeue)
			}
		})
	}
	t.Run("the status written carries the conditions; the finalize keeps the other finalizers", func(t *testing.T) {
		ns := doomed()
		status := Plan(ns, Observed{Remaining: left}, testutil.T0).Actions[0].Namespace
		if len(status.Status.Conditions) != 2 || status.Status.Conditions[0].Reason != "SomeResourcesRemain" {
			t.Errorf("conditions %+v", status.Status.Conditions)
		}
		fin := Plan(ns, Observed{Remaining: empty}, testutil.T0).Actions[0].Namespace
		if !slices.Equal(fin.Spec.Finalizers, []corev1.FinalizerName{"example.com/other"}) || fin.Kind != "Namespace" {
			t.Errorf("finalize writes finalizers %v, kind %q", fin.Spec.Finalizers, fin.Kind)
		}
		if len(ns.Spec.Finalizers) != 2 || len(ns.Status.Conditions) != 0 {
			t.Errorf("the cached namespace was changed: %+v", ns)
		}
	})
}

// TestPlanWritesTheStatusOnlyWhenItChanged: a namespace waiting for its
// content is looked at again and again; its status is written only when
// what is left changed, and a condition's lastTransitionTime only moves
// when its status does.
func TestPlanWritesTheStatusOnlyWhenItChanged(t *testing.T) {
	since := metav1.NewTime(testutil.T0)
	later := testutil.T0.Add(time.Minute)
	waiting := doomed()
	waiting.Status.Conditions = []corev1.NamespaceCondition{
		{Type: corev1.NamespaceContentRemaining, Status: corev1.ConditionTrue, LastTransitionTime: since,
			Reason: "SomeResourcesRemain", Message: "Some resources are remaining: pods has 2 resource instances"},
		{Type: corev1.NamespaceFinalizersRemaining, Status: corev1.ConditionFalse, LastTransitionTime: since,
			Reason: "ContentHasNoFinalizers", Message: "All content-preserving finalizers finished"},
	}
	cases := []struct {
		name      string
		rem       *Remaining
		wantWrite bool
		wantMsg   string // of NamespaceContentRemaining in the write
	}{
		{"the same content left again: nothing written",
			&Remaining{Counts: map[string]int{"pods": 2}}, false, ""},
		{"less content left: the new message, with the same transition time",
			&Remaining{Counts: map[string]int{"pods": 1}}, true, "Some resources are remaining: pods has 1 resource instances"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := Plan(waiting, Observed{Remaining: tc.rem}, later)
			if out.RequeueAfter == 0 && !out.Backoff {
				t.Errorf("no requeue while content is left")
			}
			if (len(out.Actions) > 0) != tc.wantWrite {
				t.Fatalf("actions %v, want a status write: %v", out.Actions, tc.wantWrite)
			}
			if !tc.wantWrite {
				return
			}
			c := out.Actions[0].Namespace.Status.Conditions[0]
			if c.Message != tc.wantMsg || !c.LastTransitionTime.Equal(&since) {
				t.Errorf("content condition %+v, want %q since %v", c, tc.wantMsg, since)
			}
		})
	}
}

// TestRequeueCadence: as upstream, a namespace with content left is looked
// at again after half its estimate plus a second: the estimate is the
// longest grace period of the pods left while it runs, at least 15s while
// objects with finalizers are left. Without an estimate, the queue's
// backoff decides (want 0: Backoff).
func TestRequeueCadence(t *testing.T) {
	cases := []struct {
		name string
		rem  Remaining
		at   time.Duration // since the namespace's deletion
		want time.Duration
	}{
		{"objects without finalizers or pods in their grace period: backoff",
			Remaining{Counts: map[string]int{"configmaps": 1}}, 0, 0},
		{"pods deleted with a 30s grace period: 16s",
			Remaining{Counts: map[string]int{"pods": 2}, PodGrace: 30 * time.Second}, 0, 16 * time.Second},
		{"pods left after their grace period: backoff",
			Remaining{Counts: map[string]int{"pods": 2}, PodGrace: 30 * time.Second}, 30 * time.Second, 0},
		{"objects with finalizers: 8s", Remaining{Counts: map[string]int{"configmaps": 1}, Finalizers: map[string]int{"example.com/hold": 1}}, time.Hour, 8 * time.Second},
		{"pods with a long grace period and finalizers: the longer",
			Remaining{Counts: map[string]int{"pods": 1}, Finalizers: map[string]int{"example.com/hold": 1}, PodGrace: 60 * time.Second}, 0, 31 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rem := tc.rem
			out := Plan(doomed(), Observed{Remaining: &rem}, testutil.T0.Add(tc.at))
			if out.RequeueAfter != tc.want || out.Backoff != (tc.want == 0) {
				t.Errorf("requeue after %v (backoff %v), want %v", out.RequeueAfter, out.Backoff, tc.want)
			}
		})
	}
}
