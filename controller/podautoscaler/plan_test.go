package podautoscaler

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// makeHPA is an HPA of Deployment web with a cpu utilization target.
func makeHPA(minR, maxR, target int32) *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Generation: 1},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "web", APIVersion: "apps/v1"},
			MinReplicas:    &minR, MaxReplicas: maxR,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType,
				Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU,
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &target}}}}}}
}

type podBuilder struct{ p *corev1.Pod }

// makePod is a running pod, ready for 10 minutes, requesting cpu.
func makePod(name, cpu string) podBuilder {
	start := metav1.NewTime(t0.Add(-10 * time.Minute))
	return podBuilder{&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &start,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: start}}}}}
}

func (b podBuilder) Pending() podBuilder {
	b.p.Status.Phase, b.p.Status.Conditions = corev1.PodPending, nil
	return b
}

func (b podBuilder) NoRequest() podBuilder {
	b.p.Spec.Containers[0].Resources.Requests = nil
	return b
}

// ReadySince makes the pod start and turn ready d before t0.
func (b podBuilder) ReadySince(d time.Duration) podBuilder {
	at := metav1.NewTime(t0.Add(-d))
	b.p.Status.StartTime, b.p.Status.Conditions[0].LastTransitionTime = &at, at
	return b
}

func (b podBuilder) Obj() *corev1.Pod { return b.p }

// cpuUsage is each pod's cpu in millicores, sampled at t0 over 10s.
func cpuUsage(m map[string]int64) map[corev1.ResourceName]map[string]PodUsage {
	out := map[string]PodUsage{}
	for name, v := range m {
		out[name] = PodUsage{Value: v, Timestamp: t0, Window: 10 * time.Second}
	}
	return map[corev1.ResourceName]map[string]PodUsage{corev1.ResourceCPU: out}
}

func condition(st autoscalingv2.HorizontalPodAutoscalerStatus, t autoscalingv2.HorizontalPodAutoscalerConditionType) string {
	for _, c := range st.Conditions {
		if c.Type == t {
			return fmt.Sprintf("%s/%s", c.Status, c.Reason)
		}
	}
	return "none"
}

func withBehavior(h *autoscalingv2.HorizontalPodAutoscaler, b autoscalingv2.HorizontalPodAutoscalerBehavior) *autoscalingv2.HorizontalPodAutoscaler {
	h.Spec.Behavior = &b
	return h
}

func rules(window int32, sel autoscalingv2.ScalingPolicySelect, policies ...autoscalingv2.HPAScalingPolicy) *autoscalingv2.HPAScalingRules {
	return &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: &window, SelectPolicy: &sel, Policies: policies}
}

