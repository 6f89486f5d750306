// Command services benchmarks the node proxy: network programming latency
// (the Kubernetes SLI: from an endpoint change until its rule is in the
// kernel), the CPU each endpoint change costs, and the proxy's memory,
// with 1,000 Services × 10 endpoints and 5,000 Services × 2.
//
//	bench (parent) ── ip netns add minik-bench-services-PID
//	     └─ ip netns exec … bench -child   (all nft work in that namespace)
//	          proxy.Proxier + real nft, table ip minik-proxy
//	          ◀── in-memory change stream: one EndpointSlice change every
//	              -interval, an endpoint replaced by a new (hollow) address,
//	              stamped with endpoints.kubernetes.io/last-change-trigger-time
//	          latency = nft transaction returned − trigger time
//	     parent deletes the namespace (and with it the table)
//
// The changes go to the proxy's handlers directly, not through an
// apiserver: what is measured is the proxy and the kernel. Each run prints
// one JSON line. Run it with `make bench-services` (root).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik/internal/netnsdir"
	"minik/proxy"
)

func main() {
	child := flag.Bool("child", false, "run the measurements (inside the namespace the parent made)")
	changes := flag.Int("changes", 500, "endpoint changes per run")
	interval := flag.Duration("interval", 20*time.Millisecond, "time between two changes")
	runs := flag.String("runs", "1000x10,5000x2", "Services x endpoints per Service, comma-separated")
	flag.Parse()
	if !*child {
		if err := parent(); err != nil {
			fmt.Fprintln(os.Stderr, "bench-services:", err)
			os.Exit(1)
		}
		return
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	for _, r := range strings.Split(*runs, ",") {
		s, e, ok := strings.Cut(r, "x")
		nSvc, err1 := strconv.Atoi(s)
		nEp, err2 := strconv.Atoi(e)
		if !ok || err1 != nil || err2 != nil {
			fmt.Fprintf(os.Stderr, "bench-services: -runs %q: want SERVICESxENDPOINTS\n", r)
			os.Exit(2)
		}
		res, err := measure(nSvc, nEp, *changes, *interval)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench-services:", err)
			os.Exit(1)
		}
		line, _ := json.Marshal(res)
		fmt.Println(string(line))
	}
}

// parent makes the namespace, runs the measurements in it and removes it.
func parent() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("needs root (network namespaces and nftables)")
	}
	ns := fmt.Sprintf("minik-bench-services-%d", os.Getpid())
	dirWasMounted := netnsdir.Mounted()
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		return fmt.Errorf("ip netns add: %v: %s", err, out)
	}
	defer func() {
		if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "bench-services: ip netns del %s: %v: %s\n", ns, err, out)
		}
		if err := netnsdir.Release(dirWasMounted); err != nil {
			fmt.Fprintf(os.Stderr, "bench-services: unmounting %s: %v\n", netnsdir.Dir, err)
		}
	}()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command("ip", append([]string{"netns", "exec", ns, self, "-child"}, os.Args[1:]...)...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() {
		if s, ok := <-sig; ok {
			_ = cmd.Process.Signal(s)
		}
	}()
	return cmd.Wait()
}

// result is one JSON line.
type result struct {
	Bench               string  `json:"bench"`
	Services            int     `json:"services"`
	EndpointsPerService int     `json:"endpoints_per_service"`
	Changes             int     `json:"changes"`
	IntervalMs          float64 `json:"interval_ms"`
	P50Ms               float64 `json:"programming_latency_p50_ms"`
	P99Ms               float64 `json:"programming_latency_p99_ms"`
	MaxMs               float64 `json:"programming_latency_max_ms"`
	Syncs               int     `json:"syncs"`
	SyncP50Ms           float64 `json:"sync_p50_ms"`
	InitialSyncMs       float64 `json:"initial_full_sync_ms"`
	CPUPerChangeMs      float64 `json:"cpu_per_change_ms"`
	ProxyCPUPerChangeMs float64 `json:"proxy_cpu_per_change_ms"`
	NftCPUPerChangeMs   float64 `json:"nft_cpu_per_change_ms"`
	RSSMiB              float64 `json:"proxy_rss_mib"`
	GoHeapMiB           float64 `json:"go_heap_mib"`
	CPUs                int     `json:"cpus"`
}

