// Package tainttoleration keeps pods off nodes whose NoSchedule or
// NoExecute taints they do not tolerate, and prefers nodes with fewer
// untolerated PreferNoSchedule taints.
//
// Node conditions (not-ready, unreachable, memory-, disk- and
// pid-pressure) reach this plugin as the taints the node lifecycle
// controller puts on nodes, e.g. node.kubernetes.io/not-ready:NoSchedule.
package tainttoleration

import (
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"minik/scheduler/framework"
)

const (
	// Name is the plugin's name in the registry.
	Name = "TaintToleration"
	// ErrReasonUntoleratedTaint is the rejection reason, upstream's; the
	// taint itself is the status's detail, for minik explain.
	ErrReasonUntoleratedTaint = "node(s) had untolerated taint(s)"
)

// TaintToleration is a filter and score plugin.
type TaintToleration struct{}

var (
	_ framework.FilterPlugin = &TaintToleration{}
	_ framework.ScorePlugin  = &TaintToleration{}
)

// New returns the plugin.
func New() *TaintToleration { return &TaintToleration{} }

// Name implements framework.Plugin.
func (*TaintToleration) Name() string { return Name }

// Filter implements framework.FilterPlugin.
func (*TaintToleration) Filter(_ *framework.CycleState, pod *corev1.Pod, ni *framework.NodeInfo) *framework.Status {
	taint, found := corev1helpers.FindMatchingUntoleratedTaint(logr.Discard(), ni.Node().Spec.Taints, pod.Spec.Tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}, false)
	if !found {
		return nil
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonUntoleratedTaint).WithDetail(taint.ToString())
}

// Score counts the PreferNoSchedule taints the pod does not tolerate; the
// normalization reverses it, so fewer is better.
func (*TaintToleration) Score(_ *framework.CycleState, pod *corev1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	var n int64
	for i := range ni.Node().Spec.Taints {
		t := &ni.Node().Spec.Taints[i]
		if t.Effect == corev1.TaintEffectPreferNoSchedule && !corev1helpers.TolerationsTolerateTaint(logr.Discard(), pod.Spec.Tolerations, t, false) {
			n++
		}
	}
	return n, nil
}

// NormalizeScore implements framework.ScorePlugin.
func (*TaintToleration) NormalizeScore(_ *framework.CycleState, _ *corev1.Pod, scores []framework.NodeScore) *framework.Status {
	return framework.DefaultNormalizeScore(framework.MaxNodeScore, true, scores)
}
