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
		{"content left after the deletes is reported, and looked at again soon",
			doomed(), Observed{Collections: collections, Remaining: left}, []string{"UpdateStatus doomed"}, retryInterval},
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
			if !slices.Equal(got, c.want) || out.RequeueAfter != c.wantRequeue {
				t.Errorf("actions %v, requeue %v; want %v, %v", got, out.RequeueAfter, c.want, c.wantRequeue)
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
