// Package plugins lists every scheduler plugin, in one place. Each plugin
// lives in its own package below this one: a reader looking for taints
// finds them in tainttoleration/.
package plugins

import (
	"minik/scheduler/framework"
	"minik/scheduler/plugins/balancedallocation"
	"minik/scheduler/plugins/defaultbinder"
	"minik/scheduler/plugins/defaultpreemption"
	"minik/scheduler/plugins/imagelocality"
	"minik/scheduler/plugins/interpodaffinity"
	"minik/scheduler/plugins/nodeaffinity"
	"minik/scheduler/plugins/nodename"
	"minik/scheduler/plugins/nodeports"
	"minik/scheduler/plugins/noderesources"
	"minik/scheduler/plugins/nodeunschedulable"
	"minik/scheduler/plugins/podtopologyspread"
	"minik/scheduler/plugins/tainttoleration"
	"minik/scheduler/plugins/volumebinding"
	"minik/scheduler/plugins/volumerestrictions"
)

// Default score weights, as in kube-scheduler's default profile.
const (
	WeightTaintToleration    = 3
	WeightNodeAffinity       = 2
	WeightPodTopologySpread  = 2
	WeightInterPodAffinity   = 2
	WeightNodeResourcesFit   = 1
	WeightBalancedAllocation = 1
	WeightImageLocality      = 1
)

// API is what the plugins that write need: binding pods, and recording
// the selected node on claims.
type API interface {
	defaultbinder.API
	volumebinding.ClaimPatcher
}

// DefaultProfile returns the default plugins in the order kube-scheduler
// runs them: cheap, decisive filters first. api may be nil for a
// profile that only evaluates (as `minik explain` does).
func DefaultProfile(schedulerName string, api API) framework.Profile {
	var (
		unschedulable = nodeunschedulable.New()
		name          = nodename.New()
		taints        = tainttoleration.New()
		nodeAffinity  = nodeaffinity.New()
		ports         = nodeports.New()
		fit           = noderesources.New()
		spread        = podtopologyspread.New()
		podAffinity   = interpodaffinity.New()
		balanced      = balancedallocation.New()
		images        = imagelocality.New()
		restrictions  = volumerestrictions.New()
		volumes       = volumebinding.New(nil)
	)
	if api != nil {
		volumes = volumebinding.New(api)
	}
	p := framework.Profile{
		SchedulerName: schedulerName,
		PreFilter:     []framework.PreFilterPlugin{nodeAffinity, ports, fit, restrictions, volumes, spread, podAffinity},
		Filter:        []framework.FilterPlugin{unschedulable, name, taints, nodeAffinity, ports, fit, volumes, spread, podAffinity},
		PreBind:       []framework.PreBindPlugin{volumes},
		PostFilter:    []framework.PostFilterPlugin{defaultpreemption.New()},
		PreScore:      []framework.PreScorePlugin{nodeAffinity, podAffinity, spread, balanced, images},
		Score: []framework.ScorePluginWeight{
			{Plugin: taints, Weight: WeightTaintToleration},
			{Plugin: nodeAffinity, Weight: WeightNodeAffinity},
			{Plugin: spread, Weight: WeightPodTopologySpread},
			{Plugin: podAffinity, Weight: WeightInterPodAffinity},
			{Plugin: fit, Weight: WeightNodeResourcesFit},
			{Plugin: balanced, Weight: WeightBalancedAllocation},
			{Plugin: images, Weight: WeightImageLocality},
		},
	}
	if api != nil {
		p.Bind = []framework.BindPlugin{defaultbinder.New(api)}
	}
	return p
}
