// Command controller benchmarks minik's controller manager: it scales a
// Deployment from 0 to -replicas (3000) on -nodes (100) nodes and prints
// one JSON line with the time until every replica is Running and
// available, and the pods/s end to end.
//
//	minik up --kubelet=false --scheduler=false --controller=false
//	        ▲                ◀── controller.Run (in this process)
//	        ▲                ◀── -nodes node objects, leases renewed (hollow heartbeats)
//	        └──────────────────── default (-real): minik's scheduler and one
//	                              hollow kubelet (fake runtime) per node, in
//	                              this process; -real=false: light stand-ins
//	                                binder:  binds each new pod, round robin
//	                                kubelet: marks each bound pod Running and Ready
//
// Phases reported: created (ReplicaSet made every pod), running (every pod
// bound and Running/Ready) and available (the Deployment says
// availableReplicas = replicas). Run it with `make bench-controller` or
// `go run ./test/bench/controller -h`.
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"minik/client"
	"minik/client/kubeconfig"
	"minik/controller"
	"minik/hollow"
	"minik/internal/freeport"
	"minik/internal/testcluster"
	"minik/scheduler"
)

type options struct {
	bin      string
	replicas int
	nodes    int
	workers  int
	simulate bool
	real     bool
	progress bool
	cpuprof  string
	apiprof  string
	keep     bool
	timeout  time.Duration
}

func main() {
	var o options
	flag.StringVar(&o.bin, "bin", "", "minik binary (default: bin/minik of this module, built if missing)")
	flag.IntVar(&o.replicas, "replicas", 3000, "replicas to scale the Deployment to")
	flag.IntVar(&o.nodes, "nodes", 100, "nodes to register")
	flag.IntVar(&o.workers, "workers", 100, "goroutines of the binder and kubelet stand-ins (100 nodes would each update their own pods)")
	flag.BoolVar(&o.simulate, "simulate", true, "with -real=false: bind pods and mark them Running with stand-ins in this process")
	flag.BoolVar(&o.real, "real", true, "run minik's scheduler and one hollow kubelet (fake runtime) per node in this process; false: the stand-ins")
	flag.BoolVar(&o.progress, "progress", false, "print the created and running counts every second on stderr")
	flag.StringVar(&o.cpuprof, "cpuprofile", "", "write a CPU profile of this process (controller, stand-ins or scheduler and kubelets) to this file")
	flag.StringVar(&o.apiprof, "apiserver-cpuprofile", "", "write a CPU profile of minik up (apiserver and etcd) during the first 10s of the scale-up, from its /debug/pprof, to this file")
	flag.BoolVar(&o.keep, "keep", false, "keep the temp dir (minik's log is in it)")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "give up after this long")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "bench-controller:", err)
		os.Exit(1)
	}
}

type result struct {
	Bench        string  `json:"bench"`
	Replicas     int     `json:"replicas"`
	Nodes        int     `json:"nodes"`
	Mode         string  `json:"mode"`
	CreatedSec   float64 `json:"created_s"`
	RunningSec   float64 `json:"running_s"`
	AvailableSec float64 `json:"available_s"`
	PodsPerSec   float64 `json:"pods_per_s"`
	CPUs         int     `json:"cpus"`
	// BenchCPUSec is the CPU time of this process (controller and the
	// stand-ins); APIServerCPUSec that of minik up (apiserver and etcd).
	BenchCPUSec     float64 `json:"bench_process_cpu_s"`
	APIServerCPUSec float64 `json:"minik_up_cpu_s"`
	// ReplicaSetWrites and DeploymentWrites count the MODIFIED events of
	// the ReplicaSet and the Deployment (status and scale writes).
	ReplicaSetWrites int64 `json:"replicaset_writes"`
	DeploymentWrites int64 `json:"deployment_writes"`
	// Events is the number of Event objects in default at the end (each
	// one or more writes).
	Events int `json:"events"`
}

// selfCPU returns this process's user+system CPU time.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procCPU returns the user+system CPU time of process pid.
func procCPU(pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100
}

