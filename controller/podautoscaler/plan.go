// Package podautoscaler is the HorizontalPodAutoscaler controller: every
// sync period it reads the target's scale and its pods' usage from
// metrics.k8s.io, plans the replica count with Kubernetes' algorithm
// (Plan, pure) and sets it through the target's scale subresource:
//
//	every sync period ─▶ GET the target's scale, the pods' usage (metrics.k8s.io)
//	   ─▶ Plan(HPA, scale, pods, usage, state, now) ─▶ Output{[Rescale], events, [UpdateStatus]}, state
//	   ─▶ Rescale through the Sink ─▶ Rescaled: its outcome into the status and events
//	   ─▶ framework.Execute(the rest)
package podautoscaler

import (
	"fmt"
	"math"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"minik/controller/framework"
)

// Config holds the controller's settings, with kube-controller-manager's
// defaults.
type Config struct {
	// SyncPeriod is how often each HPA is reconciled (default 15s,
	// --horizontal-pod-autoscaler-sync-period).
	SyncPeriod time.Duration
	// Tolerance is the usage ratio distance from 1.0 within which nothing
	// changes (--horizontal-pod-autoscaler-tolerance). Nil means the
	// default, 0.1; 0 scales on any distance.
	Tolerance *float64
	// DownscaleStabilization is the scale-down stabilization window of HPAs
	// without a behavior (or one without scaleDown.stabilizationWindowSeconds)
	// (--horizontal-pod-autoscaler-downscale-stabilization). Nil means the
	// default, 5m; 0 scales down at once.
	DownscaleStabilization *time.Duration
	// CPUInitializationPeriod (default 5m,
	// --horizontal-pod-autoscaler-cpu-initialization-period) and
	// InitialReadinessDelay (default 30s,
	// --horizontal-pod-autoscaler-initial-readiness-delay) decide which
	// CPU samples of new pods count. Nil means the default; 0 counts a
	// ready pod's samples at once.
	CPUInitializationPeriod *time.Duration
	InitialReadinessDelay   *time.Duration
}

func (c *Config) defaults() {
	if c.SyncPeriod <= 0 {
		c.SyncPeriod = 15 * time.Second
	}
	if c.Tolerance == nil {
		c.Tolerance = ptr.To(0.1)
	}
	if c.DownscaleStabilization == nil {
		c.DownscaleStabilization = ptr.To(5 * time.Minute)
	}
	if c.CPUInitializationPeriod == nil {
		c.CPUInitializationPeriod = ptr.To(5 * time.Minute)
	}
	if c.InitialReadinessDelay == nil {
		c.InitialReadinessDelay = ptr.To(30 * time.Second)
	}
}

// Recommendation is one unstabilized replica count the controller
// computed, kept for the stabilization windows.
type Recommendation struct {
	Replicas int32
	At       time.Time
}

// ScaleEvent is one change of the replica count the controller made, kept
// for the behavior policies' periods.
type ScaleEvent struct {
	Change int32
	At     time.Time
}

// State is what the controller remembers of one HPA between syncs.
type State struct {
	Recommendations []Recommendation
	ScaleUps        []ScaleEvent
	ScaleDowns      []ScaleEvent
}

// Input is what one sync observed.
type Input struct {
	HPA *autoscalingv2.HorizontalPodAutoscaler
	// SpecReplicas and StatusReplicas are the target's scale.
	SpecReplicas, StatusReplicas int32
	// Pods are the pods the target's selector selects.
	Pods []*corev1.Pod
	// Usage is each pod's usage by resource; UsageErr is why it could not
	// be read.
	Usage    map[corev1.ResourceName]map[string]PodUsage
	UsageErr error
	// ScaleErr is why the target's scale could not be read: the sync
	// only reports it.
	ScaleErr error
	State    State
	Now      time.Time
	Config   Config
}

// Event is an event to record on the HPA.
type Event struct {
	Type, Reason, Message string
}

// ActionType says what an Action does.
type ActionType string

