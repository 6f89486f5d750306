package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/client"
	"minik/client/informer"
	"minik/test/bench/benchkit"
)

// Peer mode races minik's scheduler and the upstream kube-scheduler on
// the same workloads, each as its own process against minik's apiserver
// (its own process too, over its own etcd), in turn on fresh clusters,
// with scheduler_perf's client limits (qps = burst = 5000) and the
// system:kube-scheduler identity for both.

// peerQPS is scheduler_perf's client limit, given to both schedulers.
const peerQPS = "5000"

// schedulerUnderTest starts one scheduler process against a cluster.
type schedulerUnderTest struct {
	name  string
	start func(c *splitCluster) (*proc, error)
}

func peerSchedulers(minikBin, kubeScheduler string) []schedulerUnderTest {
	return []schedulerUnderTest{
		{"minik", func(c *splitCluster) (*proc, error) {
			return startProc(c.dir, "scheduler", minikBin, "scheduler", "--kubeconfig", c.schedulerKubeconfig, "--seed", "1",
				"--kube-api-qps", peerQPS, "--kube-api-burst", peerQPS)
		}},
		{"upstream", func(c *splitCluster) (*proc, error) {
			config := filepath.Join(c.dir, "kube-scheduler.yaml")
			if err := os.WriteFile(config, []byte(kubeSchedulerConfig(c.schedulerKubeconfig)), 0o644); err != nil {
				return nil, err
			}
			return startProc(c.dir, "scheduler", kubeScheduler, "--config", config, "--secure-port", "0")
		}},
	}
}

