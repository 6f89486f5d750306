// Command density is Kubernetes' density test on minik: a control plane
// (etcd, apiserver, scheduler, controller as separate processes) and
// -nodes hollow nodes (one `minik hollow` process) are filled with
// -pods-per-node pods each through Deployments, then -latency-pods more
// pods are started one Deployment at a time at -latency-qps, as the
// density test of kubernetes/perf-tests does (saturation, then latency
// pods), with the scheduler and the controller limited to -component-qps
// requests a second each, as the Kubernetes scalability jobs run theirs.
// It prints one JSON line per figure:
//
//   - pod startup latency (p50, p99, max) of the latency pods, the SLI:
//     from the pod's creationTimestamp to when all its containers are
//     reported started, observed through a watch (SLO p99 ≤ 5s);
//     the same of the saturation pods, which includes their queueing;
//
//   - API call latency p99 during the test from the apiserver's own
//     apiserver_request_duration_seconds, per (verb, resource,
//     subresource, scope), the worst mutating and the worst read-only
//     (SLO p99 ≤ 1s);
//
//   - the peak RSS of etcd, the apiserver, the scheduler, the controller
//     and the hollow nodes, and etcd's database size;
//
//   - the saturation throughput and the total time.
//
//     benchkit.ControlPlane ◀── minik hollow --nodes N
//     ▲ Deployments (saturation, latency), watch of every pod (the SLI's clock)
//     this bench
//
// Run it with `make bench-density` or `go run ./test/bench/density -h`;
// -plot FILE writes the startup latency CDF as a PNG.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik/client"
	"minik/client/informer"
	"minik/test/bench/benchkit"
)

type options struct {
	bin                   string
	nodes, podsPerNode    int
	replicasPerDeployment int
	latencyPods           int
	latencyQPS            float64
	componentQPS          float64
	plot                  string
	spread                time.Duration
	keep                  bool
	timeout               time.Duration
}

func main() {
	var o options
	flag.StringVar(&o.bin, "bin", "", "minik binary (default: bin/minik of this module, built if missing)")
	flag.IntVar(&o.nodes, "nodes", 1000, "hollow nodes")
	flag.IntVar(&o.podsPerNode, "pods-per-node", 30, "saturation pods per node")
	flag.IntVar(&o.replicasPerDeployment, "replicas", 300, "replicas of each saturation Deployment")
	flag.IntVar(&o.latencyPods, "latency-pods", 500, "latency pods, one Deployment of 1 each, after saturation")
	flag.Float64Var(&o.latencyQPS, "latency-qps", 10, "latency Deployments created per second")
	flag.Float64Var(&o.componentQPS, "component-qps", 100, "--kube-api-qps and --kube-api-burst of the scheduler and the controller, as the Kubernetes scalability jobs run kube-scheduler and kube-controller-manager (0: unlimited)")
	flag.StringVar(&o.plot, "plot", "", "write the pod startup latency CDF to this PNG file")
	flag.DurationVar(&o.spread, "start-spread", 10*time.Second, "the hollow nodes start evenly over this time (minik hollow --start-spread)")
	flag.BoolVar(&o.keep, "keep", false, "keep the temp dir (the components' logs are in it)")
	flag.DurationVar(&o.timeout, "timeout", 25*time.Minute, "give up after this long")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "bench-density:", err)
		os.Exit(1)
	}
}

const namespace = "density"

