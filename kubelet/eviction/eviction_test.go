package eviction

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

const (
	mi = int64(1) << 20
	gi = int64(1) << 30
)

func TestParseThresholds(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     string // FormatThresholds of the result
		err      string // substring of the error, "" for none
	}{
		{"the default parses to the kubelet's Linux defaults without imagefs", DefaultHard,
			"memory.available<100Mi,nodefs.available<10%,nodefs.inodesFree<5%", ""},
		{"quantities and percentages mix", "pid.available<1000, memory.available<1Gi",
			"memory.available<1Gi,pid.available<1k", ""},
		{"an empty flag means no thresholds", "", "", ""},
		{"0% and 100% set no threshold", "nodefs.available<0%,nodefs.inodesFree<100%", "", ""},
		{"an unknown signal is refused", "imagefs.available<15%", "", "unsupported eviction signal imagefs.available"},
		{"only < is an operator", "memory.available>100Mi", "", "want SIGNAL<VALUE"},
		{"a zero quantity is refused", "memory.available<0", "", "must be positive"},
		{"a percentage above 100% is refused", "nodefs.available<150%", "", "between 0% and 100%"},
		{"a signal given twice is refused", "memory.available<1Gi,memory.available<2Gi", "", "duplicate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseThresholds(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseThresholds(%q) error = %v, want one containing %q", tc.in, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseThresholds(%q): %v", tc.in, err)
			}
			if got == nil {
				t.Fatal("ParseThresholds returned nil; nil means the defaults to the kubelet")
			}
			if s := FormatThresholds(got); s != tc.want {
				t.Errorf("ParseThresholds(%q) = %s, want %s", tc.in, s, tc.want)
			}
		})
	}
}

// healthy is a node far from every default threshold.
func healthy() NodeStats {
	return NodeStats{
		MemoryCapacityBytes: 8 * gi, MemoryWorkingSetBytes: 2 * gi,
		NodeFsCapacityBytes: 100 * gi, NodeFsAvailableBytes: 50 * gi,
		NodeFsInodes: 1000000, NodeFsInodesFree: 500000,
		MaxPID: 32768, RunningProcesses: 500,
	}
}

func mustParse(t *testing.T, s string) []Threshold {
	t.Helper()
	ts, err := ParseThresholds(s)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func TestThresholdsSetPressureConditions(t *testing.T) {
	for _, tc := range []struct {
		name       string
		thresholds string
		node       func(n *NodeStats)
		conditions []corev1.NodeConditionType
		reclaim    corev1.ResourceName
	}{
		{"a healthy node has no pressure", DefaultHard, func(*NodeStats) {}, nil, ""},
		{"less than 100Mi of memory available is MemoryPressure", DefaultHard,
			func(n *NodeStats) { n.MemoryWorkingSetBytes = n.MemoryCapacityBytes - 99*mi },
			[]corev1.NodeConditionType{corev1.NodeMemoryPressure}, corev1.ResourceMemory},
		{"exactly 100Mi available is not below the threshold", DefaultHard,
			func(n *NodeStats) { n.MemoryWorkingSetBytes = n.MemoryCapacityBytes - 100*mi }, nil, ""},
		{"under 10% of nodefs free is DiskPressure", DefaultHard,
			func(n *NodeStats) { n.NodeFsAvailableBytes = 9 * gi },
			[]corev1.NodeConditionType{corev1.NodeDiskPressure}, corev1.ResourceEphemeralStorage},
		{"under 5% of inodes free is DiskPressure", DefaultHard,
			func(n *NodeStats) { n.NodeFsInodesFree = 40000 },
			[]corev1.NodeConditionType{corev1.NodeDiskPressure}, resourceInodes},
		{"pid.available has no default threshold", DefaultHard,
			func(n *NodeStats) { n.RunningProcesses = n.MaxPID - 10 }, nil, ""},
		{"a configured pid.available threshold is PIDPressure", "pid.available<1000",
			func(n *NodeStats) { n.RunningProcesses = n.MaxPID - 999 },
			[]corev1.NodeConditionType{corev1.NodePIDPressure}, resourcePIDs},
		{"memory is reclaimed first when memory and disk are short", "nodefs.available<10%,memory.available<100Mi",
			func(n *NodeStats) { n.NodeFsAvailableBytes = gi; n.MemoryWorkingSetBytes = n.MemoryCapacityBytes },
			[]corev1.NodeConditionType{corev1.NodeDiskPressure, corev1.NodeMemoryPressure}, corev1.ResourceMemory},
		{"a signal that was not observed meets no threshold", DefaultHard,
			func(n *NodeStats) { n.NodeFsCapacityBytes, n.NodeFsAvailableBytes = 0, 0 }, nil, ""},
		{"no thresholds, no pressure", "",
			func(n *NodeStats) { n.MemoryWorkingSetBytes = n.MemoryCapacityBytes }, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewManager(mustParse(t, tc.thresholds), 0)
			n := healthy()
			tc.node(&n)
			d := m.Synchronize(time.Now(), &Summary{Node: n}, nil)
			if !equalConditions(d.Conditions, tc.conditions) {
				t.Errorf("conditions %v, want %v", d.Conditions, tc.conditions)
			}
			if !equalConditions(m.Conditions(), tc.conditions) {
				t.Errorf("Conditions() = %v after synchronize, want %v", m.Conditions(), tc.conditions)
			}
			if d.Reclaim != tc.reclaim {
				t.Errorf("reclaim %q, want %q", d.Reclaim, tc.reclaim)
			}
		})
	}
}