// The steps of a sync, in the order Plan gives them.
const (
	// Rescale sets the target's spec.replicas to Replicas through its
	// scale subresource.
	Rescale ActionType = "Rescale"
	// RecordEvent records Event on the HPA.
	RecordEvent ActionType = "RecordEvent"
	// UpdateStatus writes Status as the HPA's status.
	UpdateStatus ActionType = "UpdateStatus"
)

// Action is one step for the driver, about the HPA named HPA
// ("namespace/name").
type Action struct {
	Type     ActionType
	HPA      string
	Replicas int32
	// Reason is why the count changes ("cpu resource utilization
	// (percentage of request) above target").
	Reason string
	Event  Event
	Status *autoscalingv2.HorizontalPodAutoscalerStatus
}

// String names the action and its HPA, and an event's reason.
func (a Action) String() string {
	if a.Type == RecordEvent {
		return string(a.Type) + " " + a.HPA + " " + a.Event.Reason
	}
	return string(a.Type) + " " + a.HPA
}

// Output is the plan of one sync: a rescale, the events, the new status;
// the next sync comes after the sync period.
type Output = framework.Output[Action]

// decision is what one sync decided, before it is put as actions.
type decision struct {
	Rescale  bool
	Replicas int32
	Reason   string
	Status   autoscalingv2.HorizontalPodAutoscalerStatus
	Events   []Event
	State    State
}

// Plan decides one sync of an HPA, as upstream's reconcileAutoscaler: a
// target outside [min, max] is brought inside; otherwise each metric
// proposes a count (the largest wins), stabilized over the recent
// recommendations and limited by the scaling policies. It returns the
// actions and the state to keep for the next sync. A Rescale comes first,
// and the status after it does not say yet how it went: the driver feeds
// its outcome back with Rescaled.
func Plan(in Input) (Output, State) {
	cfg := in.Config
	cfg.defaults()
	hpa := in.HPA
	key := hpa.Namespace + "/" + hpa.Name
	out := Output{RequeueAfter: cfg.SyncPeriod}
	event := func(e Event) { out.Actions = append(out.Actions, Action{Type: RecordEvent, HPA: key, Event: e}) }
	if in.ScaleErr != nil {
		event(Event{corev1.EventTypeWarning, "FailedGetScale", in.ScaleErr.Error()})
		st := hpa.Status.DeepCopy()
		setCondition(st, autoscalingv2.AbleToScale, corev1.ConditionFalse, "FailedGetScale",
			"the HPA controller was unable to get the target's current scale: "+in.ScaleErr.Error(), metav1.NewTime(in.Now))
		out.Actions = append(out.Actions, statusUpdate(hpa, *st)...)
		return out, in.State
	}
	d := decide(in)
	if d.Rescale {
		out.Actions = append(out.Actions, Action{Type: Rescale, HPA: key, Replicas: d.Replicas, Reason: d.Reason})
	}
	for _, e := range d.Events {
		event(e)
	}
	if d.Rescale {
		// Rescaled compares it once it says how the rescale went.
		out.Actions = append(out.Actions, Action{Type: UpdateStatus, HPA: key, Status: &d.Status})
	} else {
		out.Actions = append(out.Actions, statusUpdate(hpa, d.Status)...)
	}
	return out, d.State
}

// Rescaled returns the actions after a Rescale (rest) with its outcome
// fed back: AbleToScale says whether the target scale was updated; a
// failure records FailedRescale instead of SuccessfulRescale and leaves
// the desired count and lastScaleTime as they were.
func Rescaled(in Input, rescale Action, rest []Action, err error) []Action {
	var out []Action
	if err != nil {
		out = append(out, Action{Type: RecordEvent, HPA: rescale.HPA, Event: Event{corev1.EventTypeWarning, "FailedRescale",
			fmt.Sprintf("New size: %d; reason: %s; error: %v", rescale.Replicas, rescale.Reason, err)}})
	}
	for _, a := range rest {
		switch {
		case a.Type == RecordEvent && a.Event.Reason == "SuccessfulRescale" && err != nil:
			continue
		case a.Type == UpdateStatus:
			st := a.Status.DeepCopy()
			ScaleUpdated(st, rescale.Replicas, err, in.Now)
			if err != nil {
				st.DesiredReplicas, st.LastScaleTime = in.StatusReplicas, in.HPA.Status.LastScaleTime
			}
			out = append(out, statusUpdate(in.HPA, *st)...)
			continue
		}
		out = append(out, a)
	}
	return out
}