func run(ctx context.Context, o options) error {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	begin := time.Now()
	dir, cleanup, err := benchkit.TempDir("minik-bench-density-", o.keep)
	if err != nil {
		return err
	}
	defer cleanup()
	cpo := benchkit.ControlPlaneOptions{Scheduler: true, Controller: true}
	if o.componentQPS > 0 {
		limit := []string{"--kube-api-qps", fmt.Sprint(o.componentQPS), "--kube-api-burst", fmt.Sprint(int(o.componentQPS))}
		cpo.SchedulerArgs, cpo.ControllerArgs = limit, limit
	}
	cp, h, c, err := benchkit.StartWithHollowNodes(ctx, o.bin, dir, cpo, o.nodes, o.spread)
	if err != nil {
		return err
	}
	defer cp.Stop()
	defer h.Stop()
	fmt.Fprintf(os.Stderr, "%d nodes Ready after %.1fs\n", o.nodes, time.Since(h.Started).Seconds())
	if _, err := c.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	pods := newPodClock(c)
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch() // before the control plane stops
	go pods.inf.Run(watchCtx)
	<-pods.inf.Synced()
	before, err := benchkit.ReadRequestLatencies(ctx, c)
	if err != nil {
		return err
	}
	cpuBefore, testStart := processCPU(cp, h), time.Now()

	// Saturation: every Deployment at once; the controller and the
	// scheduler go as fast as -component-qps lets them.
	saturation := o.nodes * o.podsPerNode
	satStart := time.Now()
	for i, left := 0, saturation; left > 0; i++ {
		n := min(left, o.replicasPerDeployment)
		if err := createDeployment(ctx, c, fmt.Sprintf("saturation-%d", i), "saturation", n); err != nil {
			return err
		}
		left -= n
	}
	if err := pods.waitStarted(ctx, "saturation", saturation); err != nil {
		return err
	}
	satTime := time.Since(satStart)
	fmt.Fprintf(os.Stderr, "%d saturation pods started in %.1fs\n", saturation, satTime.Seconds())

	// Latency pods: one at a time at latencyQPS, on a full cluster.
	tick := time.NewTicker(time.Duration(float64(time.Second) / o.latencyQPS))
	defer tick.Stop()
	for i := range o.latencyPods {
		if err := createDeployment(ctx, c, fmt.Sprintf("latency-%d", i), "latency", 1); err != nil {
			return err
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := pods.waitStarted(ctx, "latency", o.latencyPods); err != nil {
		return err
	}
	after, err := benchkit.ReadRequestLatencies(ctx, c)
	if err != nil {
		return err
	}
	cpuAfter, testTime := processCPU(cp, h), time.Since(testStart)

	load := benchkit.LoadAvg()
	latency, _ := pods.startupLatencies("latency")
	for _, group := range []string{"latency", "saturation"} {
		ls, seen := pods.startupLatencies(group)
		benchkit.Emit(map[string]any{"bench": "density", "figure": "pod_startup_latency", "pods": group, "count": len(ls), "nodes": o.nodes,
			"p50_ms": benchkit.Ms(benchkit.Quantile(ls, 0.50)), "p99_ms": benchkit.Ms(benchkit.Quantile(ls, 0.99)),
			"max_ms": benchkit.Ms(benchkit.Quantile(ls, 1)), "seen_to_started_p99_ms": benchkit.Ms(benchkit.Quantile(seen, 0.99)),
			"load1": load})
	}
	calls := after.Since(before)
	for _, cl := range calls { // every kind, worst first, for whoever reads the log
		fmt.Fprintf(os.Stderr, "p99 %8.1f ms  %6d calls  %s\n", cl.P99*1000, cl.Calls, cl.Kind)
	}
	mut, ro := benchkit.Worst(calls)
	benchkit.Emit(map[string]any{"bench": "density", "figure": "api_call_latency", "nodes": o.nodes,
		"mutating_p99_ms": benchkit.Round(mut.P99*1000, 1), "mutating_worst": mut.Kind.String(), "mutating_worst_calls": mut.Calls,
		"readonly_p99_ms": benchkit.Round(ro.P99*1000, 1), "readonly_worst": ro.Kind.String(), "readonly_worst_calls": ro.Calls,
		"load1": load})
	cpu := map[string]any{"bench": "density", "figure": "cpu", "nodes": o.nodes, "window_s": benchkit.Round(testTime.Seconds(), 1)}
	for name, d := range cpuAfter {
		cpu[name+"_cores"] = benchkit.Round((d-cpuBefore[name]).Seconds()/testTime.Seconds(), 2)
	}
	benchkit.Emit(cpu)
	rss := map[string]any{"bench": "density", "figure": "peak_rss", "nodes": o.nodes}
	for name, p := range cp.Procs {
		rss[name+"_mb"] = benchkit.Round(p.PeakRSSMB(), 1)
	}
	rss["hollow_mb"] = benchkit.Round(h.PeakRSSMB(), 1)
	benchkit.Emit(rss)
	db, err := benchkit.EtcdDBSizeMB(filepath.Join(dir, "etcd"))
	if err != nil {
		return err
	}
	benchkit.Emit(map[string]any{"bench": "density", "figure": "etcd_db", "nodes": o.nodes, "pods": saturation + o.latencyPods,
		"size_mb": benchkit.Round(db, 1)})
	benchkit.Emit(map[string]any{"bench": "density", "figure": "total", "nodes": o.nodes, "pods": saturation + o.latencyPods,
		"saturation_s": benchkit.Round(satTime.Seconds(), 1), "saturation_pods_per_s": benchkit.Round(float64(saturation)/satTime.Seconds(), 1),
		"total_s": benchkit.Round(time.Since(begin).Seconds(), 1), "component_qps": o.componentQPS, "load1": load})
	if o.plot != "" {
		if err := benchkit.PlotCDF(o.plot, fmt.Sprintf("pod startup latency, %d latency pods on %d hollow nodes", len(latency), o.nodes), latency); err != nil {
			return err
		}
	}
	return nil
}

// processCPU reads the CPU time each component and the hollow nodes have
// used so far.
func processCPU(cp *benchkit.ControlPlane, h *benchkit.Proc) map[string]time.Duration {
	out := map[string]time.Duration{"hollow": h.CPU()}
	for name, p := range cp.Procs {
		out[name] = p.CPU()
	}
	return out
}

func createDeployment(ctx context.Context, c *client.Client, name, group string, replicas int) error {
	labels := map[string]string{"name": name, "group": group}
	n := int32(replicas)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Spec: appsv1.DeploymentSpec{
		Replicas: &n, Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}}}}}
	_, err := c.Deployments().Create(ctx, d, metav1.CreateOptions{})
	return err
}

