package scheduler

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"minik/scheduler/framework"
	"minik/scheduler/internal/st"
)

// BenchmarkScheduleOneCycle measures the scheduling cycle alone (snapshot
// update, filter, score, assume) on 5000 nodes, without the API: the
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
		host, err := s.try(pod)
		if err != nil {
			b.Fatal(err)
		}
		pod.Spec.NodeName = host
		if err := s.cache.AssumePodInfo(framework.NewPodInfo(pod)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pods/s")
}
