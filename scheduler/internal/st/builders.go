// Package st holds small builders for scheduler tests:
//
//	st.MakePod().Name("web").Label("app", "web").Req("cpu", "500m", "memory", "1Gi").Obj()
//	st.MakeNode().Name("n1").Label("zone", "a").Capacity("cpu", "4", "memory", "8Gi").Obj()
package st

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// PodWrapper builds a Pod.
type PodWrapper struct{ corev1.Pod }

// MakePod returns a pod "p" in "default" with one container and no requests.
func MakePod() *PodWrapper {
	return &PodWrapper{corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "p", Labels: map[string]string{}},
		Spec: corev1.PodSpec{
			SchedulerName: corev1.DefaultSchedulerName,
			Containers:    []corev1.Container{{Name: "c", Image: "busybox"}},
		},
	}}
}

// Obj returns the pod.
func (p *PodWrapper) Obj() *corev1.Pod { return &p.Pod }

// Name sets the name, and the UID to the same string.
func (p *PodWrapper) Name(n string) *PodWrapper { p.Pod.Name, p.UID = n, types.UID(n); return p }

// Namespace sets the namespace.
func (p *PodWrapper) Namespace(ns string) *PodWrapper { p.Pod.Namespace = ns; return p }

// Label adds a label.
func (p *PodWrapper) Label(k, v string) *PodWrapper { p.Labels[k] = v; return p }

// Node sets spec.nodeName.
func (p *PodWrapper) Node(n string) *PodWrapper { p.Spec.NodeName = n; return p }

// Priority sets spec.priority.
func (p *PodWrapper) Priority(v int32) *PodWrapper { p.Spec.Priority = &v; return p }

// PreemptNever sets preemptionPolicy Never.
func (p *PodWrapper) PreemptNever() *PodWrapper {
	n := corev1.PreemptNever
	p.Spec.PreemptionPolicy = &n
	return p
}

// StartTime sets status.startTime.
func (p *PodWrapper) StartTime(t time.Time) *PodWrapper {
	mt := metav1.NewTime(t)
	p.Status.StartTime = &mt
	return p
}

// Terminating sets a deletionTimestamp.
func (p *PodWrapper) Terminating() *PodWrapper {
	now := metav1.Now()
	p.DeletionTimestamp = &now
	return p
}

// PreemptedTerminating marks the pod terminating as a preemption's victim:
// the DisruptionTarget condition, then the graceful delete.
func (p *PodWrapper) PreemptedTerminating() *PodWrapper {
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget,
		Status: corev1.ConditionTrue, Reason: corev1.PodReasonPreemptionByScheduler})
	return p.Terminating()
}

// NominatedNode sets status.nominatedNodeName.
func (p *PodWrapper) NominatedNode(n string) *PodWrapper { p.Status.NominatedNodeName = n; return p }

// Owner sets a controller owner reference with uid.
func (p *PodWrapper) Owner(uid string) *PodWrapper {
	t := true
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: uid, UID: types.UID(uid), Controller: &t}}
	return p
}

// Image sets the first container's image.
func (p *PodWrapper) Image(img string) *PodWrapper { p.Spec.Containers[0].Image = img; return p }

// ResourceList parses "cpu", "memory" style pairs: ResourceList("cpu", "1", "memory", "1Gi").
func ResourceList(kv ...string) corev1.ResourceList {
	rl := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		rl[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return rl
}

// Req adds a container requesting the given resources: Req("cpu", "1").
func (p *PodWrapper) Req(kv ...string) *PodWrapper {
	c := corev1.Container{Name: "c" + string(rune('a'+len(p.Spec.Containers))), Image: "busybox", Resources: corev1.ResourceRequirements{Requests: ResourceList(kv...)}}
	if len(p.Spec.Containers) == 1 && p.Spec.Containers[0].Resources.Requests == nil {
		p.Spec.Containers[0].Resources.Requests = c.Resources.Requests
		return p
	}
	p.Spec.Containers = append(p.Spec.Containers, c)
	return p
}

// InitReq adds an init container requesting the given resources.
func (p *PodWrapper) InitReq(kv ...string) *PodWrapper {
	p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: "init", Image: "busybox", Resources: corev1.ResourceRequirements{Requests: ResourceList(kv...)}})
	return p
}

// Overhead sets the pod overhead.
func (p *PodWrapper) Overhead(kv ...string) *PodWrapper {
	p.Spec.Overhead = ResourceList(kv...)
	return p
}

// HostPort adds a host port to the first container.
func (p *PodWrapper) HostPort(port int32, protocol corev1.Protocol, ip string) *PodWrapper {
	p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, corev1.ContainerPort{ContainerPort: port, HostPort: port, Protocol: protocol, HostIP: ip})
	return p
}

// NodeSelector adds a nodeSelector entry.
func (p *PodWrapper) NodeSelector(k, v string) *PodWrapper {
	if p.Spec.NodeSelector == nil {
		p.Spec.NodeSelector = map[string]string{}
	}
	p.Spec.NodeSelector[k] = v
	return p
}

func (p *PodWrapper) affinity() *corev1.Affinity {
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &corev1.Affinity{}
	}
	return p.Spec.Affinity
}

func (p *PodWrapper) nodeAffinity() *corev1.NodeAffinity {
	a := p.affinity()
	if a.NodeAffinity == nil {
		a.NodeAffinity = &corev1.NodeAffinity{}
	}
	return a.NodeAffinity
}