func run(ctx context.Context, o options) error {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	dir, err := os.MkdirTemp("", "minik-bench-controller-")
	if err != nil {
		return err
	}
	if !o.keep {
		defer os.RemoveAll(dir)
	} else {
		fmt.Fprintln(os.Stderr, "data dir:", dir)
	}
	stopMinik, kcPath, pid, err := startMinik(ctx, o.bin, dir)
	if err != nil {
		return err
	}
	defer stopMinik()
	kc, err := kubeconfig.Load(kcPath)
	if err != nil {
		return err
	}
	newClient := func(agent string) (*client.Client, error) {
		cfg, err := client.ConfigFromKubeconfig(kc)
		if err != nil {
			return nil, err
		}
		cfg.UserAgent = agent
		return client.New(cfg)
	}
	cc, err := newClient("minik-controller")
	if err != nil {
		return err
	}
	bc, err := newClient("bench")
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var nodes []string
	if o.real {
		// Real components: the kubelets register their nodes themselves.
		if nodes, err = startHollow(ctx, &wg, newClient, o.nodes, log); err != nil {
			return err
		}
	} else {
		if nodes, err = registerNodes(ctx, bc, o.nodes); err != nil {
			return err
		}
		wg.Go(func() { heartbeat(ctx, bc, nodes) })
	}
	wg.Go(func() {
		if err := controller.Run(ctx, controller.Config{Client: cc, Logger: log, Workers: 8}); err != nil {
			fmt.Fprintln(os.Stderr, "controller:", err)
		}
	})

	var running atomic.Int64
	mode := "stand-ins"
	if o.real {
		mode = "scheduler+hollow-kubelets"
		wg.Go(func() { countRunning(ctx, bc, &running) })
	} else if o.simulate {
		if err := simulate(ctx, &wg, bc, nodes, o.workers, &running); err != nil {
			return err
		}
	}

	labels := map[string]string{"app": "bench"}
	zero := int32(0)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: "default"}, Spec: appsv1.DeploymentSpec{
		Replicas: &zero, Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "bench"}}}}}}
	if _, err := bc.Deployments().Create(ctx, d, metav1.CreateOptions{}); err != nil {
		return err
	}
	time.Sleep(time.Second) // let the empty ReplicaSet appear

	if o.cpuprof != "" {
		f, err := os.Create(o.cpuprof)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if o.apiprof != "" {
		wg.Go(func() {
			if err := saveAPIServerProfile(ctx, bc, o.apiprof); err != nil {
				fmt.Fprintln(os.Stderr, "apiserver profile:", err)
			}
		})
	}
	start := time.Now()
	cpu0, mcpu0 := selfCPU(), procCPU(pid)
	scale := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, o.replicas)
	if _, err := bc.Deployments().Patch(ctx, "default", "bench", types.MergePatchType, scale, metav1.PatchOptions{}); err != nil {
		return err
	}
	res := result{Bench: "deployment_scale_up", Replicas: o.replicas, Nodes: o.nodes, Mode: mode, CPUs: runtime.NumCPU()}
	var created, rsWrites, dWrites atomic.Int64
	wg.Go(func() { countCreated(ctx, bc, &created) })
	wg.Go(func() { countModified(ctx, bc.ReplicaSets(), &rsWrites) })
	wg.Go(func() { countModified(ctx, bc.Deployments(), &dWrites) })
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	lastReport := time.Now()
	for res.AvailableSec == 0 {
		if o.progress && time.Since(lastReport) >= time.Second {
			lastReport = time.Now()
			fmt.Fprintf(os.Stderr, "%5.1fs created %d running %d\n", time.Since(start).Seconds(), created.Load(), running.Load())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("timed out: %d created, %d running", created.Load(), running.Load())
		case <-tick.C:
		}
		el := time.Since(start).Seconds()
		if res.CreatedSec == 0 && created.Load() >= int64(o.replicas) {
			res.CreatedSec = el
		}
		if res.RunningSec == 0 && running.Load() >= int64(o.replicas) {
			res.RunningSec = el
		}
		got, err := bc.Deployments().Get(ctx, "default", "bench", metav1.GetOptions{})
		if err == nil && got.Status.AvailableReplicas == int32(o.replicas) && got.Status.UpdatedReplicas == int32(o.replicas) {
			res.AvailableSec = el
		}
	}
	res.PodsPerSec = float64(o.replicas) / res.AvailableSec
	res.BenchCPUSec = (selfCPU() - cpu0).Seconds()
	res.ReplicaSetWrites, res.DeploymentWrites = rsWrites.Load(), dWrites.Load()
	if evs, err := bc.Events().List(ctx, "default", metav1.ListOptions{}); err == nil {
		res.Events = len(evs.Items)
	}
	res.APIServerCPUSec = (procCPU(pid) - mcpu0).Seconds()
	line, _ := json.Marshal(res)
	fmt.Println(string(line))
	return nil
}