// statusUpdate writes st unless the HPA has it already.
func statusUpdate(hpa *autoscalingv2.HorizontalPodAutoscaler, st autoscalingv2.HorizontalPodAutoscalerStatus) []Action {
	if apiequality.Semantic.DeepEqual(hpa.Status, st) {
		return nil
	}
	return []Action{{Type: UpdateStatus, HPA: hpa.Namespace + "/" + hpa.Name, Status: &st}}
}

// decide is the reasoning of Plan, before it is put as actions.
func decide(in Input) decision {
	cfg := in.Config
	cfg.defaults()
	hpa := in.HPA
	out := decision{State: in.State}
	st := hpa.Status.DeepCopy()
	st.ObservedGeneration = &hpa.Generation
	now := metav1.NewTime(in.Now)
	cond := func(t autoscalingv2.HorizontalPodAutoscalerConditionType, s corev1.ConditionStatus, reason, msg string) {
		setCondition(st, t, s, reason, msg, now)
	}
	minReplicas := int32(1)
	if hpa.Spec.MinReplicas != nil {
		minReplicas = *hpa.Spec.MinReplicas
	}
	current := in.SpecReplicas
	st.CurrentReplicas = in.StatusReplicas
	cond(autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededGetScale", "the HPA controller was able to get the target's current scale")
	desired := int32(0)
	reason := ""
	switch {
	case current == 0 && minReplicas != 0:
		// Scaled to zero by hand: autoscaling is off until scaled up again.
		cond(autoscalingv2.ScalingActive, corev1.ConditionFalse, "ScalingDisabled", "scaling is disabled since the replica count of the target is zero")
		st.DesiredReplicas = 0
		out.Status = *st
		return out
	case current > hpa.Spec.MaxReplicas:
		desired, reason = hpa.Spec.MaxReplicas, "Current number of replicas above Spec.MaxReplicas"
	case current < minReplicas:
		desired, reason = minReplicas, "Current number of replicas below Spec.MinReplicas"
	default:
		proposal, metricName, statuses, metricErrs, err := metricsReplicas(in, current, cfg)
		st.CurrentMetrics = statuses
		// Each metric that failed gets its event, as upstream.
		for _, me := range metricErrs {
			out.Events = append(out.Events, Event{corev1.EventTypeWarning, me.reason, me.Error()})
		}
		if err != nil {
			out.Events = append(out.Events, Event{corev1.EventTypeWarning, "FailedComputeMetricsReplicas", err.Error()})
			st.DesiredReplicas = current
			out.Status = *st
			setCondition(&out.Status, autoscalingv2.ScalingActive, corev1.ConditionFalse, metricErrs[0].reason,
				"the HPA was unable to compute the replica count: "+metricErrs[0].Error(), now)
			return out
		}
		cond(autoscalingv2.ScalingActive, corev1.ConditionTrue, "ValidMetricFound",
			"the HPA was able to successfully calculate a replica count from "+metricName)
		if proposal > current {
			reason = metricName + " above target"
		} else {
			reason = "All metrics below target"
		}
		if hpa.Spec.Behavior == nil {
			desired = out.normalize(st, current, proposal, minReplicas, hpa.Spec.MaxReplicas, cfg, in.Now)
		} else {
			desired = out.normalizeWithBehavior(st, hpa.Spec.Behavior, current, proposal, minReplicas, hpa.Spec.MaxReplicas, cfg, in.Now)
		}
	}
	if desired != current {
		out.Rescale, out.Replicas, out.Reason = true, desired, reason
		out.Events = append(out.Events, Event{corev1.EventTypeNormal, "SuccessfulRescale", fmt.Sprintf("New size: %d; reason: %s", desired, reason)})
		st.LastScaleTime = &now
		if hpa.Spec.Behavior != nil {
			out.State = recordScale(out.State, hpa.Spec.Behavior, current, desired, in.Now)
		}
	}
	st.DesiredReplicas = desired
	out.Status = *st
	return out
}

// ScaleUpdated sets AbleToScale from the outcome of the scale update.
func ScaleUpdated(st *autoscalingv2.HorizontalPodAutoscalerStatus, replicas int32, err error, now time.Time) {
	if err != nil {
		setCondition(st, autoscalingv2.AbleToScale, corev1.ConditionFalse, "FailedUpdateScale",
			"the HPA controller was unable to update the target scale: "+err.Error(), metav1.NewTime(now))
		return
	}
	setCondition(st, autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededRescale",
		fmt.Sprintf("the HPA controller was able to update the target scale to %d", replicas), metav1.NewTime(now))
}

// metricError is a metric that could not be computed, with the reason of
// the ScalingActive condition (FailedGetResourceMetric, ...).
type metricError struct {
	reason string
	err    error
}

func (e *metricError) Error() string { return e.err.Error() }

// metricsReplicas is the largest proposal over the HPA's metrics, the name
// of the metric that made it, each metric's status and the errors of the
// invalid ones. An invalid metric fails the sync (err) when every metric
// is invalid, or when the valid ones propose a scale down (which an
// unknown metric might contradict).
func metricsReplicas(in Input, current int32, cfg Config) (int32, string, []autoscalingv2.MetricStatus, []*metricError, error) {
	var statuses []autoscalingv2.MetricStatus
	var errs []*metricError
	best, name := int32(0), ""
	for _, m := range in.HPA.Spec.Metrics {
		proposal, metricName, status, err := metricReplicas(in, m, current, cfg)
		if err != nil {
			errs = append(errs, err)
			statuses = append(statuses, autoscalingv2.MetricStatus{})
			continue
		}
		statuses = append(statuses, status)
		if proposal > best || name == "" {
			best, name = proposal, metricName
		}
	}
	if len(errs) > 0 && (len(errs) >= len(in.HPA.Spec.Metrics) || best < current) {
		return 0, "", statuses, errs, fmt.Errorf("invalid metrics (%d invalid out of %d), first error is: %w", len(errs), len(in.HPA.Spec.Metrics), errs[0])
	}
	return best, name, statuses, errs, nil
}

func metricReplicas(in Input, m autoscalingv2.MetricSpec, current int32, cfg Config) (int32, string, autoscalingv2.MetricStatus, *metricError) {
	if m.Type != autoscalingv2.ResourceMetricSourceType || m.Resource == nil {
		reason := "FailedGet" + string(m.Type) + "Metric"
		return 0, "", autoscalingv2.MetricStatus{}, &metricError{reason: reason,
			err: fmt.Errorf("unable to get %s metric: minik serves only the resource metrics API (metrics.k8s.io)", m.Type)}
	}
	res := m.Resource.Name
	fail := func(err error) (int32, string, autoscalingv2.MetricStatus, *metricError) {
		what := "resource metric value"
		if m.Resource.Target.AverageUtilization != nil {
			what = "utilization"
		}
		return 0, "", autoscalingv2.MetricStatus{}, &metricError{reason: "FailedGetResourceMetric",
			err: fmt.Errorf("failed to get %s %s: %w", res, what, err)}
	}
	if in.UsageErr != nil {
		return fail(fmt.Errorf("unable to get metrics for resource %s: %w", res, in.UsageErr))
	}
	usage := in.Usage[res]
	if len(usage) == 0 {
		return fail(fmt.Errorf("unable to get metrics for resource %s: no metrics returned from resource metrics API", res))
	}
	status := autoscalingv2.MetricStatus{Type: autoscalingv2.ResourceMetricSourceType,
		Resource: &autoscalingv2.ResourceMetricStatus{Name: res}}
	t := m.Resource.Target
	if t.AverageValue != nil {
		replicas, _, raw, err := resourceReplicas(current, 0, t.AverageValue.MilliValue(), res, in.Pods, usage, cfg, in.Now)
		if err != nil {
			return fail(err)
		}
		status.Resource.Current.AverageValue = resource.NewMilliQuantity(raw, t.AverageValue.Format)
		return replicas, fmt.Sprintf("%s resource", res), status, nil
	}
	if t.AverageUtilization == nil {
		return fail(fmt.Errorf("invalid resource metric source: neither a utilization target nor a value target was set"))
	}
	replicas, utilization, raw, err := resourceReplicas(current, *t.AverageUtilization, 0, res, in.Pods, usage, cfg, in.Now)
	if err != nil {
		return fail(err)
	}
	format := resource.DecimalSI
	if res == corev1.ResourceMemory {
		format = resource.BinarySI
	}
	status.Resource.Current.AverageUtilization = &utilization
	status.Resource.Current.AverageValue = resource.NewMilliQuantity(raw, format)
	return replicas, fmt.Sprintf("%s resource utilization (percentage of request)", res), status, nil
}

// normalize is the path of an HPA without behavior: the highest
// recommendation of the downscale stabilization window, then a scale up
// of at most max(2×current, 4), within [min, max].
func (out *decision) normalize(st *autoscalingv2.HorizontalPodAutoscalerStatus, current, proposal, minR, maxR int32, cfg Config, now time.Time) int32 {
	stabilized := proposal
	cutoff := now.Add(-*cfg.DownscaleStabilization)
	for _, r := range out.State.Recommendations {
		if !r.At.Before(cutoff) && r.Replicas > stabilized {
			stabilized = r.Replicas
		}
	}
	out.State.Recommendations = keepRecommendations(out.State.Recommendations, cutoff, Recommendation{proposal, now})
	t := metav1.NewTime(now)
	if stabilized != proposal {
		setCondition(st, autoscalingv2.AbleToScale, corev1.ConditionTrue, "ScaleDownStabilized",
			"recent recommendations were higher than current one, applying the highest recent recommendation", t)
	} else {
		setCondition(st, autoscalingv2.AbleToScale, corev1.ConditionTrue, "ReadyForNewScale", "recommended size matches current size", t)
	}
	scaleUpLimit := max(2*current, 4)
	maxAllowed, reason, msg := maxR, "TooManyReplicas", "the desired replica count is more than the maximum replica count"
	if maxR > scaleUpLimit {
		maxAllowed, reason, msg = scaleUpLimit, "ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate"
	}
	minAllowed := max(minR, 1)
	desired := stabilized
	switch {
	case desired < minAllowed:
		desired, reason, msg = minAllowed, "TooFewReplicas", "the desired replica count is less than the minimum replica count"
	case desired > maxAllowed:
		desired = maxAllowed
	}
	limited(st, desired != stabilized, reason, msg, t)
	return desired
}

// normalizeWithBehavior is the path of an HPA with a behavior: the
// recommendation held between the lowest of the scale-up window and the
// highest of the scale-down window, then limited by the policies of the
// direction over their periods' past changes, within [min, max].
func (out *decision) normalizeWithBehavior(st *autoscalingv2.HorizontalPodAutoscalerStatus, b *autoscalingv2.HorizontalPodAutoscalerBehavior,
	current, proposal, minR, maxR int32, cfg Config, now time.Time) int32 {
	up, down := rulesOrDefault(b.ScaleUp, true), rulesOrDefault(b.ScaleDown, false)
	upWindow := time.Duration(deref(up.StabilizationWindowSeconds, 0)) * time.Second
	downWindow := *cfg.DownscaleStabilization
	if down.StabilizationWindowSeconds != nil {
		downWindow = time.Duration(*down.StabilizationWindowSeconds) * time.Second
	}
	upRec, downRec := proposal, proposal
	for _, r := range out.State.Recommendations {
		if r.At.After(now.Add(-upWindow)) {
			upRec = min(upRec, r.Replicas)
		}
		if r.At.After(now.Add(-downWindow)) {
			downRec = max(downRec, r.Replicas)
		}
	}
	stabilized := min(max(current, upRec), downRec)
	out.State.Recommendations = keepRecommendations(out.State.Recommendations, now.Add(-max(upWindow, downWindow)), Recommendation{proposal, now})
	t := metav1.NewTime(now)
	switch {
	case stabilized < proposal:
		setCondition(st, autoscalingv2.AbleToScale, corev1.ConditionTrue, "ScaleUpStabilized",
			"recent recommendations were lower than current one, applying the lowest recent recommendation", t)
	case stabilized > proposal:
		setCondition(st, autoscalingv2.AbleToScale, corev1.ConditionTrue, "ScaleDownStabilized",
			"recent recommendations were higher than current one, applying the highest recent recommendation", t)
	default:
		setCondition(st, autoscalingv2.AbleToScale, corev1.ConditionTrue, "ReadyForNewScale", "recommended size matches current size", t)
	}
	desired, reason, msg := stabilized, "DesiredWithinRange", "the desired count is within the acceptable range"
	switch {
	case stabilized > current:
		limit := max(scaleUpLimit(current, out.State, up, now), current)
		maxAllowed, r, m := maxR, "TooManyReplicas", "the desired replica count is more than the maximum replica count"
		if maxR > limit {
			maxAllowed, r, m = limit, "ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate"
		}
		if stabilized > maxAllowed {
			desired, reason, msg = maxAllowed, r, m
		}
	case stabilized < current:
		limit := min(scaleDownLimit(current, out.State, down, now), current)
		minAllowed, r, m := minR, "TooFewReplicas", "the desired replica count is less than the minimum replica count"
		if minR < limit {
			minAllowed, r, m = limit, "ScaleDownLimit", "the desired replica count is decreasing faster than the maximum scale rate"
		}
		if stabilized < minAllowed {
			desired, reason, msg = minAllowed, r, m
		}
	}
	limited(st, desired != stabilized, reason, msg, t)
	return desired
}

func limited(st *autoscalingv2.HorizontalPodAutoscalerStatus, isLimited bool, reason, msg string, t metav1.Time) {
	if isLimited {
		setCondition(st, autoscalingv2.ScalingLimited, corev1.ConditionTrue, reason, msg, t)
	} else {
		setCondition(st, autoscalingv2.ScalingLimited, corev1.ConditionFalse, "DesiredWithinRange", "the desired count is within the acceptable range", t)
	}
}

func rulesOrDefault(r *autoscalingv2.HPAScalingRules, up bool) *autoscalingv2.HPAScalingRules {
	if r != nil {
		return r
	}
	sel := autoscalingv2.MaxChangePolicySelect
	if up {
		zero := int32(0)
		return &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: &zero, SelectPolicy: &sel,
			Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15},
				{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}}}
	}
	return &autoscalingv2.HPAScalingRules{SelectPolicy: &sel,
		Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}}}
}