func TestPlan(t *testing.T) {
	pods2 := []*corev1.Pod{makePod("a", "100m").Obj(), makePod("b", "100m").Obj()}
	tests := []struct {
		name        string
		in          Input
		rescale     bool
		replicas    int32
		events      []string
		conditions  map[autoscalingv2.HorizontalPodAutoscalerConditionType]string
		utilization int32 // the status' cpu utilization, -1 for none
	}{
		{name: "cpu above target scales up, at most to max(2×current, 4) without a behavior",
			in:      Input{HPA: makeHPA(1, 10, 50), SpecReplicas: 2, StatusReplicas: 2, Pods: pods2, Usage: cpuUsage(map[string]int64{"a": 150, "b": 150})},
			rescale: true, replicas: 4, events: []string{"Normal SuccessfulRescale New size: 4; reason: cpu resource utilization (percentage of request) above target"},
			conditions: map[autoscalingv2.HorizontalPodAutoscalerConditionType]string{autoscalingv2.ScalingActive: "True/ValidMetricFound",
				autoscalingv2.ScalingLimited: "True/ScaleUpLimit", autoscalingv2.AbleToScale: "True/ReadyForNewScale"},
			utilization: 150},
		{name: "the desired count is ceil(current × usage/target): 2 pods at 75% of a 50% target make 3",
			in:      Input{HPA: makeHPA(1, 10, 50), SpecReplicas: 2, StatusReplicas: 2, Pods: pods2, Usage: cpuUsage(map[string]int64{"a": 75, "b": 75})},
			rescale: true, replicas: 3, events: []string{"Normal SuccessfulRescale New size: 3; reason: cpu resource utilization (percentage of request) above target"},
			conditions:  map[autoscalingv2.HorizontalPodAutoscalerConditionType]string{autoscalingv2.ScalingLimited: "False/DesiredWithinRange"},
			utilization: 75},
		{name: "a scale up stops at maxReplicas with TooManyReplicas",
			in:      Input{HPA: makeHPA(1, 3, 50), SpecReplicas: 2, StatusReplicas: 2, Pods: pods2, Usage: cpuUsage(map[string]int64{"a": 150, "b": 150})},
			rescale: true, replicas: 3, events: []string{"Normal SuccessfulRescale New size: 3; reason: cpu resource utilization (percentage of request) above target"},
			conditions:  map[autoscalingv2.HorizontalPodAutoscalerConditionType]string{autoscalingv2.ScalingLimited: "True/TooManyReplicas"},
			utilization: 150},
		{name: "usage within the 10% tolerance changes nothing",
			in:       Input{HPA: makeHPA(1, 10, 50), SpecReplicas: 2, StatusReplicas: 2, Pods: pods2, Usage: cpuUsage(map[string]int64{"a": 54, "b": 54})},
			replicas: 0, conditions: map[autoscalingv2.HorizontalPodAutoscalerConditionType]string{autoscalingv2.AbleToScale: "True/ReadyForNewScale"},
			utilization: 54},
		{name: "a scale down waits for the highest recommendation of the last 300s",
			in: Input{HPA: makeHPA(1, 10, 50), SpecReplicas: 2, StatusReplicas: 2, Pods: pods2, Usage: cpuUsage(map[string]int64{"a": 5, "b": 5}),
				State: State{Recommendations: []Recommendation{{2, t0.Add(-299 * time.Second)}}}},
			conditions:  map[autoscalingv2.HorizontalPodAutoscalerConditionType]string{autoscalingv2.AbleToScale: "True/ScaleDownStabilized"},
			utilization: 5},
		{name: "after the stabilization window the scale down happens, down to minReplicas",
			in: Input{HPA: makeHPA(1, 10, 50), SpecReplicas: 2, StatusReplicas: 2, Pods: pods2, Usage: cpuUsage(map[string]int64{"a": 5, "b": 5}),
				State: State{Recommendations: []Recommendation{{2, t0.Add(-301 * time.Second)}}}},
			rescale: true, replicas: 1, events: []string{"Normal SuccessfulRescale New size: 1; reason: All metrics below target"}, utilization: 5},
		{name: "a stabilization window of 0 (the flag's 0) scales down at once",
			in: Input{HPA: makeHPA(1, 10, 50), SpecReplicas: 2, StatusReplicas: 2, Pods: pods2, Usage: cpuUsage(map[string]int64{"a": 5, "b": 5}),
				State:  State{Recommendations: []Recommendation{{2, t0.Add(-1 * time.Second)}}},
				Config: Config{DownscaleStabilization: ptr.To(time.Duration(0))}},
			rescale: true, replicas: 1, events: []string{"Normal SuccessfulRescale New size: 1; reason: All metrics below target"}, utilization: 5},
		{name: "a pod without metrics counts as using its whole request on a scale down, which then does not happen",
			in: Input{HPA: makeHPA(1, 10, 50), SpecReplicas: 3, StatusReplicas: 3,
				Pods:  []*corev1.Pod{makePod("a", "100m").Obj(), makePod("b", "100m").Obj(), makePod("c", "100m").Obj()},
				Usage: cpuUsage(map[string]int64{"a": 30, "b": 30})},
			utilization: 30},
		{name: "a pending pod counts as using nothing on a scale up",
			in: Input{HPA: makeHPA(1, 10, 50), SpecReplicas: 3, StatusReplicas: 3,
				Pods:  []*corev1.Pod{makePod("a", "100m").Obj(), makePod("b", "100m").Obj(), makePod("c", "100m").Pending().Obj()},
				Usage: cpuUsage(map[string]int64{"a": 100, "b": 100})},
			rescale: true, replicas: 4, events: []string{"Normal SuccessfulRescale New size: 4; reason: cpu resource utilization (percentage of request) above target"},
			utilization: 100},
		{name: "the cpu sample of a pod ready for less than its window is left out during initialization",
			in: Input{HPA: makeHPA(1, 10, 50), SpecReplicas: 2, StatusReplicas: 2,
				Pods:  []*corev1.Pod{makePod("a", "100m").Obj(), makePod("b", "100m").ReadySince(5 * time.Second).Obj()},
				Usage: cpuUsage(map[string]int64{"a": 50, "b": 300})},
			utilization: 50},
		{name: "a container without a cpu request makes the metric invalid",
			in: Input{HPA: makeHPA(1, 10, 50), SpecReplicas: 1, StatusReplicas: 1,
				Pods: []*corev1.Pod{makePod("a", "100m").NoRequest().Obj()}, Usage: cpuUsage(map[string]int64{"a": 50})},
			events: []string{"Warning FailedGetResourceMetric failed to get cpu utilization: missing request for cpu in container c of Pod a",
				"Warning FailedComputeMetricsReplicas invalid metrics (1 invalid out of 1), first error is: failed to get cpu utilization: missing request for cpu in container c of Pod a"},
			conditions: map[autoscalingv2.HorizontalPodAutoscalerConditionType]string{autoscalingv2.ScalingActive: "False/FailedGetResourceMetric"},
			replicas:   1, utilization: -1},
		{name: "no metrics API answer makes the metric invalid",
			in: Input{HPA: makeHPA(1, 10, 50), SpecReplicas: 1, StatusReplicas: 1, Pods: pods2[:1], UsageErr: errors.New("the server is currently unable to handle the request")},
			events: []string{"Warning FailedGetResourceMetric failed to get cpu utilization: unable to get metrics for resource cpu: the server is currently unable to handle the request",
				"Warning FailedComputeMetricsReplicas invalid metrics (1 invalid out of 1), first error is: failed to get cpu utilization: unable to get metrics for resource cpu: the server is currently unable to handle the request"},
			conditions: map[autoscalingv2.HorizontalPodAutoscalerConditionType]string{autoscalingv2.ScalingActive: "False/FailedGetResourceMetric"},
			replicas:   1, utilization: -1},
		{name: "a target above maxReplicas is brought down to it whatever the metrics",
			in:      Input{HPA: makeHPA(1, 3, 50), SpecReplicas: 5, StatusReplicas: 5},
			rescale: true, replicas: 3, events: []string{"Normal SuccessfulRescale New size: 3; reason: Current number of replicas above Spec.MaxReplicas"}, utilization: -1},
		{name: "a target below minReplicas is brought up to it",
			in:      Input{HPA: makeHPA(2, 3, 50), SpecReplicas: 1, StatusReplicas: 1},
			rescale: true, replicas: 2, events: []string{"Normal SuccessfulRescale New size: 2; reason: Current number of replicas below Spec.MinReplicas"}, utilization: -1},
		{name: "a target scaled to zero by hand disables autoscaling",
			in:          Input{HPA: makeHPA(1, 3, 50), SpecReplicas: 0},
			conditions:  map[autoscalingv2.HorizontalPodAutoscalerConditionType]string{autoscalingv2.ScalingActive: "False/ScalingDisabled"},
			utilization: -1},
		{name: "a Pods scale-up policy of 1 per 60s allows one more replica",
			in: Input{HPA: withBehavior(makeHPA(1, 10, 50), autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleUp: rules(0, autoscalingv2.MaxChangePolicySelect, autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PodsScalingPolicy, Value: 1, PeriodSeconds: 60})}),
				SpecReplicas: 2, StatusReplicas: 2, Pods: pods2, Usage: cpuUsage(map[string]int64{"a": 150, "b": 150})},
			rescale: true, replicas: 3, events: []string{"Normal SuccessfulRescale New size: 3; reason: cpu resource utilization (percentage of request) above target"},
			conditions:  map[autoscalingv2.HorizontalPodAutoscalerConditionType]string{autoscalingv2.ScalingLimited: "True/ScaleUpLimit"},
			utilization: 150},
		{name: "a Pods scale-up policy whose period already saw its change allows none",
			in: Input{HPA: withBehavior(makeHPA(1, 10, 50), autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleUp: rules(0, autoscalingv2.MaxChangePolicySelect, autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PodsScalingPolicy, Value: 1, PeriodSeconds: 60})}),
				SpecReplicas: 2, StatusReplicas: 2, Pods: pods2, Usage: cpuUsage(map[string]int64{"a": 150, "b": 150}),
				State: State{ScaleUps: []ScaleEvent{{1, t0.Add(-30 * time.Second)}}}},
			conditions:  map[autoscalingv2.HorizontalPodAutoscalerConditionType]string{autoscalingv2.ScalingLimited: "True/ScaleUpLimit"},
			utilization: 150},
		{name: "selectPolicy Min picks the policy allowing the smaller change",
			in: Input{HPA: withBehavior(makeHPA(1, 20, 50), autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleUp: rules(0, autoscalingv2.MinChangePolicySelect,
					autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 60},
					autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PercentScalingPolicy, Value: 50, PeriodSeconds: 60})}),
				SpecReplicas: 2, StatusReplicas: 2, Pods: pods2, Usage: cpuUsage(map[string]int64{"a": 500, "b": 500})},
			rescale: true, replicas: 3, events: []string{"Normal SuccessfulRescale New size: 3; reason: cpu resource utilization (percentage of request) above target"},
			utilization: 500},
		{name: "a Percent scale-down policy of 50% with no stabilization halves the replicas",
			in: Input{HPA: withBehavior(makeHPA(1, 10, 50), autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleDown: rules(0, autoscalingv2.MaxChangePolicySelect, autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PercentScalingPolicy, Value: 50, PeriodSeconds: 60})}),
				SpecReplicas: 8, StatusReplicas: 8, Pods: pods2, Usage: cpuUsage(map[string]int64{"a": 1, "b": 1})},
			rescale: true, replicas: 4, events: []string{"Normal SuccessfulRescale New size: 4; reason: All metrics below target"},
			conditions:  map[autoscalingv2.HorizontalPodAutoscalerConditionType]string{autoscalingv2.ScalingLimited: "True/ScaleDownLimit"},
			utilization: 1},
		{name: "selectPolicy Disabled on scale down keeps the replicas",
			in: Input{HPA: withBehavior(makeHPA(1, 10, 50), autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleDown: rules(0, autoscalingv2.DisabledPolicySelect, autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15})}),
				SpecReplicas: 4, StatusReplicas: 4, Pods: pods2, Usage: cpuUsage(map[string]int64{"a": 1, "b": 1})},
			conditions:  map[autoscalingv2.HorizontalPodAutoscalerConditionType]string{autoscalingv2.ScalingLimited: "True/ScaleDownLimit"},
			utilization: 1},
		{name: "a scale-up stabilization window holds the lowest recent recommendation",
			in: Input{HPA: withBehavior(makeHPA(1, 10, 50), autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleUp: rules(60, autoscalingv2.MaxChangePolicySelect, autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15})}),
				SpecReplicas: 2, StatusReplicas: 2, Pods: pods2, Usage: cpuUsage(map[string]int64{"a": 100, "b": 100}),
				State: State{Recommendations: []Recommendation{{2, t0.Add(-30 * time.Second)}}}},
			conditions:  map[autoscalingv2.HorizontalPodAutoscalerConditionType]string{autoscalingv2.AbleToScale: "True/ScaleUpStabilized"},
			utilization: 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.Now = t0
			planned, _ := Plan(tt.in)
			out := summarize(tt.in.HPA, planned)
			if out.Rescale != tt.rescale || (tt.rescale && out.Replicas != tt.replicas) {
				t.Errorf("rescale %v to %d, want %v to %d", out.Rescale, out.Replicas, tt.rescale, tt.replicas)
			}
			if !tt.rescale && tt.replicas != 0 && out.Status.DesiredReplicas != tt.replicas {
				t.Errorf("desiredReplicas %d, want %d", out.Status.DesiredReplicas, tt.replicas)
			}
			var got []string
			for _, e := range out.Events {
				got = append(got, strings.Join([]string{e.Type, e.Reason, e.Message}, " "))
			}
			if !slices.Equal(got, tt.events) {
				t.Errorf("events %q, want %q", got, tt.events)
			}
			for ct, want := range tt.conditions {
				if got := condition(out.Status, ct); got != want {
					t.Errorf("condition %s = %s, want %s", ct, got, want)
				}
			}
			var util int32 = -1
			for _, m := range out.Status.CurrentMetrics {
				if m.Resource != nil && m.Resource.Current.AverageUtilization != nil {
					util = *m.Resource.Current.AverageUtilization
				}
			}
			if util != tt.utilization {
				t.Errorf("current utilization %d, want %d", util, tt.utilization)
			}
			if tt.rescale && (out.Status.LastScaleTime == nil || !out.Status.LastScaleTime.Time.Equal(t0)) {
				t.Errorf("lastScaleTime %v, want now", out.Status.LastScaleTime)
			}
		})
	}
}