// registerNodes creates n Ready nodes with leases.
func registerNodes(ctx context.Context, c *client.Client, n int) ([]string, error) {
	names := make([]string, n)
	for i := range n {
		names[i] = hollow.NodeName("hollow-", i)
		node, err := c.Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: names[i]}}, metav1.CreateOptions{})
		if err != nil {
			return nil, err
		}
		now := metav1.Now()
		node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: now, LastTransitionTime: now}}
		if _, err := c.Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
			return nil, err
		}
	}
	return names, nil
}

// heartbeat renews every node's lease every 10s, as kubelets do.
func heartbeat(ctx context.Context, c *client.Client, nodes []string) {
	for ctx.Err() == nil {
		for _, n := range nodes {
			holder := n
			renew := metav1.NewMicroTime(time.Now())
			l, err := c.Leases().Get(ctx, corev1.NamespaceNodeLease, n, metav1.GetOptions{})
			if err != nil {
				l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: corev1.NamespaceNodeLease},
					Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}
				l.Spec.RenewTime = &renew
				_, _ = c.Leases().Create(ctx, l, metav1.CreateOptions{})
				continue
			}
			l.Spec.RenewTime = &renew
			_, _ = c.Leases().Update(ctx, l, metav1.UpdateOptions{})
		}
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Second):
		}
	}
}

// simulate watches pods and, with workers goroutines each, binds new ones
// round robin (the scheduler's job) and marks bound ones Running and Ready
// (the kubelets' job).
func simulate(ctx context.Context, wg *sync.WaitGroup, c *client.Client, nodes []string, workers int, running *atomic.Int64) error {
	w, err := c.Pods().Watch(ctx, "default", metav1.ListOptions{})
	if err != nil {
		return err
	}
	bind := make(chan *corev1.Pod, 10000)
	start := make(chan *corev1.Pod, 10000)
	wg.Go(func() {
		defer w.Stop()
		for ev := range w.Events() {
			if ev.Type != watch.Added && ev.Type != watch.Modified {
				continue
			}
			p := ev.Object
			switch {
			case p.DeletionTimestamp != nil:
			case p.Spec.NodeName == "" && ev.Type == watch.Added:
				bind <- p
			case p.Spec.NodeName != "" && p.Status.Phase == corev1.PodPending:
				start <- p
			}
		}
	})
	var next atomic.Int64
	for range workers {
		wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case p := <-bind:
					node := nodes[int(next.Add(1))%len(nodes)]
					_ = c.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace},
						Target: corev1.ObjectReference{Kind: "Node", Name: node}}, metav1.CreateOptions{})
				case p := <-start:
					cp := p.DeepCopy()
					now := metav1.Now()
					cp.Status.Phase = corev1.PodRunning
					cp.Status.StartTime = &now
					cp.Status.Conditions = append(cp.Status.Conditions,
						corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
						corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now})
					if _, err := c.Pods().UpdateStatus(ctx, cp, metav1.UpdateOptions{}); err == nil {
						running.Add(1)
					}
				}
			}
		})
	}
	return nil
}

// startHollow runs minik's scheduler and n hollow nodes (kubelets on the
// fake runtime, hollow.Run) in this process, and waits until every node
// is registered.
func startHollow(ctx context.Context, wg *sync.WaitGroup, newClient func(string) (*client.Client, error), n int, log *slog.Logger) ([]string, error) {
	sc, err := newClient("minik-scheduler")
	if err != nil {
		return nil, err
	}
	wg.Go(func() {
		if err := scheduler.Run(ctx, scheduler.Config{Client: sc, Logger: log}); err != nil && ctx.Err() == nil {
			fmt.Fprintln(os.Stderr, "scheduler:", err)
		}
	})
	hc, err := newClient("minik-hollow")
	if err != nil {
		return nil, err
	}
	registered := make(chan struct{})
	failed := make(chan error, 1)
	wg.Go(func() {
		failed <- hollow.Run(ctx, hollow.Config{Client: hc, Nodes: n, StartSpread: time.Second, Logger: log, Registered: registered})
	})
	select {
	case <-registered:
	case err := <-failed:
		return nil, fmt.Errorf("hollow nodes: %w", err)
	case <-time.After(60 * time.Second):
		return nil, errors.New("hollow nodes did not register within 60s")
	}
	names := make([]string, n)
	for i := range n {
		names[i] = hollow.NodeName("hollow-", i)
	}
	return names, nil
}