// changeInPeriod sums the changes made within the last period seconds.
func changeInPeriod(events []ScaleEvent, periodSeconds int32, now time.Time) int32 {
	cutoff := now.Add(-time.Duration(periodSeconds) * time.Second)
	var n int32
	for _, e := range events {
		if e.At.After(cutoff) {
			n += e.Change
		}
	}
	return n
}

// scaleUpLimit is the most replicas the scale-up policies allow now:
// each policy counts from the replicas at the start of its period (Pods:
// plus value; Percent: times 1+value%), and selectPolicy picks the
// largest (Max), the smallest (Min), or none (Disabled).
func scaleUpLimit(current int32, s State, r *autoscalingv2.HPAScalingRules, now time.Time) int32 {
	sel := autoscalingv2.MaxChangePolicySelect
	if r.SelectPolicy != nil {
		sel = *r.SelectPolicy
	}
	if sel == autoscalingv2.DisabledPolicySelect {
		return current
	}
	result := int32(math.MinInt32)
	if sel == autoscalingv2.MinChangePolicySelect {
		result = math.MaxInt32
	}
	for _, p := range r.Policies {
		start := current - changeInPeriod(s.ScaleUps, p.PeriodSeconds, now) + changeInPeriod(s.ScaleDowns, p.PeriodSeconds, now)
		var proposed int32
		if p.Type == autoscalingv2.PodsScalingPolicy {
			proposed = start + p.Value
		} else {
			proposed = int32(math.Ceil(float64(start) * (1 + float64(p.Value)/100)))
		}
		if sel == autoscalingv2.MinChangePolicySelect {
			result = min(result, proposed)
		} else {
			result = max(result, proposed)
		}
	}
	return result
}

