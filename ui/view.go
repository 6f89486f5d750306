package ui

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"

	"minik/scheduler"
)

// The browser gets slim views of the objects: what the panels draw, so
// that 3,000 pods stay a small snapshot.

type podView struct {
	Namespace string    `json:"ns"`
	Name      string    `json:"name"`
	UID       string    `json:"uid"`
	Node      string    `json:"node,omitempty"`
	Phase     string    `json:"phase"`
	Reason    string    `json:"reason,omitempty"` // a waiting container's reason, or Unschedulable
	Restarts  int32     `json:"restarts"`
	Ready     bool      `json:"ready"`
	Created   time.Time `json:"created"`
	Deleting  bool      `json:"deleting,omitempty"`
}

func viewPod(p *corev1.Pod) podView {
	v := podView{Namespace: p.Namespace, Name: p.Name, UID: string(p.UID), Node: p.Spec.NodeName, Phase: string(p.Status.Phase),
		Created: p.CreationTimestamp.Time, Deleting: p.DeletionTimestamp != nil}
	if v.Phase == "" {
		v.Phase = string(corev1.PodPending)
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			v.Ready = true
		}
		if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonUnschedulable {
			v.Reason = c.Reason
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		v.Restarts += cs.RestartCount
		if cs.State.Waiting != nil && cs.State.Waiting.Reason != "" {
			v.Reason = cs.State.Waiting.Reason
		}
	}
	return v
}

type nodeView struct {
	Name          string            `json:"name"`
	Capacity      map[string]string `json:"capacity"`
	Taints        []string          `json:"taints,omitempty"`
	Conditions    map[string]string `json:"conditions"` // type → status
	Ready         bool              `json:"ready"`
	Unschedulable bool              `json:"unschedulable,omitempty"`
}

func viewNode(n *corev1.Node) nodeView {
	v := nodeView{Name: n.Name, Capacity: map[string]string{}, Conditions: map[string]string{}, Unschedulable: n.Spec.Unschedulable}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods} {
		if q, ok := n.Status.Allocatable[r]; ok {
			v.Capacity[string(r)] = q.String()
		}
	}
	for _, t := range n.Spec.Taints {
		s := t.Key
		if t.Value != "" {
			s += "=" + t.Value
		}
		v.Taints = append(v.Taints, s+":"+string(t.Effect))
	}
	for _, c := range n.Status.Conditions {
		v.Conditions[string(c.Type)] = string(c.Status)
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			v.Ready = true
		}
	}
	return v
}

type eventView struct {
	Time      time.Time `json:"time"`
	Type      string    `json:"type"`
	Reason    string    `json:"reason"`
	Kind      string    `json:"kind"`
	Namespace string    `json:"ns,omitempty"`
	Name      string    `json:"name"`
	Message   string    `json:"message"`
	Source    string    `json:"source,omitempty"`
	Count     int32     `json:"count,omitempty"`
}

func viewEvent(e *corev1.Event, seen time.Time) eventView {
	v := eventView{Time: seen, Type: e.Type, Reason: e.Reason, Kind: e.InvolvedObject.Kind, Namespace: e.InvolvedObject.Namespace,
		Name: e.InvolvedObject.Name, Message: e.Message, Source: e.Source.Component, Count: e.Count}
	if v.Source == "" {
		v.Source = e.ReportingController
	}
	return v
}

// explainView is scheduler.Explanation for the Scheduling panel.
type explainView struct {
	Pod       string            `json:"pod"`
	Filters   []string          `json:"filters"` // plugin names, the table's columns
	Nodes     []explainNodeView `json:"nodes"`
	Scores    []scoreView       `json:"scores,omitempty"`
	Scored    []string          `json:"scored,omitempty"`
	Totals    map[string]int64  `json:"totals,omitempty"`
	Chosen    string            `json:"chosen,omitempty"`
	BoundTo   string            `json:"boundTo,omitempty"`
	Message   string            `json:"message,omitempty"`
	PreFilter string            `json:"preFilter,omitempty"`
}

type explainNodeView struct {
	Node     string            `json:"node"`
	Feasible bool              `json:"feasible"`
	Verdicts map[string]string `json:"verdicts"` // plugin → "" (passed), "skip" or the reason
}

type scoreView struct {
	Plugin string  `json:"plugin"`
	Weight int64   `json:"weight"`
	Scores []int64 `json:"scores"`
	Skip   bool    `json:"skip,omitempty"`
}

func viewExplanation(e *scheduler.Explanation) explainView {
	v := explainView{Pod: e.Pod.Namespace + "/" + e.Pod.Name, Scored: e.Scored, Chosen: e.Chosen, BoundTo: e.BoundTo, Message: e.Message}
	if e.PreFilter != nil {
		v.PreFilter = e.PreFilter.Message()
	}
	seen := map[string]bool{}
	for _, n := range e.Nodes {
		nv := explainNodeView{Node: n.Node, Feasible: n.Feasible, Verdicts: map[string]string{}}
		for _, f := range n.Filters {
			if !seen[f.Plugin] {
				seen[f.Plugin] = true
				v.Filters = append(v.Filters, f.Plugin)
			}
			switch {
			case f.Skip:
				nv.Verdicts[f.Plugin] = "skip"
			case !f.Status.IsSuccess():
				nv.Verdicts[f.Plugin] = f.Status.Message()
			default:
				nv.Verdicts[f.Plugin] = ""
			}
		}
		v.Nodes = append(v.Nodes, nv)
	}
	sort.Slice(v.Nodes, func(i, j int) bool { return v.Nodes[i].Node < v.Nodes[j].Node })
	for _, s := range e.Scores {
		v.Scores = append(v.Scores, scoreView{Plugin: s.Plugin, Weight: s.Weight, Scores: s.Scores, Skip: s.Skip})
	}
	if len(e.Totals) > 0 {
		v.Totals = map[string]int64{}
		for _, t := range e.Totals {
			v.Totals[t.Name] = t.Score
		}
	}
	return v
}
