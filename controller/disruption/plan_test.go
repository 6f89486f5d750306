package disruption

import (
	"errors"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"minik/controller/internal/testutil"
)

func pdb(minAvailable, maxUnavailable *intstr.IntOrString) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "b", Generation: 2},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: minAvailable, MaxUnavailable: maxUnavailable}}
}

func ip(v intstr.IntOrString) *intstr.IntOrString { return &v }

func TestCompute(t *testing.T) {
	now := testutil.T0
	ready := func(n string) *corev1.Pod { return testutil.Pod(n).Ready(now).Obj() }
	three := []*corev1.Pod{ready("a"), ready("b"), ready("c")}
	cases := []struct {
		name                                   string
		in                                     Input
		wantAllowed, wantDesired, wantExpected int32
		wantCurrent                            int32
		wantReason                             string
	}{
		{"minAvailable 2 of 3 ready allows 1", Input{PDB: pdb(ip(intstr.FromInt32(2)), nil), Pods: three}, 1, 2, 3, 3, ReasonSufficientPods},
		{"minAvailable 3 of 3 allows none", Input{PDB: pdb(ip(intstr.FromInt32(3)), nil), Pods: three}, 0, 3, 3, 3, ReasonInsufficientPods},
		{"not-ready and terminating pods are not healthy", Input{PDB: pdb(ip(intstr.FromInt32(1)), nil),
			Pods: []*corev1.Pod{ready("a"), testutil.Pod("b").Obj(), testutil.Pod("c").Ready(now).Deleting().Obj()}}, 0, 1, 3, 1, ReasonInsufficientPods},
		{"maxUnavailable 1 of a 4-replica controller allows 1 when all 4 are ready", Input{PDB: pdb(nil, ip(intstr.FromInt32(1))),
			Pods: append(three, ready("d")), ControllerScale: 4}, 1, 3, 4, 4, ReasonSufficientPods},
		{"minAvailable 50% of 3 rounds up to 2", Input{PDB: pdb(ip(intstr.FromString("50%")), nil), Pods: three, ControllerScale: 3}, 1, 2, 3, 3, ReasonSufficientPods},
		{"maxUnavailable 34% of 3 rounds up to 2 unavailable", Input{PDB: pdb(nil, ip(intstr.FromString("34%"))), Pods: three, ControllerScale: 3}, 2, 1, 3, 3, ReasonSufficientPods},
		{"without controllers, maxUnavailable fails safe", Input{PDB: pdb(nil, ip(intstr.FromInt32(1))), Pods: three, ScaleErr: errors.New("found no controllers for pod \"a\"")},
			0, 0, 0, 0, ReasonSyncFailed},
		{"a pod the apiserver recorded as evicted is not counted healthy", Input{PDB: func() *policyv1.PodDisruptionBudget {
			p := pdb(ip(intstr.FromInt32(1)), nil)
			p.Status.DisruptedPods = map[string]metav1.Time{"a": metav1.NewTime(now.Add(-time.Second))}
			return p
		}(), Pods: three}, 1, 1, 3, 2, ReasonSufficientPods},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Now = now
			st := Compute(tc.in)
			if st.DisruptionsAllowed != tc.wantAllowed || st.DesiredHealthy != tc.wantDesired || st.ExpectedPods != tc.wantExpected || st.CurrentHealthy != tc.wantCurrent {
				t.Errorf("status %+v", st)
			}
			if st.ObservedGeneration != 2 || len(st.Conditions) != 1 || st.Conditions[0].Reason != tc.wantReason {
				t.Errorf("observedGeneration %d conditions %+v, want reason %s", st.ObservedGeneration, st.Conditions, tc.wantReason)
			}
		})
	}
}

func TestPlan(t *testing.T) {
	now := testutil.T0
	three := []*corev1.Pod{testutil.Pod("a").Ready(now).Obj(), testutil.Pod("b").Ready(now).Obj(), testutil.Pod("c").Ready(now).Obj()}
	current := pdb(ip(intstr.FromInt32(2)), nil)
	current.Status = Compute(Input{PDB: current, Pods: three, Now: now})
	evicted := pdb(ip(intstr.FromInt32(1)), nil)
	evicted.Status.DisruptedPods = map[string]metav1.Time{"a": metav1.NewTime(now.Add(-30 * time.Second)), "b": metav1.NewTime(now.Add(-time.Minute))}
	noControllers := errNoController(three[0])
	cases := []struct {
		name        string
		in          Input
		want        []ActionType
		wantRequeue time.Duration
	}{
		{"a new budget gets its status", Input{PDB: pdb(ip(intstr.FromInt32(2)), nil), Pods: three}, []ActionType{UpdateStatus}, 0},
		{"a budget whose status is current is not written", Input{PDB: current, Pods: three}, nil, 0},
		{"a percentage without controllers reports NoControllers, then the failed status",
			Input{PDB: pdb(ip(intstr.FromString("50%")), nil), Pods: three, ScaleErr: noControllers}, []ActionType{RecordNoControllers, UpdateStatus}, 0},
		{"a scale that failed otherwise (a kind without scale) is no NoControllers event",
			Input{PDB: pdb(ip(intstr.FromString("50%")), nil), Pods: three, ScaleErr: errors.New("crontabs.example.com does not implement the scale subresource")},
			[]ActionType{UpdateStatus}, 0},
		{"a whole minAvailable needs no controllers: no event",
			Input{PDB: pdb(ip(intstr.FromInt32(2)), nil), Pods: three, ScaleErr: noControllers}, []ActionType{UpdateStatus}, 0},
		{"recorded evictions bring a look when the first times out",
			Input{PDB: evicted, Pods: three}, []ActionType{UpdateStatus}, time.Minute},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Now = now
			out := Plan(tc.in)
			var got []ActionType
			for _, a := range out.Actions {
				got = append(got, a.Type)
			}
			if !slices.Equal(got, tc.want) || out.RequeueAfter != tc.wantRequeue {
				t.Errorf("actions %v requeue %v, want %v requeue %v", got, out.RequeueAfter, tc.want, tc.wantRequeue)
			}
		})
	}
}
