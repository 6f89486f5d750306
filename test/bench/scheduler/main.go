// Command scheduler benchmarks minik's scheduler with scheduler_perf-style
// workloads: a real `minik up` with only the apiserver and embedded etcd,
// Node objects only, and the scheduler running in this process.
//
// For each workload it creates the nodes, lets a first scheduler place the
// initial pods, creates the measured pods while no scheduler serves them,
// then starts a fresh scheduler and times how long it takes to bind them
// all (from the moment its caches are synced). One JSON line per workload:
//
//	{"workload":"SchedulingBasic","nodes":5000,"pods":10000,"pods_per_s":...}
//
// Flags: -workloads Basic,NodeAffinity,...  -scale 0.1 (shrinks every count)
// -bin path/to/minik (default bin/minik)  -events=false (no Events sent).
//
// Peer mode (-peer path/to/kube-scheduler, what `make bench-scheduler
// PEER=1` runs) races minik's scheduler and the upstream kube-scheduler
// instead, each as its own process (peer.go); -compare (default on) first
// compares their placements of edge-case pods (compare.go); -rounds N
// repeats the workloads.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/client"
	"minik/client/informer"
	"minik/client/kubeconfig"
	"minik/internal/freeport"
	"minik/scheduler"
	"minik/test/bench/benchkit"
)

// workload is one scheduler_perf test case.
type workload struct {
	Name         string
	Nodes        int
	InitialPods  int
	MeasuredPods int
	node         func(i int) *corev1.Node
	initialPod   func(i int) *corev1.Pod
	measuredPod  func(i int) *corev1.Pod
	priorities   bool // create the low and high PriorityClasses
	actAsKubelet bool // remove terminating pods, as a kubelet would
}

func workloads() []workload {
	return []workload{
		{Name: "SchedulingBasic", Nodes: 5000, InitialPods: 1000, MeasuredPods: 10000,
			node: defaultNode, initialPod: func(int) *corev1.Pod { return defaultPod() }, measuredPod: func(int) *corev1.Pod { return defaultPod() }},
		{Name: "SchedulingNodeAffinity", Nodes: 5000, MeasuredPods: 10000,
			node: func(i int) *corev1.Node {
				n := defaultNode(i)
				n.Labels["topology.kubernetes.io/zone"] = "zone1"
				return n
			},
			measuredPod: func(int) *corev1.Pod {
				p := defaultPod()
				p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
					NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
						{Key: "topology.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"zone1", "zone2"}}}}}}}}
				return p
			}},
		{Name: "SchedulingPodAntiAffinity", Nodes: 5000, MeasuredPods: 5000,
			node: defaultNode,
			measuredPod: func(int) *corev1.Pod {
				p := defaultPod()
				p.Labels = map[string]string{"color": "green"}
				p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"color": "green"}}, TopologyKey: corev1.LabelHostname}}}}
				return p
			}},
		{Name: "SchedulingPreemption", Nodes: 500, InitialPods: 2000, MeasuredPods: 500, priorities: true, actAsKubelet: true,
			node: defaultNode,
			initialPod: func(int) *corev1.Pod {
				p := defaultPod()
				p.Spec.PriorityClassName = "low"
				p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{"cpu": resource.MustParse("900m"), "memory": resource.MustParse("500Mi")}
				return p
			},
			measuredPod: func(int) *corev1.Pod {
				p := defaultPod()
				p.Spec.PriorityClassName = "high"
				p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{"cpu": resource.MustParse("900m"), "memory": resource.MustParse("500Mi")}
				return p
			}},
	}
}

// defaultNode is scheduler_perf's node-default: 4 cpu, 32Gi, 110 pods.
func defaultNode(i int) *corev1.Node {
	name := fmt.Sprintf("node-%05d", i)
	rl := corev1.ResourceList{"cpu": resource.MustParse("4"), "memory": resource.MustParse("32Gi"), "pods": resource.MustParse("110")}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}},
		Status: corev1.NodeStatus{Capacity: rl, Allocatable: rl,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
}

