package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/client"
)

// The placement comparison: the same small cluster and the same edge-case
// pods, created one at a time, under each scheduler in turn (a fresh
// cluster each). Whether each pod fits must agree pod by pod; where the
// cluster leaves one node, the node must agree; the FailedScheduling
// messages are compared word for word.

// edgeCase is one pod and the node it must land on ("" when several
// nodes are right, unschedulable when none is). A pod with scheduling
// gates must wait, untouched, until the comparison lifts them.
type edgeCase struct {
	name string
	pod  func() *corev1.Pod
	want string
}

const unschedulable = "(unschedulable)"

// compareNodes: n1 and n2 in zone a (n1 with an SSD), n3 and the tainted
// t1 in zone b; 4 cpu, 8Gi, 110 pods each.
func compareNodes() []*corev1.Node {
	node := func(name, zone string) *corev1.Node {
		n := defaultNode(0)
		n.Name = name
		n.Labels = map[string]string{corev1.LabelHostname: name, corev1.LabelTopologyZone: zone}
		n.Status.Capacity["memory"], n.Status.Allocatable["memory"] = resource.MustParse("8Gi"), resource.MustParse("8Gi")
		return n
	}
	n1, n2, n3, t1 := node("n1", "a"), node("n2", "a"), node("n3", "b"), node("t1", "b")
	n1.Labels["disk"] = "ssd"
	t1.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
	return []*corev1.Node{n1, n2, n3, t1}
}

func comparePod(name string, edit func(*corev1.Pod)) func() *corev1.Pod {
	return func() *corev1.Pod {
		p := defaultPod()
		p.Name, p.GenerateName, p.Namespace = name, "", "default"
		if edit != nil {
			edit(p)
		}
		return p
	}
}

func onNode(node string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{corev1.LabelHostname: node} }
}

func hostPort(node string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		onNode(node)(p)
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080, HostPort: 8080, Protocol: corev1.ProtocolTCP}}
	}
}

func soloInZoneA(p *corev1.Pod) {
	p.Labels["app"] = "solo"
	p.Spec.NodeSelector = map[string]string{corev1.LabelTopologyZone: "a"}
	p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "solo"}}, TopologyKey: corev1.LabelHostname}}}}
}

func spreadOverZones(p *corev1.Pod) {
	p.Labels["app"] = "spread"
	p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
		WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "spread"}}}}
}

func withClaim(claim string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}
	}
}

func edgeCases() []edgeCase {
	return []edgeCase{
		{"plain", comparePod("plain", nil), ""},
		{"untolerated-taint", comparePod("untolerated-taint", onNode("t1")), unschedulable},
		{"tolerated-taint", comparePod("tolerated-taint", func(p *corev1.Pod) {
			onNode("t1")(p)
			p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
		}), "t1"},
		{"selector-matches-one", comparePod("selector-matches-one", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "ssd"} }), "n1"},
		{"selector-matches-none", comparePod("selector-matches-none", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "nvme"} }), unschedulable},
		{"node-affinity-zone-b", comparePod("node-affinity-zone-b", func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"b"}}}}}}}}
		}), "n3"},
		{"request-larger-than-any-node", comparePod("request-larger-than-any-node", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests["cpu"] = resource.MustParse("100")
		}), unschedulable},
		{"host-port-free", comparePod("host-port-free", hostPort("n2")), "n2"},
		{"host-port-taken", comparePod("host-port-taken", hostPort("n2")), unschedulable},
		{"anti-affinity-1", comparePod("anti-affinity-1", soloInZoneA), ""},
		{"anti-affinity-2", comparePod("anti-affinity-2", soloInZoneA), ""},
		{"anti-affinity-3", comparePod("anti-affinity-3", soloInZoneA), unschedulable},
		{"spread-1", comparePod("spread-1", spreadOverZones), ""},
		{"spread-2", comparePod("spread-2", spreadOverZones), ""},
		{"spread-3", comparePod("spread-3", spreadOverZones), ""},
		{"pvc-bound-to-n3", comparePod("pvc-bound-to-n3", withClaim("data")), "n3"},
		{"pvc-missing", comparePod("pvc-missing", withClaim("nope")), unschedulable},
		{"gated", comparePod("gated", func(p *corev1.Pod) {
			p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/wait"}}
		}), ""},
	}
}

// verdict is what one scheduler did with one pod.
type verdict struct {
	node    string // or unschedulable, or what went wrong with a gated pod
	message string // the PodScheduled=False message
}

func (v verdict) bound() bool { return v.node != "" && v.node != unschedulable && v.message == "" }

// placementComparison is one edge case under both schedulers.
type placementComparison struct {
	Case           string `json:"case"`
	Minik          string `json:"minik"`
	Upstream       string `json:"upstream"`
	Want           string `json:"want,omitempty"`
	FeasibleAgrees bool   `json:"feasible_agrees"`
	// PlacementOK: both put the pod on the node the case allows, or both
	// left it unschedulable, or (any node allowed) both bound it.
	PlacementOK     bool   `json:"placement_ok"`
	MinikMessage    string `json:"minik_message,omitempty"`
	UpstreamMessage string `json:"upstream_message,omitempty"`
	MessageAgrees   bool   `json:"message_agrees"`
}