func equalConditions(a, b []corev1.NodeConditionType) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestPressureConditionOutlastsThresholdByTransitionPeriod(t *testing.T) {
	m := NewManager(mustParse(t, DefaultHard), time.Minute)
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	short := healthy()
	short.MemoryWorkingSetBytes = short.MemoryCapacityBytes
	for _, step := range []struct {
		at       time.Duration
		node     NodeStats
		pressure bool
		reclaim  bool
	}{
		{0, short, true, true},
		{10 * time.Second, healthy(), true, false}, // relieved, but within the period
		{59 * time.Second, healthy(), true, false},
		{60 * time.Second, healthy(), false, false},
		{70 * time.Second, short, true, true},
	} {
		d := m.Synchronize(t0.Add(step.at), &Summary{Node: step.node}, nil)
		if got := len(d.Conditions) == 1 && d.Conditions[0] == corev1.NodeMemoryPressure; got != step.pressure {
			t.Errorf("at +%v: conditions %v, want MemoryPressure %v", step.at, d.Conditions, step.pressure)
		}
		if got := d.Reclaim != ""; got != step.reclaim {
			t.Errorf("at +%v: reclaim %q, want reclaiming %v", step.at, d.Reclaim, step.reclaim)
		}
	}
}

// pod builds pods for the ranking tests.
type podBuilder struct{ p *corev1.Pod }

func makePod(name string) *podBuilder {
	p := &corev1.Pod{}
	p.Name, p.Namespace, p.UID = name, "default", types.UID("uid-"+name)
	p.Spec.Containers = []corev1.Container{{Name: "main"}}
	return &podBuilder{p}
}

func (b *podBuilder) Requests(r corev1.ResourceName, q string) *podBuilder {
	c := &b.p.Spec.Containers[0]
	if c.Resources.Requests == nil {
		c.Resources.Requests = corev1.ResourceList{}
	}
	c.Resources.Requests[r] = resource.MustParse(q)
	return b
}

func (b *podBuilder) Priority(p int32) *podBuilder { b.p.Spec.Priority = &p; return b }

func (b *podBuilder) Annotate(k, v string) *podBuilder {
	if b.p.Annotations == nil {
		b.p.Annotations = map[string]string{}
	}
	b.p.Annotations[k] = v
	return b
}