func TestPlanRemembersRecommendationsAndScaleEvents(t *testing.T) {
	hpa := withBehavior(makeHPA(1, 10, 50), autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleUp: rules(0, autoscalingv2.MaxChangePolicySelect, autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PodsScalingPolicy, Value: 1, PeriodSeconds: 60})})
	pods := []*corev1.Pod{makePod("a", "100m").Obj(), makePod("b", "100m").Obj()}
	in := Input{HPA: hpa, SpecReplicas: 2, StatusReplicas: 2, Pods: pods, Usage: cpuUsage(map[string]int64{"a": 200, "b": 200}), Now: t0}
	planned, state := Plan(in)
	first := summarize(hpa, planned)
	if !first.Rescale || first.Replicas != 3 || len(state.ScaleUps) != 1 || len(state.Recommendations) != 1 {
		t.Fatalf("first sync: rescale %v to %d, state %+v; want 3 and the change remembered", first.Rescale, first.Replicas, state)
	}
	in.SpecReplicas, in.State, in.Now = 3, state, t0.Add(15*time.Second)
	if planned, _ := Plan(in); summarize(hpa, planned).Rescale {
		t.Errorf("15s later the policy allowed another scale up to %d, want none within its 60s period", summarize(hpa, planned).Replicas)
	}
	in.Now = t0.Add(61 * time.Second)
	if planned, _ := Plan(in); summarize(hpa, planned).Replicas != 4 {
		t.Errorf("61s later: %v, want a rescale to 4", planned.Actions)
	}
}

