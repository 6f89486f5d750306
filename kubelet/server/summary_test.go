package server

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/internal/resourcemetrics"
	"minik/kubelet/eviction"
	"minik/kubelet/runtime"
	"minik/proto/cri"
)

func TestReadProcStatCPU(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    uint64
		wantErr bool
	}{
		{"user, nice, system, irq, softirq and steal count; idle and iowait do not",
			"cpu  100 20 30 9999 888 4 5 1 50 0\ncpu0 50 10 15 5000 400 2 2 0 0 0\n", 160 * 10_000_000, false},
		{"a file without the cpu line is an error", "intr 1 2 3\n", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "stat")
			if err := os.WriteFile(p, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := readProcStatCPU(p)
			if got != tt.want || (err != nil) != tt.wantErr {
				t.Errorf("readProcStatCPU = %d, %v; want %d, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	t0 := time.Unix(1000, 0)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"}}
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "idle", Namespace: "default", UID: "u2"}}
	container := func(id, name, uid string, state cri.ContainerState) *cri.Container {
		return &cri.Container{Id: id, State: state, CreatedAt: t0.UnixNano(),
			Labels: map[string]string{runtime.LabelPodUID: uid, runtime.LabelContainerName: name}}
	}
	reading := func(at time.Time, cpuA, cpuB uint64) *summaryReading {
		return &summaryReading{at: at, nodeCPU: 10 * cpuA,
			node: eviction.NodeStats{MemoryCapacityBytes: 1000, MemoryWorkingSetBytes: 300},
			containers: []*cri.Container{container("a", "app", "u1", cri.ContainerState_CONTAINER_RUNNING),
				container("b", "side", "u1", cri.ContainerState_CONTAINER_RUNNING),
				container("old", "app", "u1", cri.ContainerState_CONTAINER_EXITED)},
			usage: map[string]*cri.ContainerStats{
				"a":   {ContainerId: "a", CpuUsageCoreNanoSeconds: cpuA, MemoryWorkingSetBytes: 100, MemoryUsageBytes: 150, Timestamp: at.UnixNano()},
				"b":   {ContainerId: "b", CpuUsageCoreNanoSeconds: cpuB, MemoryWorkingSetBytes: 20, MemoryUsageBytes: 20, Timestamp: at.UnixNano()},
				"old": {ContainerId: "old", CpuUsageCoreNanoSeconds: 5},
			}}
	}
	var sampler resourcemetrics.Sampler
	first, complete := summarize("n1", t0, []*corev1.Pod{pod, other}, reading(t0, 1e9, 0), &sampler)
	if complete {
		t.Errorf("the first reading is complete, want rates missing")
	}
	if c := first.Pods[0].Containers[0].CPU; c.UsageNanoCores != nil || *c.UsageCoreNanoSeconds != 1e9 {
		t.Errorf("first reading's container cpu = %+v, want the counter without a rate", c)
	}
	s, complete := summarize("n1", t0, []*corev1.Pod{pod, other}, reading(t0.Add(2*time.Second), 2e9, 1e8), &sampler)
	if !complete {
		t.Errorf("the second reading is incomplete")
	}
	if s.Node.NodeName != "n1" || *s.Node.CPU.UsageNanoCores != 5e9 || *s.Node.Memory.AvailableBytes != 700 || *s.Node.Memory.WorkingSetBytes != 300 {
		t.Errorf("node = %+v cpu %+v memory %+v", s.Node, s.Node.CPU, s.Node.Memory)
	}
	if len(s.Pods) != 2 || len(s.Pods[0].Containers) != 2 || len(s.Pods[1].Containers) != 0 || s.Pods[1].CPU != nil {
		t.Fatalf("pods = %+v, want web with its two running containers and idle with none", s.Pods)
	}
	web := s.Pods[0]
	if web.PodRef != (resourcemetrics.PodReference{Name: "web", Namespace: "default", UID: "u1"}) {
		t.Errorf("podRef = %+v", web.PodRef)
	}
	app, side := web.Containers[0], web.Containers[1]
	if app.Name != "app" || *app.CPU.UsageNanoCores != 5e8 || *app.Memory.WorkingSetBytes != 100 || *app.Memory.UsageBytes != 150 {
		t.Errorf("app = %+v cpu %+v", app, app.CPU)
	}
	if side.Name != "side" || *side.CPU.UsageNanoCores != 5e7 {
		t.Errorf("side = %+v cpu %+v", side, side.CPU)
	}
	if *web.CPU.UsageNanoCores != 55e7 || *web.CPU.UsageCoreNanoSeconds != 21e8 || *web.Memory.WorkingSetBytes != 120 {
		t.Errorf("pod totals cpu %+v memory %+v, want the containers' sums", web.CPU, web.Memory)
	}
}