func (b *podBuilder) Obj() *corev1.Pod { return b.p }

func names(pods []*corev1.Pod) string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name
	}
	return strings.Join(out, ",")
}

func TestPodsAreRankedAsTheKubeletDoes(t *testing.T) {
	memory := func(b int64) PodStats {
		return PodStats{Containers: []ContainerStats{{Name: "main", MemoryWorkingSetBytes: b}}}
	}
	for _, tc := range []struct {
		name       string
		thresholds string
		node       func(n *NodeStats)
		pods       []*corev1.Pod
		stats      map[string]PodStats // by pod name; absent: no stats
		want       string
	}{
		{"memory: over-request first, then lower priority, then more above request", DefaultHard,
			func(n *NodeStats) { n.MemoryWorkingSetBytes = n.MemoryCapacityBytes },
			[]*corev1.Pod{
				makePod("guaranteed-under-request").Requests(corev1.ResourceMemory, "200Mi").Obj(),
				makePod("besteffort-important").Priority(1000).Obj(),
				makePod("besteffort-small").Obj(),
				makePod("burstable-over-request").Requests(corev1.ResourceMemory, "100Mi").Obj(),
			},
			map[string]PodStats{
				"guaranteed-under-request": memory(150 * mi), "besteffort-important": memory(500 * mi),
				"besteffort-small": memory(10 * mi), "burstable-over-request": memory(300 * mi),
			},
			"burstable-over-request,besteffort-small,besteffort-important,guaranteed-under-request"},
		{"memory: a pod without stats goes first", DefaultHard,
			func(n *NodeStats) { n.MemoryWorkingSetBytes = n.MemoryCapacityBytes },
			[]*corev1.Pod{makePod("measured").Obj(), makePod("unmeasured").Obj()},
			map[string]PodStats{"measured": memory(gi)},
			"unmeasured,measured"},
		{"nodefs: volumes, logs and writable layers count, beyond the ephemeral-storage request", DefaultHard,
			func(n *NodeStats) { n.NodeFsAvailableBytes = gi },
			[]*corev1.Pod{
				makePod("requested-much").Requests(corev1.ResourceEphemeralStorage, "10Gi").Obj(),
				makePod("logs").Obj(),
				makePod("volume").Obj(),
				makePod("rootfs").Obj(),
			},
			map[string]PodStats{
				"requested-much": {VolumeBytes: 5 * gi},
				"logs":           {Containers: []ContainerStats{{Name: "main", LogsBytes: 200 * mi}}},
				"volume":         {VolumeBytes: 300 * mi},
				"rootfs":         {Containers: []ContainerStats{{Name: "main", RootfsBytes: 250 * mi}}},
			},
			"volume,rootfs,logs,requested-much"},
		{"inodes: the pod using most inodes first", DefaultHard,
			func(n *NodeStats) { n.NodeFsInodesFree = 10 },
			[]*corev1.Pod{makePod("few").Obj(), makePod("many").Obj()},
			map[string]PodStats{"few": {VolumeInodes: 10}, "many": {VolumeInodes: 10000}},
			"many,few"},
		{"pids: lower priority first, then more processes", "pid.available<1000",
			func(n *NodeStats) { n.RunningProcesses = n.MaxPID },
			[]*corev1.Pod{makePod("forky-important").Priority(10).Obj(), makePod("quiet").Obj(), makePod("forky").Obj()},
			map[string]PodStats{"forky-important": {Processes: 5000}, "quiet": {Processes: 1}, "forky": {Processes: 3000}},
			"forky,quiet,forky-important"},
		{"critical pods are never candidates", DefaultHard,
			func(n *NodeStats) { n.MemoryWorkingSetBytes = n.MemoryCapacityBytes },
			[]*corev1.Pod{
				makePod("static").Annotate(annotationConfigSource, "file").Obj(),
				makePod("mirror").Annotate(annotationConfigMirror, "abc").Obj(),
				makePod("node-critical").Priority(2000001000).Obj(),
				makePod("ordinary").Obj(),
			},
			map[string]PodStats{"static": memory(gi), "mirror": memory(gi), "node-critical": memory(gi), "ordinary": memory(mi)},
			"ordinary"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := healthy()
			tc.node(&n)
			s := &Summary{Node: n, Pods: map[types.UID]PodStats{}}
			for _, p := range tc.pods {
				if st, ok := tc.stats[p.Name]; ok {
					s.Pods[p.UID] = st
				}
			}
			d := NewManager(mustParse(t, tc.thresholds), 0).Synchronize(time.Now(), s, tc.pods)
			if got := names(d.Candidates); got != tc.want {
				t.Errorf("ranked %s, want %s", got, tc.want)
			}
		})
	}
}

