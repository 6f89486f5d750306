package scheduler

import (
	"context"
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"minik/scheduler/framework"
	"minik/scheduler/internal/st"
)

// BenchmarkScheduleOneCycle measures the scheduling cycle alone (the
// pod's PodInfo, snapshot update, filter, score, assume) on 5000 nodes, without the API: the
// ceiling the real scheduler's throughput approaches.
func BenchmarkScheduleOneCycle(b *testing.B) {
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("parallelism=%d", workers), func(b *testing.B) { benchmarkCycle(b, workers) })
	}
}

func benchmarkCycle(b *testing.B, workers int) {
	var nodes []*corev1.Node
	for i := range 5000 {
		nodes = append(nodes, st.MakeNode().Name(fmt.Sprintf("node-%05d", i)).Capacity("cpu", "4", "memory", "32Gi", "pods", "110").Obj())
	}
	s := newTestScheduler(nodes, nil)
	s.fwk.Parallelism = workers
	b.ResetTimer()
	for i := range b.N {
		pod := st.MakePod().Name(fmt.Sprintf("p%d", i)).Req("cpu", "100m", "memory", "500Mi").Obj()
		pi := framework.NewPodInfo(pod) // as the queue does when the pod arrives
		s.cache.UpdateSnapshot(s.snapshot)
		state := framework.NewCycleState()
		state.SetPodInfo(pi)
		host, err := s.schedulePod(context.Background(), state, pod)
		if err != nil {
			b.Fatal(err)
		}
		pod.Spec.NodeName = host
		if err := s.cache.AssumePodInfo(pi); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pods/s")
}

// BenchmarkFailedCycleNominated measures the cycle that fails while
// preemptions are under way (scheduler_perf's Preemption shape): 500 full
// nodes, each with a pod nominated to it, and a pod that fits none.
func BenchmarkFailedCycleNominated(b *testing.B) {
	nodes, pods := fullNodes(500)
	s := newTestScheduler(nodes, pods)
	for i, n := range nodes {
		s.nominator.add(st.MakePod().Name(fmt.Sprintf("nominated-%d", i)).Priority(100).Req("cpu", "900m", "memory", "500Mi").Obj(), n.Name)
	}
	pod := st.MakePod().Name("preemptor").Priority(100).Req("cpu", "900m", "memory", "500Mi").Obj()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := s.try(pod); err == nil {
			b.Fatal("the pod fits")
		}
	}
}

// BenchmarkPreemptionDryRun measures PostFilter choosing victims on 500
// full nodes of lower-priority pods, half of them with a pod nominated to
// them already (preemptions under way).
func BenchmarkPreemptionDryRun(b *testing.B) {
	nodes, pods := fullNodes(500)
	s := newTestScheduler(nodes, pods)
	for i, n := range nodes[:250] {
		s.nominator.add(st.MakePod().Name(fmt.Sprintf("nominated-%d", i)).Priority(100).Req("cpu", "900m", "memory", "500Mi").Obj(), n.Name)
	}
	pod := st.MakePod().Name("preemptor").Priority(100).Req("cpu", "900m", "memory", "500Mi").Obj()
	s.cache.UpdateSnapshot(s.snapshot)
	state := framework.NewCycleState()
	_, err := s.schedulePod(context.Background(), state, pod)
	var fitErr *framework.FitError
	if !errors.As(err, &fitErr) {
		b.Fatalf("want a FitError, got %v", err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, st := s.fwk.RunPostFilter(state, pod, s.snapshot, fitErr.Statuses); !st.IsSuccess() {
			b.Fatal(st.Message())
		}
	}
}

// fullNodes returns n nodes of scheduler_perf's default size (4 cpu), each
// nearly full with 4 pods of priority 0 asking 900m.
func fullNodes(n int) ([]*corev1.Node, []*corev1.Pod) {
	var nodes []*corev1.Node
	var pods []*corev1.Pod
	for i := range n {
		name := fmt.Sprintf("node-%05d", i)
		nodes = append(nodes, st.MakeNode().Name(name).Capacity("cpu", "4", "memory", "32Gi", "pods", "110").Obj())
		for j := range 4 {
			pods = append(pods, st.MakePod().Name(fmt.Sprintf("low-%d-%d", i, j)).Node(name).Req("cpu", "900m", "memory", "500Mi").Obj())
		}
	}
	return nodes, pods
}
