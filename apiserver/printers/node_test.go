package printers

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// nodeBuilder builds test nodes: makeNode("n1").Ready(corev1.ConditionTrue).Obj().
type nodeBuilder struct{ node corev1.Node }

func makeNode(name string) *nodeBuilder {
	return &nodeBuilder{corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: ago(3 * 24 * time.Hour)}}}
}

func (b *nodeBuilder) Condition(t corev1.NodeConditionType, s corev1.ConditionStatus) *nodeBuilder {
	b.node.Status.Conditions = append(b.node.Status.Conditions, corev1.NodeCondition{Type: t, Status: s})
	return b
}

func (b *nodeBuilder) Ready(s corev1.ConditionStatus) *nodeBuilder {
	return b.Condition(corev1.NodeReady, s)
}

func (b *nodeBuilder) Unschedulable() *nodeBuilder { b.node.Spec.Unschedulable = true; return b }

func (b *nodeBuilder) Label(k, v string) *nodeBuilder {
	if b.node.Labels == nil {
		b.node.Labels = map[string]string{}
	}
	b.node.Labels[k] = v
	return b
}

func (b *nodeBuilder) Address(t corev1.NodeAddressType, a string) *nodeBuilder {
	b.node.Status.Addresses = append(b.node.Status.Addresses, corev1.NodeAddress{Type: t, Address: a})
	return b
}

func (b *nodeBuilder) Info(kubelet, os, kernel, cri string) *nodeBuilder {
	b.node.Status.NodeInfo = corev1.NodeSystemInfo{KubeletVersion: kubelet, OSImage: os, KernelVersion: kernel, ContainerRuntimeVersion: cri}
	return b
}

func (b *nodeBuilder) Obj() *corev1.Node { return b.node.DeepCopy() }

var nodeCases = []struct {
	name                  string
	node                  *corev1.Node
	wantStatus, wantRoles string
}{
	{
		name:       "a node whose kubelet reports ready is Ready",
		node:       makeNode("ready").Ready(corev1.ConditionTrue).Obj(),
		wantStatus: "Ready", wantRoles: "<none>",
	},
	{
		name:       "a node whose kubelet reports not ready is NotReady",
		node:       makeNode("not-ready").Ready(corev1.ConditionFalse).Obj(),
		wantStatus: "NotReady", wantRoles: "<none>",
	},
	{
		name:       "a node that stopped reporting (Ready Unknown) is NotReady",
		node:       makeNode("silent").Ready(corev1.ConditionUnknown).Obj(),
		wantStatus: "NotReady", wantRoles: "<none>",
	},
	{
		name:       "a node that never reported a Ready condition is Unknown",
		node:       makeNode("new").Obj(),
		wantStatus: "Unknown", wantRoles: "<none>",
	},
	{
		name:       "a cordoned ready node is Ready,SchedulingDisabled",
		node:       makeNode("cordoned").Ready(corev1.ConditionTrue).Unschedulable().Obj(),
		wantStatus: "Ready,SchedulingDisabled", wantRoles: "<none>",
	},
	{
		name:       "a cordoned node that never reported is Unknown,SchedulingDisabled",
		node:       makeNode("cordoned-new").Unschedulable().Obj(),
		wantStatus: "Unknown,SchedulingDisabled", wantRoles: "<none>",
	},
	{
		name: "pressure conditions do not show in STATUS",
		node: makeNode("pressure").Condition(corev1.NodeMemoryPressure, corev1.ConditionTrue).
			Condition(corev1.NodeDiskPressure, corev1.ConditionTrue).Ready(corev1.ConditionTrue).Obj(),
		wantStatus: "Ready", wantRoles: "<none>",
	},
	{
		name: "roles come from node-role labels, sorted",
		node: makeNode("roles").Ready(corev1.ConditionTrue).
			Label("node-role.kubernetes.io/worker", "").Label("node-role.kubernetes.io/control-plane", "").Obj(),
		wantStatus: "Ready", wantRoles: "control-plane,worker",
	},
	{
		name: "the older kubernetes.io/role label adds its value once",
		node: makeNode("legacy-role").Ready(corev1.ConditionTrue).
			Label("kubernetes.io/role", "master").Label("node-role.kubernetes.io/master", "").Label("node-role.kubernetes.io/edge", "").Obj(),
		wantStatus: "Ready", wantRoles: "edge,master",
	},
	{
		name: "empty role names are ignored",
		node: makeNode("empty-role").Ready(corev1.ConditionTrue).
			Label("node-role.kubernetes.io/", "x").Label("kubernetes.io/role", "").Obj(),
		wantStatus: "Ready", wantRoles: "<none>",
	},
}

func TestNodeStatusAndRoles(t *testing.T) {
	for _, tc := range nodeCases {
		t.Run(tc.name, func(t *testing.T) {
			r := printOne(t, "Node", tc.node)
			got := []any{cell(t, "Node", r, "Status"), cell(t, "Node", r, "Roles")}
			if diff := cmp.Diff([]any{tc.wantStatus, tc.wantRoles}, got); diff != "" {
				t.Errorf("STATUS, ROLES (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNodeTableMatchesGolden(t *testing.T) {
	objs := make([]runtime.Object, 0, len(nodeCases)+1)
	for _, tc := range nodeCases {
		objs = append(objs, tc.node)
	}
	objs = append(objs, makeNode("full").Ready(corev1.ConditionTrue).
		Label("node-role.kubernetes.io/control-plane", "").
		Address(corev1.NodeHostName, "full").
		Address(corev1.NodeInternalIP, "192.168.1.10").
		Address(corev1.NodeInternalIP, "192.168.1.11").
		Address(corev1.NodeExternalIP, "203.0.113.7").
		Info("v1.37.2-minik", "Debian GNU/Linux 13 (trixie)", "6.12.0-1-amd64", "containerd://1.7.35").Obj())
	table, err := ToTable("Node", objs, IncludeNone, now)
	if err != nil {
		t.Fatal(err)
	}
	assertGolden(t, "node.golden", render(t, table))
}
