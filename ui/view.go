package ui

import (
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	storagev1 "k8s.io/api/storage/v1"

	"minik/internal/volumeutil"
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
	Claims    []string  `json:"claims,omitempty"` // the PersistentVolumeClaims it mounts
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
	for i := range p.Spec.Volumes {
		if c := volumeutil.ClaimVolumeName(p, &p.Spec.Volumes[i]); c != "" {
			v.Claims = append(v.Claims, c)
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

type serviceView struct {
	Namespace    string            `json:"ns"`
	Name         string            `json:"name"`
	Type         string            `json:"type"`
	ClusterIP    string            `json:"clusterIP,omitempty"` // "None" for a headless Service
	ExternalName string            `json:"externalName,omitempty"`
	Ports        []servicePortView `json:"ports,omitempty"`
	Selector     map[string]string `json:"selector,omitempty"` // none: its EndpointSlices are someone else's
}

type servicePortView struct {
	Name       string `json:"name,omitempty"`
	Protocol   string `json:"protocol"`
	Port       int32  `json:"port"`
	TargetPort string `json:"targetPort"` // a number or a container port's name
	NodePort   int32  `json:"nodePort,omitempty"`
}

func viewService(s *corev1.Service) serviceView {
	v := serviceView{Namespace: s.Namespace, Name: s.Name, Type: string(s.Spec.Type), ClusterIP: s.Spec.ClusterIP,
		ExternalName: s.Spec.ExternalName, Selector: s.Spec.Selector}
	if v.Type == "" {
		v.Type = string(corev1.ServiceTypeClusterIP)
	}
	for _, p := range s.Spec.Ports {
		pv := servicePortView{Name: p.Name, Protocol: string(p.Protocol), Port: p.Port, TargetPort: p.TargetPort.String(), NodePort: p.NodePort}
		if pv.Protocol == "" {
			pv.Protocol = string(corev1.ProtocolTCP)
		}
		// An unset targetPort is the port itself.
		if p.TargetPort.IntVal == 0 && p.TargetPort.StrVal == "" {
			pv.TargetPort = strconv.Itoa(int(p.Port))
		}
		v.Ports = append(v.Ports, pv)
	}
	return v
}

// sliceView is an EndpointSlice: the browser joins a Service's slices by
// the service-name label, so a pod turning not-Ready resends one slice
// (at most 100 endpoints), not every endpoint of its Service.
type sliceView struct {
	Namespace string         `json:"ns"`
	Name      string         `json:"name"`
	Service   string         `json:"service"`
	Endpoints []endpointView `json:"endpoints"`
}

type endpointView struct {
	Addresses   []string `json:"addresses"`
	Pod         string   `json:"pod,omitempty"` // the targetRef's name, when it is a Pod of the slice's namespace
	Node        string   `json:"node,omitempty"`
	Ready       bool     `json:"ready"`
	Serving     bool     `json:"serving"`
	Terminating bool     `json:"terminating,omitempty"`
}

func viewSlice(s *discoveryv1.EndpointSlice) sliceView {
	v := sliceView{Namespace: s.Namespace, Name: s.Name, Service: s.Labels[discoveryv1.LabelServiceName], Endpoints: []endpointView{}}
	for _, e := range s.Endpoints {
		c := e.Conditions
		// The API's reading of unset conditions: ready unless said
		// otherwise, serving as ready, not terminating.
		ev := endpointView{Addresses: e.Addresses, Ready: c.Ready == nil || *c.Ready, Terminating: c.Terminating != nil && *c.Terminating}
		ev.Serving = ev.Ready
		if c.Serving != nil {
			ev.Serving = *c.Serving
		}
		if e.NodeName != nil {
			ev.Node = *e.NodeName
		}
		if r := e.TargetRef; r != nil && r.Kind == "Pod" && (r.Namespace == "" || r.Namespace == s.Namespace) {
			ev.Pod = r.Name
		}
		v.Endpoints = append(v.Endpoints, ev)
	}
	return v
}

type claimView struct {
	Namespace    string `json:"ns"`
	Name         string `json:"name"`
	Phase        string `json:"phase"`
	Class        string `json:"class,omitempty"`
	Request      string `json:"request,omitempty"`
	Volume       string `json:"volume,omitempty"`       // the bound PersistentVolume
	SelectedNode string `json:"selectedNode,omitempty"` // the scheduler's choice, for WaitForFirstConsumer
	Deleting     bool   `json:"deleting,omitempty"`
}

func viewClaim(c *corev1.PersistentVolumeClaim) claimView {
	v := claimView{Namespace: c.Namespace, Name: c.Name, Phase: string(c.Status.Phase), Class: volumeutil.ClaimClass(c),
		Volume: c.Spec.VolumeName, SelectedNode: c.Annotations[volumeutil.AnnSelectedNode], Deleting: c.DeletionTimestamp != nil}
	if v.Phase == "" {
		v.Phase = string(corev1.ClaimPending)
	}
	if q, ok := c.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
		v.Request = q.String()
	}
	return v
}

type volumeView struct {
	Name     string `json:"name"`
	Capacity string `json:"capacity,omitempty"`
	Phase    string `json:"phase"`
	Reclaim  string `json:"reclaim,omitempty"`
	Class    string `json:"class,omitempty"`
	Claim    string `json:"claim,omitempty"` // namespace/name of its claimRef
	Node     string `json:"node,omitempty"`  // the one node its node affinity allows (local volumes)
	Deleting bool   `json:"deleting,omitempty"`
}

func viewVolume(pv *corev1.PersistentVolume) volumeView {
	v := volumeView{Name: pv.Name, Phase: string(pv.Status.Phase), Reclaim: string(pv.Spec.PersistentVolumeReclaimPolicy),
		Class: volumeutil.VolumeClass(pv), Node: affinityNode(pv), Deleting: pv.DeletionTimestamp != nil}
	if v.Phase == "" {
		v.Phase = string(corev1.VolumePending)
	}
	if q, ok := pv.Spec.Capacity[corev1.ResourceStorage]; ok {
		v.Capacity = q.String()
	}
	if r := pv.Spec.ClaimRef; r != nil {
		v.Claim = r.Namespace + "/" + r.Name
	}
	return v
}

// affinityNode is the node a volume's required node affinity names when
// it names exactly one (a hostname or metadata.name In [node]), as a
// local volume's does; "" for a volume reachable from several nodes.
func affinityNode(pv *corev1.PersistentVolume) string {
	na := pv.Spec.NodeAffinity
	if na == nil || na.Required == nil || len(na.Required.NodeSelectorTerms) != 1 {
		return ""
	}
	t := na.Required.NodeSelectorTerms[0]
	for _, r := range append(t.MatchExpressions, t.MatchFields...) {
		if (r.Key == corev1.LabelHostname || r.Key == "metadata.name") && r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
			return r.Values[0]
		}
	}
	return ""
}

type classView struct {
	Name        string `json:"name"`
	Provisioner string `json:"provisioner"`
	BindingMode string `json:"bindingMode"`
	Reclaim     string `json:"reclaim,omitempty"`
	Default     bool   `json:"default,omitempty"`
}

func viewClass(sc *storagev1.StorageClass) classView {
	v := classView{Name: sc.Name, Provisioner: sc.Provisioner, BindingMode: string(volumeutil.BindingMode(sc)), Default: volumeutil.IsDefaultClass(sc)}
	if sc.ReclaimPolicy != nil {
		v.Reclaim = string(*sc.ReclaimPolicy)
	}
	return v
}
