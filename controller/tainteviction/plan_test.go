package tainteviction

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"minik/controller/internal/testutil"
)

func TestDecide(t *testing.T) {
	now := testutil.T0.Add(time.Minute)
	unreachable := corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}
	noSched := corev1.Taint{Key: "x", Effect: corev1.TaintEffectNoSchedule}
	other := corev1.Taint{Key: "maint", Effect: corev1.TaintEffectNoExecute}
	cases := []struct {
		name   string
		pod    *corev1.Pod
		taints []corev1.Taint
		since  time.Time
		want   Decision
	}{
		{"no NoExecute taint keeps the pod", testutil.Pod("p").Obj(), []corev1.Taint{noSched}, time.Time{}, Decision{Verdict: Keep}},
		{"an untolerated NoExecute taint evicts at once", testutil.Pod("p").Obj(), []corev1.Taint{unreachable}, time.Time{}, Decision{Verdict: EvictNow}},
		{"a toleration without seconds keeps the pod forever", testutil.Pod("p").Tolerate(corev1.TaintNodeUnreachable, nil).Obj(), []corev1.Taint{unreachable}, time.Time{}, Decision{Verdict: Keep}},
		{"tolerationSeconds start a countdown now", testutil.Pod("p").Tolerate(corev1.TaintNodeUnreachable, testutil.Int64(300)).Obj(), []corev1.Taint{unreachable}, time.Time{},
			Decision{Verdict: Wait, Since: now, At: now.Add(300 * time.Second)}},
		{"a running countdown keeps its start", testutil.Pod("p").Tolerate(corev1.TaintNodeUnreachable, testutil.Int64(300)).Obj(), []corev1.Taint{unreachable}, now.Add(-100 * time.Second),
			Decision{Verdict: Wait, Since: now.Add(-100 * time.Second), At: now.Add(200 * time.Second)}},
		{"a countdown that ran out evicts", testutil.Pod("p").Tolerate(corev1.TaintNodeUnreachable, testutil.Int64(30)).Obj(), []corev1.Taint{unreachable}, now.Add(-30 * time.Second),
			Decision{Verdict: EvictNow, Since: now.Add(-30 * time.Second)}},
		{"the shortest toleration of several taints wins", testutil.Pod("p").Tolerate(corev1.TaintNodeUnreachable, testutil.Int64(300)).Tolerate("maint", testutil.Int64(10)).Obj(),
			[]corev1.Taint{unreachable, other}, time.Time{}, Decision{Verdict: Wait, Since: now, At: now.Add(10 * time.Second)}},
		{"one untolerated taint among tolerated ones evicts", testutil.Pod("p").Tolerate(corev1.TaintNodeUnreachable, nil).Obj(),
			[]corev1.Taint{unreachable, other}, time.Time{}, Decision{Verdict: EvictNow}},
		{"zero tolerationSeconds evicts at once", testutil.Pod("p").Tolerate(corev1.TaintNodeUnreachable, testutil.Int64(0)).Obj(), []corev1.Taint{unreachable}, time.Time{},
			Decision{Verdict: EvictNow, Since: now}},
		{"a pod already being deleted is left alone", testutil.Pod("p").Deleting().Obj(), []corev1.Taint{unreachable}, time.Time{}, Decision{Verdict: Keep}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Decide(tc.pod, tc.taints, tc.since, now); got != tc.want {
				t.Fatalf("Decide = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestPlan(t *testing.T) {
	now := testutil.T0.Add(time.Minute)
	unreachable := []corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}}
	tolerating := testutil.Pod("p").Tolerate(corev1.TaintNodeUnreachable, testutil.Int64(300)).Obj()
	cases := []struct {
		name        string
		pod         *corev1.Pod
		taints      []corev1.Taint
		since       time.Time
		want        []string
		wantRequeue time.Duration
		wantKeep    time.Time
	}{
		{name: "an untolerated taint: the eviction is recorded, the pod marked, then deleted", pod: testutil.Pod("p").Obj(), taints: unreachable,
			want: []string{"MarkForDeletion default/p", "SetDisruptionTarget default/p", "DeletePod default/p"}},
		{name: "tolerationSeconds: nothing to do but wait, counting down from now", pod: tolerating, taints: unreachable,
			wantRequeue: 300 * time.Second, wantKeep: now},
		{name: "a countdown whose taint went is cancelled", pod: tolerating, since: now.Add(-time.Second),
			want: []string{"CancelEviction default/p"}},
		{name: "a pod gone forgets its countdown", since: now.Add(-time.Second)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, keep := Plan(tc.pod, tc.taints, tc.since, now)
			var got []string
			for _, a := range out.Actions {
				got = append(got, a.String())
			}
			if !slices.Equal(got, tc.want) || out.RequeueAfter != tc.wantRequeue || !keep.Equal(tc.wantKeep) {
				t.Errorf("actions %v requeue %v countdown %v, want %v requeue %v countdown %v", got, out.RequeueAfter, keep, tc.want, tc.wantRequeue, tc.wantKeep)
			}
			for _, a := range out.Actions {
				if a.Type == SetDisruptionTarget && (len(a.Pod.Status.Conditions) != 1 || a.Pod.Status.Conditions[0].Reason != "DeletionByTaintManager") {
					t.Errorf("conditions %+v, want DisruptionTarget by the taint manager", a.Pod.Status.Conditions)
				}
			}
		})
	}
}