func TestEvictionMessageIsTheKubelets(t *testing.T) {
	n := healthy()
	n.MemoryWorkingSetBytes = n.MemoryCapacityBytes - 50*mi
	pod := makePod("hog").Requests(corev1.ResourceMemory, "100Mi").Obj()
	pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "sidecar"})
	s := &Summary{Node: n, Pods: map[types.UID]PodStats{pod.UID: {Containers: []ContainerStats{
		{Name: "main", MemoryWorkingSetBytes: 300 * mi}, {Name: "sidecar", MemoryWorkingSetBytes: 0},
	}}}}
	d := NewManager(mustParse(t, DefaultHard), 0).Synchronize(time.Now(), s, []*corev1.Pod{pod})
	want := "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. " +
		"Container main was using 300Mi, request is 100Mi, has larger consumption of memory. "
	if got := d.Message(pod); got != want {
		t.Errorf("message\n%q, want\n%q", got, want)
	}

	n = healthy()
	n.NodeFsAvailableBytes = 4 * gi
	s = &Summary{Node: n, Pods: map[types.UID]PodStats{pod.UID: {VolumeBytes: gi,
		Containers: []ContainerStats{{Name: "main", RootfsBytes: 3 * mi, LogsBytes: mi}}}}}
	d = NewManager(mustParse(t, DefaultHard), 0).Synchronize(time.Now(), s, []*corev1.Pod{pod})
	// 10% of 100Gi, computed as the kubelet does, through a float32
	// percentage: 10737418400, not 10Gi.
	want = "The node was low on resource: ephemeral-storage. Threshold quantity: 10737418400, available: 4Gi. " +
		"Container main was using 4Mi, request is 0, has larger consumption of ephemeral-storage. "
	if got := d.Message(pod); got != want {
		t.Errorf("message\n%q, want\n%q", got, want)
	}
}

func TestReadNodeStatsReadsThisHost(t *testing.T) {
	n, err := ReadNodeStats(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if n.MemoryCapacityBytes <= 0 || n.MemoryWorkingSetBytes <= 0 || n.MemoryWorkingSetBytes > n.MemoryCapacityBytes {
		t.Errorf("memory capacity %d, working set %d", n.MemoryCapacityBytes, n.MemoryWorkingSetBytes)
	}
	if n.NodeFsCapacityBytes <= 0 || n.NodeFsAvailableBytes > n.NodeFsCapacityBytes || n.NodeFsInodesFree > n.NodeFsInodes {
		t.Errorf("nodefs %d of %d bytes, %d of %d inodes free", n.NodeFsAvailableBytes, n.NodeFsCapacityBytes, n.NodeFsInodesFree, n.NodeFsInodes)
	}
	if n.RunningProcesses <= 0 || n.MaxPID <= n.RunningProcesses {
		t.Errorf("%d tasks of at most %d", n.RunningProcesses, n.MaxPID)
	}
	if _, err := ReadNodeStats("/no/such/dir"); err == nil {
		t.Error("a missing root dir is not reported")
	}
}