// summary is what a plan does, read from its actions.
type summary struct {
	Rescale  bool
	Replicas int32
	// Status is the status written, the HPA's own if none is.
	Status autoscalingv2.HorizontalPodAutoscalerStatus
	Events []Event
}

func summarize(hpa *autoscalingv2.HorizontalPodAutoscaler, out Output) summary {
	s := summary{Status: hpa.Status}
	for _, a := range out.Actions {
		switch a.Type {
		case Rescale:
			s.Rescale, s.Replicas = true, a.Replicas
		case RecordEvent:
			s.Events = append(s.Events, a.Event)
		case UpdateStatus:
			s.Status = *a.Status
		}
	}
	return s
}

func TestSetConditionKeepsTransitionTimeWhileStatusHolds(t *testing.T) {
	var st autoscalingv2.HorizontalPodAutoscalerStatus
	setCondition(&st, autoscalingv2.AbleToScale, corev1.ConditionTrue, "A", "a", metav1.NewTime(t0))
	setCondition(&st, autoscalingv2.AbleToScale, corev1.ConditionTrue, "B", "b", metav1.NewTime(t0.Add(time.Minute)))
	if c := st.Conditions[0]; !c.LastTransitionTime.Time.Equal(t0) || c.Reason != "B" {
		t.Errorf("condition %+v, want reason B with the first transition time", c)
	}
	setCondition(&st, autoscalingv2.AbleToScale, corev1.ConditionFalse, "C", "c", metav1.NewTime(t0.Add(2*time.Minute)))
	if c := st.Conditions[0]; !c.LastTransitionTime.Time.Equal(t0.Add(2 * time.Minute)) {
		t.Errorf("condition %+v, want a new transition time on a status change", c)
	}
}