// scaleDownLimit is the fewest replicas the scale-down policies allow now
// (Pods: minus value; Percent: times 1-value%); Max selects the largest
// change, so the smallest count.
func scaleDownLimit(current int32, s State, r *autoscalingv2.HPAScalingRules, now time.Time) int32 {
	sel := autoscalingv2.MaxChangePolicySelect
	if r.SelectPolicy != nil {
		sel = *r.SelectPolicy
	}
	if sel == autoscalingv2.DisabledPolicySelect {
		return current
	}
	result := int32(math.MaxInt32)
	if sel == autoscalingv2.MinChangePolicySelect {
		result = math.MinInt32
	}
	for _, p := range r.Policies {
		start := current - changeInPeriod(s.ScaleUps, p.PeriodSeconds, now) + changeInPeriod(s.ScaleDowns, p.PeriodSeconds, now)
		var proposed int32
		if p.Type == autoscalingv2.PodsScalingPolicy {
			proposed = start - p.Value
		} else {
			proposed = int32(float64(start) * (1 - float64(p.Value)/100))
		}
		if sel == autoscalingv2.MinChangePolicySelect {
			result = max(result, proposed)
		} else {
			result = min(result, proposed)
		}
	}
	return result
}

// recordScale keeps a scale change for the policies' periods, dropping
// the changes older than the longest period.
func recordScale(s State, b *autoscalingv2.HorizontalPodAutoscalerBehavior, from, to int32, now time.Time) State {
	longest := int32(0)
	for _, r := range []*autoscalingv2.HPAScalingRules{rulesOrDefault(b.ScaleUp, true), rulesOrDefault(b.ScaleDown, false)} {
		for _, p := range r.Policies {
			longest = max(longest, p.PeriodSeconds)
		}
	}
	cutoff := now.Add(-time.Duration(longest) * time.Second)
	keep := func(events []ScaleEvent) []ScaleEvent {
		var out []ScaleEvent
		for _, e := range events {
			if e.At.After(cutoff) {
				out = append(out, e)
			}
		}
		return out
	}
	s.ScaleUps, s.ScaleDowns = keep(s.ScaleUps), keep(s.ScaleDowns)
	if to > from {
		s.ScaleUps = append(s.ScaleUps, ScaleEvent{to - from, now})
	} else {
		s.ScaleDowns = append(s.ScaleDowns, ScaleEvent{from - to, now})
	}
	return s
}

func keepRecommendations(recs []Recommendation, cutoff time.Time, add Recommendation) []Recommendation {
	var out []Recommendation
	for _, r := range recs {
		if !r.At.Before(cutoff) {
			out = append(out, r)
		}
	}
	return append(out, add)
}

func deref(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}

// setCondition sets a condition, keeping its transition time unless its
// status changes.
func setCondition(st *autoscalingv2.HorizontalPodAutoscalerStatus, t autoscalingv2.HorizontalPodAutoscalerConditionType,
	status corev1.ConditionStatus, reason, msg string, now metav1.Time) {
	for i := range st.Conditions {
		c := &st.Conditions[i]
		if c.Type == t {
			if c.Status != status {
				c.LastTransitionTime = now
			}
			c.Status, c.Reason, c.Message = status, reason, msg
			return
		}
	}
	st.Conditions = append(st.Conditions, autoscalingv2.HorizontalPodAutoscalerCondition{Type: t, Status: status,
		Reason: reason, Message: msg, LastTransitionTime: now})
}
