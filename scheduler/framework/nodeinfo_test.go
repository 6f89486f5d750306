package framework

import (
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestNodeInfoCountsEachControllersLivePods(t *testing.T) {
	owned := func(name, owner string, deleting bool) *corev1.Pod {
		yes := true
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name),
			OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: owner, UID: types.UID(owner), Controller: &yes}}}}
		if deleting {
			now := metav1.Now()
			p.DeletionTimestamp = &now
		}
		return p
	}
	ni := NewNodeInfo(owned("a1", "a", false), owned("a2", "a", false), owned("b1", "b", false), owned("a3", "a", true),
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bare", UID: "bare"}})
	if got := ni.ControllerPods("a"); got != 2 {
		t.Fatalf("controller a: %d pods, want 2 (a3 is being deleted)", got)
	}
	clone := ni.Clone()
	ni.RemovePod(owned("a1", "a", false))
	ni.RemovePod(owned("a3", "a", true))
	if got := ni.ControllerPods("a"); got != 1 {
		t.Fatalf("after removing a1 and a3: %d pods of a, want 1", got)
	}
	if got := clone.ControllerPods("a"); got != 2 {
		t.Fatalf("the clone changed with the original: %d pods of a, want 2", got)
	}
	if got := ni.ControllerPods("b"); got != 1 {
		t.Fatalf("controller b: %d pods, want 1", got)
	}
}

// CloneWithout must leave the same NodeInfo as Clone then RemovePod for
// each dropped pod, and leave the original alone.
func TestCloneWithoutIsCloneThenRemove(t *testing.T) {
	pod := func(name, cpu string, hostPort int32, antiAffinity bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name), Namespace: "default", Labels: map[string]string{"app": name}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": resource.MustParse(cpu)}}}}}}
		if hostPort > 0 {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: hostPort}}
		}
		if antiAffinity {
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}, TopologyKey: "kubernetes.io/hostname"}}}}
		}
		return p
	}
	pods := []*corev1.Pod{pod("keep", "1", 0, true), pod("web", "500m", 8080, false), pod("db", "2", 0, true), pod("idle", "100m", 0, false)}
	ni := NewNodeInfo(pods...)
	dropped := map[string]bool{"web": true, "db": true}

	want := ni.Clone()
	for _, p := range pods {
		if dropped[p.Name] {
			want.RemovePod(p)
		}
	}
	got, gone := ni.CloneWithout(func(pi *PodInfo) bool { return dropped[pi.Pod.Name] })

	names := func(ps []*PodInfo) (out []string) {
		for _, p := range ps {
			out = append(out, p.Pod.Name)
		}
		return out
	}
	if g := names(gone); !slices.Equal(g, []string{"web", "db"}) {
		t.Fatalf("dropped %v, want [web db]", g)
	}
	for _, c := range []struct {
		what      string
		got, want any
	}{
		{"pods", names(got.Pods), names(want.Pods)},
		{"pods with affinity", names(got.PodsWithAffinity), names(want.PodsWithAffinity)},
		{"pods with required anti-affinity", names(got.PodsWithRequiredAntiAffinity), names(want.PodsWithRequiredAntiAffinity)},
		{"requested", got.Requested, want.Requested},
		{"non-zero requested", got.NonZeroRequested, want.NonZeroRequested},
		{"port 8080 used", got.UsedPorts.CheckConflict("", "TCP", 8080), false},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: got %v, want %v", c.what, c.got, c.want)
		}
	}
	if len(ni.Pods) != 4 || len(ni.PodsWithAffinity) != 2 || !ni.UsedPorts.CheckConflict("", "TCP", 8080) || ni.Requested.MilliCPU != 3600 {
		t.Errorf("the original changed: %d pods, %d with affinity, requested %+v", len(ni.Pods), len(ni.PodsWithAffinity), ni.Requested)
	}
	// A clone of a node without ports gets its port map on the first port.
	bare := NewNodeInfo(pod("a", "1", 0, false)).Clone()
	bare.AddPod(pod("b", "1", 9090, false))
	if !bare.UsedPorts.CheckConflict("", "TCP", 9090) {
		t.Error("a port added to a clone without ports was lost")
	}
}

// WithNominated copies the node once for as long as neither the node nor
// the nominated pods change, and never lets a stale copy through.
func TestWithNominatedReusesItsCopyUntilSomethingChanges(t *testing.T) {
	pod := func(name, cpu string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": resource.MustParse(cpu)}}}}}}
	}
	ni := NewNodeInfo(pod("running", "1"))
	a, b := NewPodInfo(pod("nominated-a", "500m")), NewPodInfo(pod("nominated-b", "250m"))

	first := ni.WithNominated([]*PodInfo{a})
	if first == ni || first.Requested.MilliCPU != 1500 || ni.Requested.MilliCPU != 1000 {
		t.Fatalf("copy requests %dm, node %dm: want 1500m on a copy, the node left at 1000m", first.Requested.MilliCPU, ni.Requested.MilliCPU)
	}
	if again := ni.WithNominated([]*PodInfo{a}); again != first {
		t.Fatal("the same node and nominations were copied again")
	}
	both := ni.WithNominated([]*PodInfo{a, b})
	if both == first || both.Requested.MilliCPU != 1750 {
		t.Fatalf("another nomination: copy requests %dm, want a new copy with 1750m", both.Requested.MilliCPU)
	}
	ni.AddPod(pod("bound", "100m"))
	if after := ni.WithNominated([]*PodInfo{a, b}); after == both || after.Requested.MilliCPU != 1850 {
		t.Fatalf("after a pod was added to the node: copy requests %dm, want a new copy with 1850m", after.Requested.MilliCPU)
	}
	if c := ni.Clone(); c.nominated != nil {
		t.Fatal("a clone carries its original's nominated copy")
	}
}