// kubeSchedulerConfig is kube-scheduler's default profile with
// scheduler_perf's client limits and no leader election.
func kubeSchedulerConfig(kubeconfigPath string) string {
	return fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %s
  qps: %s
  burst: %s
leaderElection:
  leaderElect: false
`, kubeconfigPath, peerQPS, peerQPS)
}

// peerResult is one scheduler's run of one workload.
type peerResult struct {
	Workload  string  `json:"workload"`
	Scheduler string  `json:"scheduler"`
	Nodes     int     `json:"nodes"`
	Pods      int     `json:"pods"`
	PodsPerS  float64 `json:"pods_per_s"`
	Seconds   float64 `json:"seconds"`
	// StartupS is from the process's start to its first action on a
	// measured pod (informers synced, first cycle); not part of the
	// throughput.
	StartupS float64 `json:"startup_s"`
	// CPU per measured pod, from the first action to the last bind, in ms.
	SchedulerCPU float64 `json:"scheduler_cpu_ms_per_pod"`
	APIServerCPU float64 `json:"apiserver_cpu_ms_per_pod"`
	EtcdCPU      float64 `json:"etcd_cpu_ms_per_pod"`
	// VictimsPerPod: see result.
	VictimsPerPod float64 `json:"victims_per_pod,omitempty"`
	// WritesPerPod counts the apiserver's writes (benchkit's
	// CallKind.Mutating; leases left out) from the scheduler's start until
	// they stop, per measured pod: binds, status patches, events, and in
	// preemption the victims' deletion (the stand-in kubelet's final
	// delete included). WritesByCall splits them by verb and resource.
	WritesPerPod float64            `json:"api_writes_per_pod"`
	WritesByCall map[string]float64 `json:"api_writes_by_call"`
	// TrailingS is from the last bind until the apiserver had taken no
	// write for a second (so at least 1; more while events were still
	// being sent): the scheduler is stopped only then, so that both
	// schedulers' events are all written and paid for.
	TrailingS float64 `json:"trailing_s"`
	// ControlPlaneCPU is the scheduler's, the apiserver's and etcd's CPU
	// per measured pod from the first action until the writes stopped:
	// the whole cost of scheduling the pods, trailing events included.
	ControlPlaneCPU float64 `json:"control_plane_cpu_ms_per_pod"`
}

// peerComparison is minik's run against upstream's on one workload.
type peerComparison struct {
	Workload string `json:"workload"`
	Compare  string `json:"compare"`
	// Throughput is minik's pods/s over upstream's; the target is ≥ 5.
	Throughput float64 `json:"throughput_ratio"`
	// SchedulerCPU, APIServerCPU and ControlPlaneCPU are minik's CPU per
	// pod over upstream's; the scheduler's target is ≤ 0.25.
	SchedulerCPU    float64 `json:"scheduler_cpu_ratio"`
	APIServerCPU    float64 `json:"apiserver_cpu_ratio"`
	ControlPlaneCPU float64 `json:"control_plane_cpu_ratio"`
	TargetMet       bool    `json:"target_met"`
}

func runPeer(bin, kubeScheduler string, ws []workload, rounds int, compare bool) error {
	schedulers := peerSchedulers(bin, kubeScheduler)
	if compare {
		if err := comparePlacements(bin, schedulers); err != nil {
			return err
		}
	}
	for round := range rounds {
		for _, w := range ws {
			results := map[string]*peerResult{}
			// Interleaved: each workload runs under both before the next.
			for _, s := range schedulers {
				res, err := runPeerWorkload(bin, s, w)
				if err != nil {
					return fmt.Errorf("%s with %s scheduler (round %d): %w", w.Name, s.name, round+1, err)
				}
				results[s.name] = res
				printJSON(res)
			}
			m, u := results["minik"], results["upstream"]
			c := peerComparison{Workload: w.Name, Compare: "minik/upstream",
				Throughput: ratio(m.PodsPerS, u.PodsPerS), SchedulerCPU: ratio(m.SchedulerCPU, u.SchedulerCPU),
				APIServerCPU: ratio(m.APIServerCPU, u.APIServerCPU), ControlPlaneCPU: ratio(m.ControlPlaneCPU, u.ControlPlaneCPU)}
			c.TargetMet = c.Throughput >= 5 && c.SchedulerCPU <= 0.25
			printJSON(c)
		}
	}
	return nil
}

func printJSON(v any) {
	line, _ := json.Marshal(v)
	fmt.Println(string(line))
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return float64(int(a/b*100+0.5)) / 100
}

// runPeerWorkload runs w on a fresh cluster: nodes, initial pods bound
// where a scheduler would spread them, measured pods created while no
// scheduler runs; then the scheduler starts and is timed from its first
// action on a measured pod to its last bind, with the CPU its process, the apiserver's and etcd's
// used meanwhile.
func runPeerWorkload(bin string, s schedulerUnderTest, w workload) (*peerResult, error) {
	return onFreshCluster(bin, func(ctx context.Context, c *splitCluster) (*peerResult, error) {
		return racePeer(ctx, c, s, w)
	})
}

func racePeer(ctx context.Context, c *splitCluster, s schedulerUnderTest, w workload) (*peerResult, error) {
	if err := setUpWorkload(ctx, c.admin, w); err != nil {
		return nil, err
	}
	if w.actAsKubelet {
		go fakeKubelet(ctx, c.admin)
	}
	binds := newBindClock(c.admin, w.MeasuredPods, c.apiserver, c.etcd)
	go binds.run(ctx)
	if err := binds.waitSynced(ctx); err != nil {
		return nil, err
	}
	if err := createPods(ctx, c.admin, w.MeasuredPods, "measured", corev1.DefaultSchedulerName, w.measuredPod); err != nil {
		return nil, err
	}
	before, err := benchkit.ReadRequestLatencies(ctx, c.admin)
	if err != nil {
		return nil, err
	}
	started := time.Now()
	sched, err := s.start(c)
	if err != nil {
		return nil, err
	}
	defer sched.stop()
	binds.sample(sched)
	if apiserverProfile != "" && s.name == "minik" {
		go func() {
			select { // profile the measured window, not the scheduler's start-up
			case <-binds.acting:
				profileAPIServer(ctx, c.admin, apiserverProfile)
			case <-ctx.Done():
			}
		}()
	}
	select {
	case <-binds.done:
	case <-sched.done:
		_, log := sched.exited()
		return nil, fmt.Errorf("scheduler exited:\n%s", log)
	case <-time.After(10 * time.Minute):
		log, _ := os.ReadFile(sched.log)
		return nil, fmt.Errorf("only %d of %d pods bound after 10 minutes; the end of the scheduler's log:\n%s",
			binds.count(), w.MeasuredPods, tail(string(log), 4000))
	}
	first, last := binds.first, binds.last
	after, err := writesSettled(ctx, c.admin)
	if err != nil {
		return nil, err
	}
	settled := binds.now()
	d := last.at.Sub(first.at)
	pods := float64(w.MeasuredPods - 1) // the interval starts with the first pod's bind (or nomination)
	// To 10 µs: minik's figures are a few tenths of a ms, and the ratios
	// are taken from these.
	perPod := func(a, b time.Duration) float64 { return math.Round(float64((b-a).Microseconds())/10/pods) / 100 }
	res := &peerResult{Workload: w.Name, Scheduler: s.name, Nodes: w.Nodes, Pods: w.MeasuredPods,
		PodsPerS: round(pods / d.Seconds()), Seconds: round(d.Seconds()), StartupS: round(first.at.Sub(started).Seconds()),
		SchedulerCPU: perPod(first.scheduler, last.scheduler), APIServerCPU: perPod(first.apiserver, last.apiserver),
		EtcdCPU: perPod(first.etcd, last.etcd), TrailingS: round(settled.at.Sub(last.at).Seconds()),
		ControlPlaneCPU: perPod(first.scheduler+first.apiserver+first.etcd, settled.scheduler+settled.apiserver+settled.etcd)}
	if w.priorities {
		if res.VictimsPerPod, err = victimsPerPod(ctx, c.admin, w); err != nil {
			return nil, err
		}
	}
	res.WritesPerPod, res.WritesByCall = writesPerPod(after.Since(before), w.MeasuredPods)
	return res, nil
}

// writesSettled waits until the apiserver has taken no write for
// writesQuiet (at most a minute), and returns its request counts then.
func writesSettled(ctx context.Context, c *client.Client) (benchkit.RequestLatencies, error) {
	const writesQuiet = time.Second
	var last benchkit.RequestLatencies
	lastN, since := uint64(0), time.Now()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		r, err := benchkit.ReadRequestLatencies(ctx, c)
		if err != nil {
			return nil, err
		}
		if n := r.Calls(isWrite); last == nil || n != lastN {
			last, lastN, since = r, n, time.Now()
		} else if time.Since(since) >= writesQuiet {
			return r, nil
		}
	}
	return last, nil
}

// isWrite is what api_writes_per_pod counts: writes, leases left out.
func isWrite(k benchkit.CallKind) bool { return k.Mutating() && k.Resource != "leases" }

// writesPerPod returns the writes among calls per measured pod, in all
// and by verb and resource.
func writesPerPod(calls []benchkit.CallLatency, pods int) (float64, map[string]float64) {
	by := map[string]float64{}
	var all uint64
	for _, c := range calls {
		if !isWrite(c.Kind) {
			continue
		}
		all += c.Calls
		by[c.Kind.Name()] += float64(c.Calls) / float64(pods)
	}
	for k, v := range by {
		by[k] = round(v)
	}
	return round(float64(all) / float64(pods)), by
}

// apiserverProfile is the -apiserver-cpuprofile flag.
var apiserverProfile string

// profileAPIServer writes a 2s CPU profile of the apiserver to path (the
// shortest workload, Preemption, lasts about 3s).
func profileAPIServer(ctx context.Context, c *client.Client, path string) {
	body, _, err := c.GetAs(ctx, "/debug/pprof/profile?seconds=2", "application/octet-stream")
	if err == nil {
		err = os.WriteFile(path, body, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "apiserver profile:", err)
	}
}

// setUpWorkload creates w's priority classes, nodes and initial pods.
// Initial pods are created bound, round robin, as the default spreading
// would place them on identical nodes, so that both schedulers start
// from the same cluster.
func setUpWorkload(ctx context.Context, c *client.Client, w workload) error {
	if w.priorities {
		for _, pc := range []schedulingv1.PriorityClass{{ObjectMeta: metav1.ObjectMeta{Name: "low"}, Value: 10}, {ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000}} {
			if _, err := client.For[schedulingv1.PriorityClass](c, client.PriorityClasses).Create(ctx, &pc, metav1.CreateOptions{}); err != nil {
				return err
			}
		}
	}
	if err := parallel(w.Nodes, func(i int) error {
		_, err := c.Nodes().Create(ctx, w.node(i), metav1.CreateOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("create nodes: %w", err)
	}
	if w.InitialPods == 0 {
		return nil
	}
	return createPods(ctx, c, w.InitialPods, "initial", corev1.DefaultSchedulerName, func(i int) *corev1.Pod {
		p := w.initialPod(i)
		p.Spec.NodeName = w.node(i % w.Nodes).Name
		return p
	})
}

// bindSample is when a bind was seen and how much CPU each process had
// used by then.
type bindSample struct {
	at                         time.Time
	scheduler, apiserver, etcd time.Duration
}

// bindClock watches pods and samples the clock and the processes' CPU
// when the scheduler first acts on a measured pod (binds it, or, when
// preempting, nominates it) and at the last of want binds.
type bindClock struct {
	inf             *informer.Informer[corev1.Pod]
	want            int
	apiserver, etcd *proc

	mu          sync.Mutex
	sched       *proc
	acted       bool
	acting      chan struct{} // closed at the first action
	bound       int
	first, last bindSample
	done        chan struct{}
}

func newBindClock(c *client.Client, want int, apiserver, etcd *proc) *bindClock {
	b := &bindClock{inf: informer.New(c.Pods(), informer.Config{Namespace: "default"}), want: want,
		apiserver: apiserver, etcd: etcd, done: make(chan struct{}), acting: make(chan struct{})}
	b.inf.AddHandler(informer.Handler[corev1.Pod]{
		OnUpdate: func(old, p *corev1.Pod) {
			if p.Labels["bench"] == "measured" && old.Spec.NodeName == "" {
				b.saw(p.Spec.NodeName != "")
			}
		},
	})
	return b
}

func (b *bindClock) run(ctx context.Context) { _ = b.inf.Run(ctx) }

func (b *bindClock) waitSynced(ctx context.Context) error {
	select {
	case <-b.inf.Synced():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// sample names the scheduler process whose CPU is sampled too.
func (b *bindClock) sample(p *proc) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sched = p
}

// saw records the scheduler's change to a pending measured pod: a bind
// or another write (a nomination, a condition).
func (b *bindClock) saw(bound bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if bound {
		b.bound++
	}
	first, last := !b.acted, b.bound == b.want && bound
	if !first && !last {
		return
	}
	s := b.sampleLocked()
	if first {
		b.acted, b.first = true, s
		close(b.acting)
	}
	if last {
		b.last = s
		close(b.done)
	}
}

// now samples the clock and the processes' CPU.
func (b *bindClock) now() bindSample {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sampleLocked()
}

func (b *bindClock) sampleLocked() bindSample {
	s := bindSample{at: time.Now(), apiserver: b.apiserver.cpu(), etcd: b.etcd.cpu()}
	if b.sched != nil {
		s.scheduler = b.sched.cpu()
	}
	return s
}

func (b *bindClock) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.bound
}