func TestPlanPutsTheSyncAsActions(t *testing.T) {
	pods2 := []*corev1.Pod{makePod("a", "100m").Obj(), makePod("b", "100m").Obj()}
	scaleUp := Input{HPA: makeHPA(1, 10, 50), SpecReplicas: 2, StatusReplicas: 2, Pods: pods2,
		Usage: cpuUsage(map[string]int64{"a": 100, "b": 100}), Now: t0}
	settled, _ := Plan(Input{HPA: makeHPA(1, 10, 50), SpecReplicas: 2, StatusReplicas: 2, Pods: pods2,
		Usage: cpuUsage(map[string]int64{"a": 50, "b": 50}), Now: t0})
	unchanged := scaleUp
	unchanged.HPA = makeHPA(1, 10, 50)
	unchanged.HPA.Status = *settled.Actions[len(settled.Actions)-1].Status
	unchanged.Usage = cpuUsage(map[string]int64{"a": 50, "b": 50})
	noScale := scaleUp
	noScale.ScaleErr = errors.New("deployments.apps \"web\" not found")
	cases := []struct {
		name       string
		in         Input
		rescaleErr error // fed back through Rescaled, if the plan rescales
		want       []string
		conditions map[autoscalingv2.HorizontalPodAutoscalerConditionType]string
		desired    int32
	}{
		{name: "a scale up is the rescale, its event, then the status saying it succeeded",
			in: scaleUp, want: []string{"Rescale default/web", "RecordEvent default/web SuccessfulRescale", "UpdateStatus default/web"},
			conditions: map[autoscalingv2.HorizontalPodAutoscalerConditionType]string{autoscalingv2.AbleToScale: "True/SucceededRescale"}, desired: 4},
		{name: "a failed rescale is reported by FailedRescale instead, and the desired count stays the target's",
			in: scaleUp, rescaleErr: errors.New("conflict"),
			want:       []string{"Rescale default/web", "RecordEvent default/web FailedRescale", "UpdateStatus default/web"},
			conditions: map[autoscalingv2.HorizontalPodAutoscalerConditionType]string{autoscalingv2.AbleToScale: "False/FailedUpdateScale"}, desired: 2},
		{name: "a scale that cannot be read is reported, and the status says so",
			in: noScale, want: []string{"RecordEvent default/web FailedGetScale", "UpdateStatus default/web"},
			conditions: map[autoscalingv2.HorizontalPodAutoscalerConditionType]string{autoscalingv2.AbleToScale: "False/FailedGetScale"}},
		{name: "a status the HPA has already is not written again", in: unchanged, want: nil, desired: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, _ := Plan(tc.in)
			actions := out.Actions
			if out.RequeueAfter != 15*time.Second {
				t.Errorf("requeue after %v, want the sync period", out.RequeueAfter)
			}
			if len(actions) > 0 && actions[0].Type == Rescale {
				actions = append([]Action{actions[0]}, Rescaled(tc.in, actions[0], actions[1:], tc.rescaleErr)...)
			}
			var got []string
			for _, a := range actions {
				got = append(got, a.String())
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("actions %q, want %q", got, tc.want)
			}
			st := summarize(tc.in.HPA, Output{Actions: actions}).Status
			for ct, want := range tc.conditions {
				if got := condition(st, ct); got != want {
					t.Errorf("condition %s = %s, want %s", ct, got, want)
				}
			}
			if st.DesiredReplicas != tc.desired {
				t.Errorf("desiredReplicas %d, want %d", st.DesiredReplicas, tc.desired)
			}
		})
	}
}