// podClock watches every pod of the namespace and keeps, for each, the
// SLI's two ends: its creationTimestamp and when the watch first showed
// all its containers started.
type podClock struct {
	inf *informer.Informer[corev1.Pod]

	mu sync.Mutex
	// firstSeen is when the watch first showed each pod: a
	// sub-second stand-in for its creationTimestamp, which has seconds.
	firstSeen map[types.UID]time.Time
	started   map[types.UID]podTimes
	kick      chan struct{}
}

type podTimes struct {
	group                       string
	created, firstSeen, started time.Time
}

func newPodClock(c *client.Client) *podClock {
	pc := &podClock{firstSeen: map[types.UID]time.Time{}, started: map[types.UID]podTimes{}, kick: make(chan struct{}, 1)}
	pc.inf = informer.New(c.Pods(), informer.Config{Namespace: namespace})
	observe := func(p *corev1.Pod) {
		now := time.Now()
		pc.mu.Lock()
		defer pc.mu.Unlock()
		first, seen := pc.firstSeen[p.UID]
		if !seen {
			first = now
			pc.firstSeen[p.UID] = now
		}
		if _, done := pc.started[p.UID]; done || !allStarted(p) {
			return
		}
		pc.started[p.UID] = podTimes{group: p.Labels["group"], created: p.CreationTimestamp.Time, firstSeen: first, started: now}
		select {
		case pc.kick <- struct{}{}:
		default:
		}
	}
	pc.inf.AddHandler(informer.Handler[corev1.Pod]{OnAdd: observe, OnUpdate: func(_, p *corev1.Pod) { observe(p) }})
	return pc
}

// allStarted reports whether every container of p is reported started
// (running, or run and finished), as the SLI asks.
func allStarted(p *corev1.Pod) bool {
	if len(p.Status.ContainerStatuses) != len(p.Spec.Containers) {
		return false
	}
	for _, s := range p.Status.ContainerStatuses {
		if s.State.Running == nil && s.State.Terminated == nil {
			return false
		}
	}
	return true
}

func (pc *podClock) count(group string) int {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	n := 0
	for _, t := range pc.started {
		if t.group == group {
			n++
		}
	}
	return n
}

// waitStarted waits until n pods of group have started.
func (pc *podClock) waitStarted(ctx context.Context, group string, n int) error {
	last := time.Now()
	for pc.count(group) < n {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d %s pods started: %w", pc.count(group), n, group, ctx.Err())
		case <-pc.kick:
		case <-time.After(time.Second):
		}
		if time.Since(last) >= 10*time.Second {
			last = time.Now()
			fmt.Fprintf(os.Stderr, "%d of %d %s pods started\n", pc.count(group), n, group)
		}
	}
	return nil
}

// startupLatencies are the SLI's values of group's pods, from their
// creationTimestamp, and the same from when the watch first showed them.
func (pc *podClock) startupLatencies(group string) (sli, fromFirstSeen []time.Duration) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	for _, t := range pc.started {
		if t.group == group {
			sli = append(sli, t.started.Sub(t.created))
			fromFirstSeen = append(fromFirstSeen, t.started.Sub(t.firstSeen))
		}
	}
	return sli, fromFirstSeen
}
