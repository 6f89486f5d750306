package noderesources

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"minik/scheduler/framework"
	"minik/scheduler/internal/st"
)

func TestFilter(t *testing.T) {
	node := st.MakeNode().Name("n").Capacity("cpu", "2", "memory", "4Gi", "pods", "3", "ephemeral-storage", "10Gi", "nvidia.com/gpu", "1").Obj()
	existing := st.MakePod().Name("old").Node("n").Req("cpu", "1", "memory", "1Gi").Obj()
	const (
		resolvable   = framework.Unschedulable                // preemption may free room
		unresolvable = framework.UnschedulableAndUnresolvable // more than the node has at all
	)
	cases := []struct {
		name    string
		pod     *corev1.Pod
		others  int // extra empty pods on the node
		reasons []string
		code    framework.Code
	}{
		{"a pod that fits the free cpu and memory passes", st.MakePod().Req("cpu", "1", "memory", "3Gi").Obj(), 0, nil, framework.Success},
		{"too much cpu is reported", st.MakePod().Req("cpu", "1500m").Obj(), 0, []string{"Insufficient cpu"}, resolvable},
		{"every missing resource is reported", st.MakePod().Req("cpu", "2", "memory", "4Gi").Obj(), 0, []string{"Insufficient cpu", "Insufficient memory"}, resolvable},
		{"ephemeral-storage counts", st.MakePod().Req("ephemeral-storage", "11Gi").Obj(), 0, []string{"Insufficient ephemeral-storage"}, unresolvable},
		{"extended resources count", st.MakePod().Req("nvidia.com/gpu", "2").Obj(), 0, []string{"Insufficient nvidia.com/gpu"}, unresolvable},
		{"an extended resource the node lacks is insufficient", st.MakePod().Req("example.com/fpga", "1").Obj(), 0, []string{"Insufficient example.com/fpga"}, unresolvable},
		{"the node's pod count is a limit", st.MakePod().Obj(), 2, []string{"Too many pods"}, resolvable},
		{"a request beyond the node's allocatable cannot be helped by preemption",
			st.MakePod().Req("cpu", "3", "memory", "1Gi").Obj(), 0, []string{"Insufficient cpu"}, unresolvable},
		{"one resource beyond allocatable makes the whole verdict unresolvable",
			st.MakePod().Req("cpu", "1500m", "memory", "5Gi").Obj(), 0, []string{"Insufficient cpu", "Insufficient memory"}, unresolvable},
		{"the request is the largest init container when it exceeds the sum of containers",
			st.MakePod().Req("cpu", "100m").InitReq("cpu", "1500m").Obj(), 0, []string{"Insufficient cpu"}, resolvable},
		{"the request is the sum of containers when it exceeds every init container",
			st.MakePod().Req("cpu", "600m").Req("cpu", "600m").InitReq("cpu", "500m").Obj(), 0, []string{"Insufficient cpu"}, resolvable},
		{"overhead is added to the request", st.MakePod().Req("cpu", "900m").Overhead("cpu", "200m").Obj(), 0, []string{"Insufficient cpu"}, resolvable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pods := []*corev1.Pod{existing}
			for i := range tc.others {
				pods = append(pods, st.MakePod().Name(string(rune('a'+i))).Node("n").Obj())
			}
			got := st.Filter(New(), tc.pod, st.NewSnapshot([]*corev1.Node{node}, pods), "n")
			reasons := got.Reasons()
			slices.Sort(reasons)
			if !slices.Equal(reasons, tc.reasons) || got.Code() != tc.code {
				t.Fatalf("got %v, want %v %v", got, tc.code, tc.reasons)
			}
		})
	}
}

func TestScoreLeastAllocated(t *testing.T) {
	nodes := []*corev1.Node{
		st.MakeNode().Name("empty").Capacity("cpu", "4", "memory", "8Gi").Obj(),
		st.MakeNode().Name("half").Capacity("cpu", "4", "memory", "8Gi").Obj(),
	}
	pods := []*corev1.Pod{st.MakePod().Name("old").Node("half").Req("cpu", "2", "memory", "4Gi").Obj()}
	cases := []struct {
		name string
		pod  *corev1.Pod
		want map[string]int64
	}{
		{"the free share after placing the pod is averaged over cpu and memory",
			st.MakePod().Req("cpu", "1", "memory", "2Gi").Obj(), map[string]int64{"empty": 75, "half": 25}},
		{"a pod that requests nothing counts as 100m cpu and 200Mi memory",
			st.MakePod().Obj(), map[string]int64{"empty": (3900*100/4000 + (8192-200)*100/8192) / 2, "half": (1900*100/4000 + (4096-200)*100/8192) / 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, status := st.Scores(New(), tc.pod, st.NewSnapshot(nodes, pods))
			if !status.IsSuccess() {
				t.Fatal(status)
			}
			for n, w := range tc.want {
				if got[n] != w {
					t.Fatalf("scores %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestLeastAllocated(t *testing.T) {
	cases := []struct {
		name                 string
		requested, allocated int64
		want                 int64
	}{
		{"an unused resource scores 100", 0, 10, 100},
		{"a quarter used scores 75", 25, 100, 75},
		{"more than allocatable scores 0", 11, 10, 0},
		{"a node without the resource scores 0", 1, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := LeastAllocated(tc.requested, tc.allocated); got != tc.want {
				t.Fatalf("got %d, want %d", got, tc.want)
			}
		})
	}
}

// FitsBeside counts the pods beside the node's own, as Fits would on a
// copy of the node with them added, without the copy.
func TestFitsBesideCountsTheNominatedPods(t *testing.T) {
	node := st.MakeNode().Name("n").Capacity("cpu", "2", "memory", "4Gi", "pods", "2").Obj()
	running := st.MakePod().Name("running").Node("n").Req("cpu", "1").Obj()
	ni := st.NewSnapshot([]*corev1.Node{node}, []*corev1.Pod{running}).Get("n")
	req := framework.PodRequests(st.MakePod().Req("cpu", "1").Obj(), false)
	if lacks := FitsBeside(req, nil, ni); len(lacks) != 0 {
		t.Fatalf("alone: lacks %v, want a fit", lacks)
	}
	nominated := framework.NewPodInfo(st.MakePod().Name("nominated").Req("cpu", "500m").Obj())
	var names []string
	for _, l := range FitsBeside(req, []*framework.PodInfo{nominated}, ni) {
		names = append(names, l.Reason)
	}
	if !slices.Equal(names, []string{ErrReasonTooManyPods, "Insufficient cpu"}) {
		t.Fatalf("beside a nominated pod: lacks %v, want too many pods and cpu", names)
	}
	if ni.Requested.MilliCPU != 1000 || len(ni.Pods) != 1 {
		t.Fatal("FitsBeside changed the node")
	}
}