// TestTolerance: the tolerance is 0.1 unless set; 0 is a setting too
// (--horizontal-pod-autoscaler-tolerance 0, as upstream's flag takes):
// any distance from the target scales.
// checkRescale plans in and checks the replica count of its Rescale
// (want 0: no Rescale).
func checkRescale(t *testing.T, in Input, want int32) {
	t.Helper()
	out, _ := Plan(in)
	var got int32
	if len(out.Actions) > 0 && out.Actions[0].Type == Rescale {
		got = out.Actions[0].Replicas
	}
	if got != want {
		t.Errorf("rescaled to %d, want %d (0: none)", got, want)
	}
}

func TestTolerance(t *testing.T) {
	pods2 := []*corev1.Pod{makePod("a", "100m").Obj(), makePod("b", "100m").Obj()}
	cases := []struct {
		name      string
		tolerance *float64
		usage     int64 // millicores of each pod, against a 50% target of 100m
		want      int32 // 0: no rescale
	}{
		{"unset: 8% above the target is within the default 0.1", nil, 54, 0},
		{"unset: 12% above the target scales", nil, 56, 3},
		{"0: 8% above the target scales", ptr.To(0.0), 54, 3},
		{"0: exactly the target does not", ptr.To(0.0), 50, 0},
		{"0.2: 12% above the target is within it", ptr.To(0.2), 56, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkRescale(t, Input{HPA: makeHPA(1, 10, 50), SpecReplicas: 2, StatusReplicas: 2, Pods: pods2,
				Usage: cpuUsage(map[string]int64{"a": tc.usage, "b": tc.usage}), Config: Config{Tolerance: tc.tolerance}, Now: t0}, tc.want)
		})
	}
}

// TestCPUInitializationPeriod pins the two flags that decide which CPU
// samples of new pods count: a pod ready for 2 minutes, sampled from
// before it was ready, is left out during the default 5m period (a
// scale-up then counts it at 0% usage, which here keeps the ratio at 1),
// and counts once the period is 0.
func TestCPUInitializationPeriod(t *testing.T) {
	pods := []*corev1.Pod{makePod("old", "100m").Obj(), makePod("new", "100m").ReadySince(2 * time.Minute).Obj()}
	usage := cpuUsage(map[string]int64{"old": 100, "new": 100})
	usage[corev1.ResourceCPU]["new"] = PodUsage{Value: 100, Timestamp: t0.Add(-2*time.Minute + 5*time.Second), Window: 10 * time.Second}
	cases := []struct {
		name   string
		period *time.Duration
		want   int32
	}{
		{"unset: the new pod's sample is skipped", nil, 0},
		{"0: the new pod's sample counts", ptr.To(time.Duration(0)), 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkRescale(t, Input{HPA: makeHPA(1, 10, 50), SpecReplicas: 2, StatusReplicas: 2, Pods: pods, Usage: usage,
				Config: Config{CPUInitializationPeriod: tc.period}, Now: t0}, tc.want)
		})
	}
}