func comparePlacements(bin string, schedulers []schedulerUnderTest) error {
	results := map[string]map[string]verdict{}
	for _, s := range schedulers {
		got, err := placeEdgeCases(bin, s)
		if err != nil {
			return fmt.Errorf("edge cases with %s scheduler: %w", s.name, err)
		}
		results[s.name] = got
	}
	cases := edgeCases()
	disagreements := 0
	for _, c := range cases {
		m, u := results["minik"][c.name], results["upstream"][c.name]
		pc := placementComparison{Case: c.name, Minik: m.node, Upstream: u.node, Want: c.want,
			FeasibleAgrees: (m.node == unschedulable) == (u.node == unschedulable),
			MinikMessage:   m.message, UpstreamMessage: u.message, MessageAgrees: m.message == u.message}
		switch c.want {
		case "":
			pc.PlacementOK = m.bound() && u.bound()
		default:
			pc.PlacementOK = m.node == c.want && u.node == c.want
		}
		if !pc.FeasibleAgrees || !pc.PlacementOK || !pc.MessageAgrees {
			disagreements++
		}
		printJSON(pc)
	}
	printJSON(map[string]any{"placements": len(cases), "disagreements": disagreements})
	return nil
}

// placeEdgeCases runs s on a fresh cluster with the comparison's nodes and
// claim, and records its verdict on each edge case, one pod at a time.
func placeEdgeCases(bin string, s schedulerUnderTest) (map[string]verdict, error) {
	return onFreshCluster(bin, func(ctx context.Context, c *splitCluster) (map[string]verdict, error) {
		return placeOn(ctx, c, s)
	})
}

func placeOn(ctx context.Context, c *splitCluster, s schedulerUnderTest) (map[string]verdict, error) {
	for _, n := range compareNodes() {
		if _, err := c.admin.Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
	}
	if err := createBoundClaim(ctx, c.admin, "n3"); err != nil {
		return nil, err
	}
	sched, err := s.start(c)
	if err != nil {
		return nil, err
	}
	defer sched.stop()
	out := map[string]verdict{}
	for _, ec := range edgeCases() {
		pod := ec.pod()
		if _, err := c.admin.Pods().Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("%s: %w", ec.name, err)
		}
		if len(pod.Spec.SchedulingGates) > 0 {
			if touched, err := touchedWhileGated(ctx, c.admin, ec.name); err != nil || touched != "" {
				out[ec.name] = verdict{node: touched}
				if err != nil {
					return nil, fmt.Errorf("%s: %w", ec.name, err)
				}
				continue
			}
		}
		v, err := awaitVerdict(ctx, c.admin, ec.name, sched)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ec.name, err)
		}
		out[ec.name] = v
	}
	return out, nil
}

// createBoundClaim makes the claim "data", already bound to a local
// volume on node, as the volume binder leaves them.
func createBoundClaim(ctx context.Context, c *client.Client, node string) error {
	storage := corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
	rwo := []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "local-" + node,
		Annotations: map[string]string{"pv.kubernetes.io/bound-by-controller": "yes"}},
		Spec: corev1.PersistentVolumeSpec{Capacity: storage, AccessModes: rwo,
			PersistentVolumeSource: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/data"}},
			ClaimRef:               &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "default", Name: "data"},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}}}},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound}}
	empty := ""
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default",
		Annotations: map[string]string{"pv.kubernetes.io/bind-completed": "yes"}},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: rwo, StorageClassName: &empty, VolumeName: pv.Name,
			Resources: corev1.VolumeResourceRequirements{Requests: storage}},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, AccessModes: rwo, Capacity: storage}}
	if _, err := c.PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		return err
	}
	_, err := c.PersistentVolumeClaims().Create(ctx, pvc, metav1.CreateOptions{})
	return err
}

// awaitVerdict waits until the pod is bound or marked unschedulable.
func awaitVerdict(ctx context.Context, c *client.Client, name string, sched *proc) (verdict, error) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if done, log := sched.exited(); done {
			return verdict{}, fmt.Errorf("scheduler exited:\n%s", log)
		}
		p, err := c.Pods().Get(ctx, "default", name, metav1.GetOptions{})
		if err != nil {
			return verdict{}, err
		}
		if p.Spec.NodeName != "" {
			return verdict{node: p.Spec.NodeName}, nil
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonUnschedulable {
				return verdict{node: unschedulable, message: cond.Message}, nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return verdict{}, fmt.Errorf("no verdict after 30s")
}

// touchedWhileGated checks that a gated pod stays as the apiserver
// marked it (PodScheduled=False, SchedulingGated) for 2 seconds, then
// lifts its gate; it returns what was wrong, or "".
func touchedWhileGated(ctx context.Context, c *client.Client, name string) (string, error) {
	time.Sleep(2 * time.Second)
	got, err := c.Pods().Get(ctx, "default", name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	if got.Spec.NodeName != "" || len(got.Status.Conditions) != 1 || got.Status.Conditions[0].Reason != corev1.PodReasonSchedulingGated {
		return fmt.Sprintf("touched while gated: node %q, conditions %+v", got.Spec.NodeName, got.Status.Conditions), nil
	}
	got.Spec.SchedulingGates = nil
	_, err = c.Pods().Update(ctx, got, metav1.UpdateOptions{})
	return "", err
}