// defaultPod is scheduler_perf's pod-default: 100m cpu, 500Mi memory.
func defaultPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "pod-", Labels: map[string]string{}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": resource.MustParse("100m"), "memory": resource.MustParse("500Mi")}}}}},
	}
}

func main() {
	var (
		only  = flag.String("workloads", "", "comma-separated workload names (default all); the Scheduling prefix may be left out")
		scale = flag.Float64("scale", 1, "multiply every node and pod count by this")
		bin   = flag.String("bin", "bin/minik", "the minik binary")
		prof  = flag.String("cpuprofile", "", "write a CPU profile of the measured phases to this file")
		peer  = flag.String("peer", "", "race this kube-scheduler binary against `minik scheduler`, each its own process")
		// Peer mode only.
		rounds  = flag.Int("rounds", 1, "peer mode: how many times to run every workload under each scheduler")
		compare = flag.Bool("compare", true, "peer mode: compare the two schedulers' placements of edge-case pods first")
	)
	flag.StringVar(&plotFile, "plot", "", "draw the pods scheduled over time in SchedulingBasic to this PNG file")
	flag.StringVar(&apiserverProfile, "apiserver-cpuprofile", "", "write a 2s CPU profile of the apiserver, from minik's scheduler's first bind, to this file (without -peer: of minik up, etcd included)")
	flag.BoolVar(&sendEvents, "events", true, "send the scheduler's events (Scheduled, FailedScheduling) to the apiserver")
	flag.Parse()
	if *prof != "" {
		f, err := os.Create(*prof)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		_ = pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	// Dropped-event warnings would drown the output; keep errors only.
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
	var ws []workload
	for _, w := range workloads() {
		if *only != "" && !selected(*only, w.Name) {
			continue
		}
		w.Nodes, w.InitialPods, w.MeasuredPods = scaled(w.Nodes, *scale), scaled(w.InitialPods, *scale), scaled(w.MeasuredPods, *scale)
		ws = append(ws, w)
	}
	if *peer != "" {
		if err := runPeer(*bin, *peer, ws, *rounds, *compare); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	for _, w := range ws {
		res, err := run(*bin, w)
		if err != nil {
			if log, _ := os.ReadFile(lastUpLog); len(log) > 0 {
				fmt.Fprintf(os.Stderr, "minik up said:\n%s\n", tail(string(log), 2000))
			}
			fmt.Fprintf(os.Stderr, "%s: %v\n", w.Name, err)
			pprof.StopCPUProfile()
			os.Exit(1)
		}
		line, _ := json.Marshal(res)
		fmt.Println(string(line))
	}
}

// lastUpLog is the log file of the latest `minik up`, shown on failure.
var lastUpLog string

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func selected(list, name string) bool {
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s == name || "Scheduling"+s == name {
			return true
		}
	}
	return false
}

func scaled(n int, f float64) int {
	if n == 0 {
		return 0
	}
	return max(1, int(float64(n)*f))
}

// plotFile is the -plot flag.
var plotFile string

// sendEvents is the -events flag.
var sendEvents = true

// noEvents is an EventRecorder that drops everything.
type noEvents struct{}

func (noEvents) Eventf(client.Object, string, string, string, ...any) {}

type result struct {
	Workload string  `json:"workload"`
	Nodes    int     `json:"nodes"`
	Pods     int     `json:"pods"`
	PodsPerS float64 `json:"pods_per_s"`
	Seconds  float64 `json:"seconds"`
	// VictimsPerPod is how many initial pods were preempted per measured
	// pod (preemption workloads only; the fewest possible is 1).
	VictimsPerPod float64 `json:"victims_per_pod,omitempty"`
}

func run(bin string, w workload) (*result, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, err := os.MkdirTemp("", "minik-bench-sched-")
	if err != nil {
		return nil, err
	}
	lastUpLog = filepath.Join(os.TempDir(), "minik-bench-sched-up.log")
	defer func() {
		_ = os.Rename(filepath.Join(dir, "up.log"), lastUpLog)
		os.RemoveAll(dir)
	}()
	c, stop, err := startCluster(ctx, bin, dir)
	if err != nil {
		return nil, err
	}
	defer stop()

	if w.priorities {
		for _, pc := range []schedulingv1.PriorityClass{{ObjectMeta: metav1.ObjectMeta{Name: "low"}, Value: 10}, {ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000}} {
			if _, err := client.For[schedulingv1.PriorityClass](c, client.PriorityClasses).Create(ctx, &pc, metav1.CreateOptions{}); err != nil {
				return nil, err
			}
		}
	}
	if err := parallel(w.Nodes, func(i int) error {
		_, err := c.Nodes().Create(ctx, w.node(i), metav1.CreateOptions{})
		return err
	}); err != nil {
		return nil, fmt.Errorf("create nodes: %w", err)
	}
	if w.actAsKubelet {
		go fakeKubelet(ctx, c)
	}

	// Initial pods, placed by a first scheduler.
	if w.InitialPods > 0 {
		if err := createPods(ctx, c, w.InitialPods, "initial", "bench-init", w.initialPod); err != nil {
			return nil, err
		}
		if _, _, err := schedule(ctx, c, "bench-init", w.InitialPods); err != nil {
			return nil, fmt.Errorf("initial pods: %w", err)
		}
	}
	// Measured pods, created while no scheduler serves them.
	if err := createPods(ctx, c, w.MeasuredPods, "measured", "bench", w.measuredPod); err != nil {
		return nil, err
	}
	if apiserverProfile != "" {
		go profileAPIServer(ctx, c, apiserverProfile)
	}
	d, binds, err := schedule(ctx, c, "bench", w.MeasuredPods)
	if err != nil {
		return nil, fmt.Errorf("measured pods: %w", err)
	}
	if plotFile != "" && w.Name == "SchedulingBasic" {
		xs, ys := make([]float64, len(binds)), make([]float64, len(binds))
		for i, t := range binds {
			xs[i], ys[i] = t.Seconds(), float64(i+1)
		}
		title := fmt.Sprintf("SchedulingBasic: %d pods on %d nodes", w.MeasuredPods, w.Nodes)
		if err := benchkit.PlotSeries(plotFile, title, "seconds since the scheduler's caches synced", "pods scheduled", xs, ys); err != nil {
			return nil, err
		}
	}
	res := &result{Workload: w.Name, Nodes: w.Nodes, Pods: w.MeasuredPods, PodsPerS: round(float64(w.MeasuredPods) / d.Seconds()), Seconds: round(d.Seconds())}
	if w.priorities {
		if res.VictimsPerPod, err = victimsPerPod(ctx, c, w); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// victimsPerPod counts the initial pods deleted or being deleted, per
// measured pod. It waits a moment first, so that deletions a scheduler
// decided just before the last bind are counted too.
func victimsPerPod(ctx context.Context, c *client.Client, w workload) (float64, error) {
	time.Sleep(time.Second)
	list, err := c.Pods().List(ctx, "default", metav1.ListOptions{LabelSelector: "bench=initial"})
	if err != nil {
		return 0, err
	}
	left := 0
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			left++
		}
	}
	return float64(int(float64(w.InitialPods-left)/float64(w.MeasuredPods)*100+0.5)) / 100, nil
}

func round(f float64) float64 { return float64(int(f*10+0.5)) / 10 }

// createPods creates n pods made by mk in the default namespace, labelled
// bench=role, for the scheduler schedulerName.
func createPods(ctx context.Context, c *client.Client, n int, role, schedulerName string, mk func(int) *corev1.Pod) error {
	return parallel(n, func(i int) error {
		p := mk(i)
		p.Namespace = "default"
		p.Labels["bench"] = role
		p.Spec.SchedulerName = schedulerName
		_, err := c.Pods().Create(ctx, p, metav1.CreateOptions{})
		return err
	})
}

// schedule runs a scheduler named name until want of its pods are bound,
// and returns the time from its caches being synced to the last bind
// being seen through its watch.
func schedule(ctx context.Context, c *client.Client, name string, want int) (time.Duration, []time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var bound atomic.Int64
	done := make(chan struct{})
	var once sync.Once
	var (
		mu    sync.Mutex
		start time.Time
		binds []time.Duration // when each bind was seen, from start
	)
	count := func(p *corev1.Pod) {
		if p.Spec.SchedulerName != name || p.Spec.NodeName == "" {
			return
		}
		mu.Lock()
		var at time.Duration // a bind seen before start was noted came at once
		if !start.IsZero() {
			at = time.Since(start)
		}
		binds = append(binds, at)
		mu.Unlock()
		if int(bound.Add(1)) >= want {
			once.Do(func() { close(done) })
		}
	}
	cfg := scheduler.Config{Client: c, SchedulerName: name, Seed: 1}
	if !sendEvents {
		cfg.Recorder = noEvents{}
	}
	s := scheduler.New(cfg)
	// Count binds as the scheduler's own informer sees them come back from
	// the apiserver, as scheduler_perf does with its shared informer.
	s.AddPodHandler(informer.Handler[corev1.Pod]{
		OnAdd: count,
		OnUpdate: func(old, p *corev1.Pod) {
			if old.Spec.NodeName == "" {
				count(p)
			}
		},
	})
	errc := make(chan error, 1)
	go func() { errc <- s.Run(ctx) }()
	select {
	case <-s.Synced():
	case err := <-errc:
		return 0, nil, err
	}
	mu.Lock()
	start = time.Now()
	mu.Unlock()
	select {
	case <-done:
		d := time.Since(start)
		mu.Lock()
		defer mu.Unlock()
		return d, binds, nil
	case <-time.After(10 * time.Minute):
		return 0, nil, fmt.Errorf("only %d of %d pods bound after 10 minutes", bound.Load(), want)
	}
}

// fakeKubelet finishes graceful deletions, as kubelets do once a pod's
// containers have stopped: preemption victims then go away.
func fakeKubelet(ctx context.Context, c *client.Client) {
	zero := int64(0)
	inf := informer.New(c.Pods(), informer.Config{})
	remove := func(p *corev1.Pod) {
		if p.DeletionTimestamp != nil {
			ns, name, uid := p.Namespace, p.Name, p.UID
			go func() {
				_ = c.Pods().Delete(ctx, ns, name, metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &uid}})
			}()
		}
	}
	inf.AddHandler(informer.Handler[corev1.Pod]{OnAdd: remove, OnUpdate: func(_, p *corev1.Pod) { remove(p) }})
	_ = inf.Run(ctx)
}