// countRunning counts pods that became Running.
func countRunning(ctx context.Context, c *client.Client, n *atomic.Int64) {
	w, err := c.Pods().Watch(ctx, "default", metav1.ListOptions{})
	if err != nil {
		return
	}
	defer w.Stop()
	seen := map[types.UID]bool{}
	for ev := range w.Events() {
		if p := ev.Object; p.Status.Phase == corev1.PodRunning && !seen[p.UID] {
			seen[p.UID] = true
			n.Add(1)
		}
	}
}

// countCreated counts pods created in default.
func countCreated(ctx context.Context, c *client.Client, n *atomic.Int64) {
	w, err := c.Pods().Watch(ctx, "default", metav1.ListOptions{})
	if err != nil {
		return
	}
	defer w.Stop()
	for ev := range w.Events() {
		if ev.Type == watch.Added {
			n.Add(1)
		}
	}
}

// countModified counts MODIFIED events of a resource in default.
func countModified[T any](ctx context.Context, t *client.Typed[T], n *atomic.Int64) {
	w, err := t.Watch(ctx, "default", metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return
	}
	defer w.Stop()
	for ev := range w.Events() {
		if ev.Type == watch.Modified {
			n.Add(1)
		}
	}
}

// startMinik runs `minik up --kubelet=false` in dir and waits until ready.
func startMinik(ctx context.Context, bin, dir string) (stop func(), kubeconfigPath string, pid int, err error) {
	if bin == "" {
		bin = filepath.Join(moduleRoot(), "bin", "minik")
		if _, err := os.Stat(bin); err != nil {
			cmd := testcluster.BuildCommand(moduleRoot(), bin)
			cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
			if err := cmd.Run(); err != nil {
				return nil, "", 0, err
			}
		}
	}
	listen, err := freeport.Addr()
	if err != nil {
		return nil, "", 0, err
	}
	logFile, err := os.Create(filepath.Join(dir, "minik.log"))
	if err != nil {
		return nil, "", 0, err
	}
	// The bench runs the controller (and, with -real, the scheduler and
	// kubelets) itself, to measure and profile them in this process.
	// Without the ServiceAccount admission plugin, as the apiservers of
	// Kubernetes' integration tests (scheduler_perf's too): its pods would each get a token
	// volume (a TokenRequest and a tmpfs per pod on the hollow kubelets),
	// which is not what this bench measures.
	cmd := exec.Command(bin, "up", "--data-dir", dir, "--listen", listen, "--kubelet=false", "--scheduler=false", "--controller=false",
		"--disable-admission-plugins=ServiceAccount")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, "", 0, err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	stop = func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		logFile.Close()
	}
	kubeconfigPath = filepath.Join(dir, "admin.kubeconfig")
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, Timeout: time.Second}
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		select {
		case <-done:
			return nil, "", 0, errors.New("minik up exited early; see " + logFile.Name())
		case <-ctx.Done():
			stop()
			return nil, "", 0, ctx.Err()
		default:
		}
		if _, err := os.Stat(kubeconfigPath); err != nil {
			continue
		}
		if resp, err := hc.Get("https://" + listen + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return stop, kubeconfigPath, cmd.Process.Pid, nil
			}
		}
	}
	stop()
	return nil, "", 0, errors.New("minik up not ready after 60s")
}

func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// saveAPIServerProfile fetches a 10s CPU profile from the apiserver's
// /debug/pprof (the bench's client is an admin).
func saveAPIServerProfile(ctx context.Context, c *client.Client, file string) error {
	var raw []byte
	q := url.Values{"seconds": {"10"}}
	if err := c.Do(ctx, "GET", "/debug/pprof/profile", q, nil, &raw); err != nil {
		return err
	}
	return os.WriteFile(file, raw, 0o644)
}