func measure(nSvc, nEp, changes int, interval time.Duration) (*result, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var latencies []time.Duration
	var pending sync.WaitGroup
	var syncs int
	var syncTimes []time.Duration
	p, err := proxy.New(proxy.Options{
		Config: proxy.Config{NodeName: "node-0"},
		ObserveSync: func(_ proxy.SyncResult, d time.Duration) {
			mu.Lock()
			syncs++
			syncTimes = append(syncTimes, d)
			mu.Unlock()
		},
		ObserveProgramming: func(_ types.NamespacedName, d time.Duration) {
			mu.Lock()
			latencies = append(latencies, d)
			mu.Unlock()
			pending.Done()
		},
	})
	if err != nil {
		return nil, err
	}
	defer func() { _ = proxy.DeleteTable(context.Background()) }()

	rng := rand.New(rand.NewPCG(uint64(nSvc), uint64(nEp)))
	next := 0 // hollow endpoint addresses: 10.128.0.0/9, never reused
	addr := func() string {
		next++
		return fmt.Sprintf("10.%d.%d.%d", 128+next>>16, next>>8&255, next&255)
	}
	sl := make([]*discoveryv1.EndpointSlice, nSvc)
	for i := range nSvc {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: fmt.Sprintf("svc-%d", i)},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP,
				ClusterIP: fmt.Sprintf("10.96.%d.%d", i>>8, i&255),
				Ports:     []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}},
		}
		name, proto, port := "http", corev1.ProtocolTCP, int32(8080)
		s := &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: "bench", Name: svc.Name + "-1", Labels: map[string]string{proxy.ServiceNameLabel: svc.Name}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: &name, Protocol: &proto, Port: &port}},
		}
		for range nEp {
			node := fmt.Sprintf("node-%d", rng.IntN(100))
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{addr()}, NodeName: &node})
		}
		p.OnServiceAdd(svc)
		p.OnEndpointSliceAdd(s)
		sl[i] = s
	}
	p.SetInitialized()
	start := time.Now()
	if _, err := p.Sync(ctx); err != nil {
		return nil, fmt.Errorf("first sync: %w", err)
	}
	initial := time.Since(start)
	mu.Lock()
	latencies, syncs, syncTimes = nil, 0, nil
	mu.Unlock()

	loopDone := make(chan struct{})
	go func() { defer close(loopDone); p.Loop(ctx) }()
	runtime.GC()
	cpu0, child0 := cpuTimes()
	tick := time.NewTicker(interval)
	for range changes {
		<-tick.C
		i := rng.IntN(nSvc)
		s := sl[i].DeepCopy()
		s.ResourceVersion = strconv.Itoa(rng.Int())
		s.Endpoints[rng.IntN(len(s.Endpoints))].Addresses = []string{addr()}
		s.Annotations = map[string]string{corev1.EndpointsLastChangeTriggerTime: time.Now().Format(time.RFC3339Nano)}
		pending.Add(1)
		p.OnEndpointSliceUpdate(sl[i], s)
		sl[i] = s
	}
	tick.Stop()
	pending.Wait()
	cpu1, child1 := cpuTimes()
	cancel()
	<-loopDone

	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	slices.Sort(latencies)
	slices.Sort(syncTimes)
	q := func(f float64) float64 { return quantileMs(latencies, f) }
	proxyCPU, nftCPU := (cpu1-cpu0).Seconds()*1000, (child1-child0).Seconds()*1000
	return &result{
		Bench: "services", Services: nSvc, EndpointsPerService: nEp, Changes: changes,
		IntervalMs: float64(interval.Microseconds()) / 1000,
		P50Ms:      q(0.50), P99Ms: q(0.99), MaxMs: q(1),
		Syncs: syncs, SyncP50Ms: quantileMs(syncTimes, 0.5),
		InitialSyncMs:  float64(initial.Microseconds()) / 1000,
		CPUPerChangeMs: (proxyCPU + nftCPU) / float64(changes), ProxyCPUPerChangeMs: proxyCPU / float64(changes),
		NftCPUPerChangeMs: nftCPU / float64(changes),
		RSSMiB:            rssMiB(), GoHeapMiB: float64(ms.HeapAlloc) / (1 << 20),
		CPUs: runtime.NumCPU(),
	}, nil
}

// quantileMs is the f quantile of sorted durations, in milliseconds.
func quantileMs(sorted []time.Duration, f float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return float64(sorted[min(len(sorted)-1, int(f*float64(len(sorted))))].Microseconds()) / 1000
}

// cpuTimes returns this process's CPU time and that of its waited-for
// children (the nft runs).
func cpuTimes() (self, children time.Duration) {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru)
	children = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return self, children
}

// rssMiB is the process's resident set (VmRSS).
func rssMiB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}