// parallel calls fn(0..n-1) on 64 goroutines and returns the first error.
// A call the apiserver asks to retry (429, or a server timeout) is retried.
func parallel(n int, call func(i int) error) error {
	fn := func(i int) error {
		for {
			err := call(i)
			if !apierrors.IsTooManyRequests(err) && !apierrors.IsServerTimeout(err) && !apierrors.IsTimeout(err) {
				return err
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	var next atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for range min(64, n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || firstErr.Load() != nil {
					return
				}
				if err := fn(i); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err, ok := firstErr.Load().(error); ok {
		return err
	}
	return nil
}

// startCluster runs `minik up` with only etcd and the apiserver in dir and returns a client
// for it once it is ready.
func startCluster(ctx context.Context, bin, dir string) (*client.Client, func(), error) {
	addr, err := freeport.Addr()
	if err != nil {
		return nil, nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "up.log"))
	if err != nil {
		return nil, nil, err
	}
	// Only etcd and the apiserver: the scheduler under test runs here, and
	// no controller judges the heartbeat-less nodes.
	cmd := exec.Command(bin, "up", "--data-dir", dir, "--listen", addr, "--kubelet=false", "--scheduler=false", "--controller=false")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	stop := func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
		}
		logf.Close()
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if kc, err := kubeconfig.Load(filepath.Join(dir, "admin.kubeconfig")); err == nil {
			cfg, err := client.ConfigFromKubeconfig(kc)
			if err == nil {
				cfg.UserAgent = "bench-scheduler"
				c, err := client.New(cfg)
				if err == nil {
					if _, err := c.Namespaces().Get(ctx, "", "default", metav1.GetOptions{}); err == nil {
						return c, stop, nil
					}
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	stop()
	return nil, nil, fmt.Errorf("minik up not ready after 60s (log in %s)", dir)
}