// Expr is a node selector requirement: Expr("zone", In, "a", "b").
func Expr(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

// RequiredTerm adds a required nodeSelectorTerm (terms are ORed).
func (p *PodWrapper) RequiredTerm(exprs ...corev1.NodeSelectorRequirement) *PodWrapper {
	na := p.nodeAffinity()
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{}
	}
	na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms = append(na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms,
		corev1.NodeSelectorTerm{MatchExpressions: exprs})
	return p
}

// RequiredFieldTerm adds a required term on metadata.name.
func (p *PodWrapper) RequiredFieldTerm(op corev1.NodeSelectorOperator, name string) *PodWrapper {
	na := p.nodeAffinity()
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{}
	}
	na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms = append(na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms,
		corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: op, Values: []string{name}}}})
	return p
}

// PreferredTerm adds a preferred node term with a weight.
func (p *PodWrapper) PreferredTerm(weight int32, exprs ...corev1.NodeSelectorRequirement) *PodWrapper {
	na := p.nodeAffinity()
	na.PreferredDuringSchedulingIgnoredDuringExecution = append(na.PreferredDuringSchedulingIgnoredDuringExecution,
		corev1.PreferredSchedulingTerm{Weight: weight, Preference: corev1.NodeSelectorTerm{MatchExpressions: exprs}})
	return p
}

// Toleration adds a toleration.
func (p *PodWrapper) Toleration(key string, op corev1.TolerationOperator, value string, effect corev1.TaintEffect) *PodWrapper {
	p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: key, Operator: op, Value: value, Effect: effect})
	return p
}

// Term is a pod affinity term selecting pods with label k=v per topologyKey.
func Term(k, v, topologyKey string) corev1.PodAffinityTerm {
	return corev1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{k: v}}, TopologyKey: topologyKey}
}

// PodAffinity adds a required pod affinity term.
func (p *PodWrapper) PodAffinity(t corev1.PodAffinityTerm) *PodWrapper {
	a := p.affinity()
	if a.PodAffinity == nil {
		a.PodAffinity = &corev1.PodAffinity{}
	}
	a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, t)
	return p
}

// PodAntiAffinity adds a required pod anti-affinity term.
func (p *PodWrapper) PodAntiAffinity(t corev1.PodAffinityTerm) *PodWrapper {
	a := p.affinity()
	if a.PodAntiAffinity == nil {
		a.PodAntiAffinity = &corev1.PodAntiAffinity{}
	}
	a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, t)
	return p
}

// PreferredPodAffinity adds a preferred pod affinity term.
func (p *PodWrapper) PreferredPodAffinity(weight int32, t corev1.PodAffinityTerm) *PodWrapper {
	a := p.affinity()
	if a.PodAffinity == nil {
		a.PodAffinity = &corev1.PodAffinity{}
	}
	a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution, corev1.WeightedPodAffinityTerm{Weight: weight, PodAffinityTerm: t})
	return p
}

// PreferredPodAntiAffinity adds a preferred pod anti-affinity term.
func (p *PodWrapper) PreferredPodAntiAffinity(weight int32, t corev1.PodAffinityTerm) *PodWrapper {
	a := p.affinity()
	if a.PodAntiAffinity == nil {
		a.PodAntiAffinity = &corev1.PodAntiAffinity{}
	}
	a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution, corev1.WeightedPodAffinityTerm{Weight: weight, PodAffinityTerm: t})
	return p
}

// Spread adds a topology spread constraint selecting pods with label k=v.
func (p *PodWrapper) Spread(maxSkew int32, topologyKey string, action corev1.UnsatisfiableConstraintAction, k, v string) *PodWrapper {
	p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, corev1.TopologySpreadConstraint{
		MaxSkew: maxSkew, TopologyKey: topologyKey, WhenUnsatisfiable: action,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{k: v}},
	})
	return p
}

// NodeWrapper builds a Node.
type NodeWrapper struct{ corev1.Node }

// MakeNode returns node "n" with 4 cpu, 8Gi and 110 pods allocatable.
func MakeNode() *NodeWrapper {
	w := &NodeWrapper{corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{}}}}
	return w.Capacity("cpu", "4", "memory", "8Gi", "pods", "110")
}

// Obj returns the node.
func (n *NodeWrapper) Obj() *corev1.Node { return &n.Node }

// Name sets the name and the kubernetes.io/hostname label.
func (n *NodeWrapper) Name(s string) *NodeWrapper {
	n.Node.Name = s
	n.Labels[corev1.LabelHostname] = s
	return n
}

// Label adds a label.
func (n *NodeWrapper) Label(k, v string) *NodeWrapper { n.Labels[k] = v; return n }

// Capacity sets capacity and allocatable: Capacity("cpu", "2", "pods", "10").
func (n *NodeWrapper) Capacity(kv ...string) *NodeWrapper {
	n.Status.Capacity, n.Status.Allocatable = ResourceList(kv...), ResourceList(kv...)
	return n
}

// Taint adds a taint.
func (n *NodeWrapper) Taint(k, v string, e corev1.TaintEffect) *NodeWrapper {
	n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: k, Value: v, Effect: e})
	return n
}

// Unschedulable cordons the node.
func (n *NodeWrapper) Unschedulable() *NodeWrapper { n.Spec.Unschedulable = true; return n }

// Image adds an image of size bytes.
func (n *NodeWrapper) Image(name string, size int64) *NodeWrapper {
	n.Status.Images = append(n.Status.Images, corev1.ContainerImage{Names: []string{name}, SizeBytes: size})
	return n
}
