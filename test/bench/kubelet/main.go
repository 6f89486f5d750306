// Command kubelet benchmarks minik's kubelet with real containerd and runc
// and prints one JSON line per measurement:
//
//	pod_startup        pod startup latency over 50 pods, one at a time and
//	                   10 at a time: from the create call to the pod seen
//	                   Running through a watch (the Kubernetes pod startup
//	                   SLI; the image is preloaded, so no pull is counted).
//	                   p50, p99 and max in ms.
//	                   host_cpu_ms_per_pod is the CPU the whole machine spent
//	                   per pod from the first create to the last pod Running;
//	                   the other *_cpu_ms_per_pod split it (cpu.go): minik up
//	                   (apiserver, etcd), the kubelet, what the kubelet ran
//	                   (CNI's portmap, for hostPorts only), containerd, and the shims with the runc
//	                   runs they made.
//	kubelet_idle_rss   the kubelet process's resident memory (VmRSS) once it
//	                   has idled a few seconds with 10 pods running, then
//	                   again once they are deleted (pods: 10, then 0), in
//	                   MB, split into anonymous memory (the kubelet's own:
//	                   heap, stacks) and file-backed pages (the mapped
//	                   minik binary, shared with every process running it
//	                   and reclaimable), with its PSS.
//	runtime_floor      the same starts made through containerd and runc
//	                   alone (floor.go): what minik cannot make cheaper.
//	                   10 at a time, the pods and the floors take turns
//	                   (-rounds, 3): each figure pools its rounds, so all
//	                   sides of the ratio saw the same machine.
//	runtime_floor_net  the floor 10 at a time, each container first given
//	                   a pod's network (floornet.go: a network namespace,
//	                   a veth pair on a bridge, an address and a route)
//	                   with netlink, none of minik's code: the kernel's
//	                   share of a pod start, which no runtime that gives
//	                   pods a network avoids.
//	node_idle_cpu      the CPU the node uses while the pods of the last
//	                   pod_startup run sit idle (after -idle-settle, over
//	                   -idle-cpu-window), in % of one core: minik's own
//	                   processes (up: apiserver and etcd; the kubelet and
//	                   what it runs), containerd, the shims, and the host.
//
// Each measurement starts on a settled node: pod objects with a zero grace
// period leave the API at once, while the kubelet still tears their
// containers and networks down, so before the next run the bench waits
// until the kubelet's runtime has no sandbox left (ctdrt.HoldsNoSandbox).
//
// It starts `minik up --kubelet=false` (bin/minik, built if missing) and a
// separate `minik kubelet` process (so its memory is its own), which starts
// its own containerd unless /run/containerd/containerd.sock answers. Pods
// name their node, so the scheduler is not in the measurement. Run it as
// root with `make bench-kubelet`.
package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"minik/client"
	"minik/client/kubeconfig"
	"minik/deploy/images"
	"minik/internal/freeport"
	"minik/internal/pki"
	"minik/internal/testcluster"
	ctdrt "minik/kubelet/runtime/containerd"
	"minik/test/bench/benchkit"
)

const (
	node    = "bench-node"
	podCIDR = "10.250.0.0/24"
)

// keepDir keeps the data dir and its logs (-keep).
var keepDir bool

// pairedRounds is how many times the pods and the floor take turns, 10
// at a time (-rounds).
var pairedRounds int

// idleCPUWindow is node_idle_cpu's window (-idle-cpu-window).
var idleCPUWindow time.Duration

// idleSettle is how long the pods run before node_idle_cpu starts: the
// start burst's stragglers (status writes, the kubelet's release of
// memory 5s after the last change) are done by then.
const idleSettle = 15 * time.Second

// smapsOut is where the idle kubelet's smaps go (-smaps).
var smapsOut string

func main() {
	bin := flag.String("bin", "", "minik binary (default bin/minik, built if missing)")
	kubeletBin := flag.String("kubelet-bin", "", "binary to run `kubelet` with (default: -bin)")
	keep := flag.Bool("keep", false, "keep the data dir (logs) at the end")
	pods := flag.Int("pods", 50, "pods per measurement")
	flag.IntVar(&pairedRounds, "rounds", 3, "rounds of pods then floor containers, 10 at a time, pooled into one figure each")
	idle := flag.Duration("idle", 10*time.Second, "idle time before reading the kubelet's RSS")
	flag.DurationVar(&idleCPUWindow, "idle-cpu-window", 60*time.Second, "how long node_idle_cpu measures (cover a few of the kubelet's relists)")
	flag.StringVar(&cpuProfile, "kubelet-cpuprofile", "", "write a CPU profile of the kubelet during the start of the pods 10 at a time (its /debug/pprof, read with an admin certificate) to this file")
	flag.StringVar(&upCPUProfile, "up-cpuprofile", "", "write a CPU profile of `minik up` (the control plane) during the start of the pods 10 at a time (its apiserver's /debug/pprof) to this file")
	flag.StringVar(&idleProfileDir, "idle-profile-dir", "", "write CPU profiles of the kubelet and `minik up` over node_idle_cpu's window to DIR/{kubelet,up}-idle.pprof (the profiling itself adds a little CPU)")
	flag.StringVar(&heapProfile, "kubelet-heapprofile", "", "write the idle kubelet's heap profile (10 pods) to this file")
	flag.StringVar(&smapsOut, "smaps", "", "copy the idle kubelet's /proc/PID/smaps to this file (where its RSS is)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	keepDir = *keep
	if err := run(ctx, *bin, *kubeletBin, *pods, *idle); err != nil {
		fmt.Fprintln(os.Stderr, "bench-kubelet:", err)
		os.Exit(1)
	}
}

type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func start(bin string, logPath string, args ...string) (*proc, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	p := &proc{cmd: exec.Command(bin, args...), done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = p.cmd.Wait(); logf.Close(); close(p.done) }()
	return p, nil
}

func (p *proc) stop() {
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// hostBusy is the CPU time the whole machine has spent outside idle and
// iowait since boot (/proc/stat), so the bench can say what a pod costs
// in all: kubelet, apiserver, containerd, shims, runc.
func hostBusy() time.Duration {
	data, _ := os.ReadFile("/proc/stat")
	line, _, _ := strings.Cut(string(data), "\n")
	var busy int64
	for i, f := range strings.Fields(line)[1:] {
		var v int64
		fmt.Sscan(f, &v)
		if i != 3 && i != 4 && i < 8 { // idle, iowait; guest time is already in user
			busy += v
		}
	}
	return time.Duration(busy) * time.Second / 100 // USER_HZ
}

// settled reports whether the kubelet's runtime holds no sandbox.
func settled(kubeletRoot string) bool {
	return ctdrt.HoldsNoSandbox(filepath.Join(kubeletRoot, "runtime"))
}

func binary(bin string) (string, error) {
	if bin != "" {
		return bin, nil
	}
	bin, _ = filepath.Abs(filepath.Join("bin", "minik"))
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	cmd := testcluster.BuildCommand(".", bin)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return bin, cmd.Run()
}

func run(ctx context.Context, bin, kubeletBin string, n int, idle time.Duration) error {
	bin, err := binary(bin)
	if err != nil {
		return err
	}
	if kubeletBin == "" {
		kubeletBin = bin
	}
	dir, err := os.MkdirTemp("", "minik-bench-kubelet-")
	if err != nil {
		return err
	}
	if !keepDir {
		defer os.RemoveAll(dir) // last: after the kubelet and minik up stopped
	}
	// What the node leaves on the host once the kubelet stopped: its
	// bridge and iptables rules, and its run dirs (the tmpfs under
	// ctdrt.RunRoot).
	kubeletRoot := filepath.Join(dir, "kubelet")
	defer func() {
		ctdrt.RemoveNodeNetwork(ctdrt.NamespaceFor(node), podCIDR)
		os.RemoveAll(ctdrt.RunDirFor(filepath.Join(kubeletRoot, "runtime")))
		os.RemoveAll(ctdrt.DaemonStateDir(filepath.Join(kubeletRoot, "containerd")))
	}()
	fmt.Fprintln(os.Stderr, "data dir", dir)
	listen, err := freeport.Addr()
	if err != nil {
		return err
	}
	up, err := start(bin, filepath.Join(dir, "up.log"), "up", "--data-dir", dir, "--listen", listen, "--kubelet=false")
	if err != nil {
		return err
	}
	defer up.stop()
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, Timeout: time.Second}
	if err := waitFor(ctx, 60*time.Second, func() bool {
		resp, err := hc.Get("https://" + listen + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}); err != nil {
		return fmt.Errorf("minik up not ready: %w (see %s/up.log)", err, dir)
	}

	// The kubelet's identity: a client certificate for system:node:NODE.
	ca, err := pki.LoadCA(filepath.Join(dir, "pki"))
	if err != nil {
		return err
	}
	certPEM, keyPEM, err := ca.IssueClient(pki.NodeUser(node), []string{pki.NodesGroup})
	if err != nil {
		return err
	}
	kubeletKC := filepath.Join(dir, "kubelet.kubeconfig")
	if err := kubeconfig.Write(kubeletKC, "https://"+listen, ca.CertPEM(), certPEM, keyPEM, pki.NodeUser(node)); err != nil {
		return err
	}
	archive := filepath.Join(dir, "busybox.tar")
	if err := images.BuildBusybox(archive, images.DefaultBusyboxPath); err != nil {
		return err
	}
	// Its HTTPS endpoint (logs, exec, /debug/pprof), as every real node
	// has: on any free port, which its Node reports.
	servingCert, servingKey, err := ca.EnsureServing(filepath.Join(dir, "pki"), "kubelet-"+node+"-serving", []string{"127.0.0.1", node})
	if err != nil {
		return err
	}
	kl, err := start(kubeletBin, filepath.Join(dir, "kubelet.log"), "kubelet", "--node-name", node, "--kubeconfig", kubeletKC, "-v",
		"--root-dir", kubeletRoot, "--port", "0", "--preload-images", archive, "--pod-cidr", podCIDR,
		"--tls-cert-file", servingCert, "--tls-private-key-file", servingKey, "--client-ca-file", filepath.Join(dir, "pki", "ca.crt"))
	if err != nil {
		return err
	}
	defer kl.stop()

	kc, err := kubeconfig.Load(filepath.Join(dir, "admin.kubeconfig"))
	if err != nil {
		return err
	}
	c, err := client.NewFromKubeconfig(kc)
	if err != nil {
		return err
	}
	if err := waitFor(ctx, 60*time.Second, func() bool {
		nd, err := c.Nodes().Get(ctx, "", node, metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, cond := range nd.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				return true
			}
		}
		return false
	}); err != nil {
		return fmt.Errorf("node not ready: %w (see %s/kubelet.log)", err, dir)
	}

	// Whatever happens, leave no pod running: the kubelet stops after
	// this, and its containers would outlive it.
	defer func() {
		ctx := context.WithoutCancel(ctx)
		if deleteAll(ctx, c) == nil {
			_ = waitFor(ctx, 120*time.Second, func() bool { return settled(kubeletRoot) })
		}
	}()

	// One warm-up pod: the first start unpacks the image's snapshot.
	if _, _, err := measure(ctx, c, 1, 1, "warmup", []cpuMeter{{"host", hostBusy}}); err != nil {
		return err
	}
	if err := deleteAll(ctx, c); err != nil {
		return err
	}
	settle := func() error {
		if err := waitFor(ctx, 120*time.Second, func() bool { return settled(kubeletRoot) }); err != nil {
			return fmt.Errorf("the kubelet still has sandboxes: %w (see %s/kubelet.log)", err, dir)
		}
		return nil
	}
	// The floor's containerd: the one the kubelet uses.
	address := ctdrt.DefaultAddress
	if !ctdrt.Answers(ctx, address, 2*time.Second) {
		address = ctdrt.SocketFor(filepath.Join(kubeletRoot, "containerd"))
	}
	floorMeters := runtimeMeters(filepath.Join(kubeletRoot, "containerd"), floorNamespace)
	// Under the run root, whose mounts `minik reset` removes should the
	// bench die before the floor's own clean-up.
	floorNetDir := filepath.Join(ctdrt.RunRoot, "bench-floor-netns")
	podMeters := func() []cpuMeter {
		return nodeMeters(kl.cmd.Process.Pid, up.cmd.Process.Pid, filepath.Join(kubeletRoot, "containerd"), ctdrt.NamespaceFor(node))
	}
	for _, conc := range []int{1, 10} {
		// 10 at a time, the pods and the floor take turns (-rounds
		// pairs), so that both sides of the ratio see the same machine:
		// its speed drifts by more than the target's margin in minutes.
		rounds := 1
		if conc == 10 {
			rounds = pairedRounds
		}
		var lat, floorLat, netFloorLat []time.Duration
		cpu, floorCPU, netFloorCPU := map[string]time.Duration{}, map[string]time.Duration{}, map[string]time.Duration{}
		calls := map[string]uint64{}
		for round := 1; round <= rounds; round++ {
			if err := settle(); err != nil {
				return err
			}
			quiesce(ctx)
			fmt.Fprintf(os.Stderr, "measuring %d pods, %d at a time (round %d of %d)\n", n, conc, round, rounds)
			profiled := func() error { return nil }
			if conc == 10 && round == 1 {
				profiled = profileBurst(ctx, c, ca, dir)
			}
			before, err := benchkit.ReadRequestLatencies(ctx, c)
			if err != nil {
				return err
			}
			l, used, err := measure(ctx, c, n, conc, fmt.Sprintf("c%d-%d", conc, round), podMeters())
			if err != nil {
				return err
			}
			after, err := benchkit.ReadRequestLatencies(ctx, c)
			if err != nil {
				return err
			}
			addCalls(calls, after.Since(before))
			lat = append(lat, l...)
			addMean(cpu, used, rounds)
			fmt.Fprintf(os.Stderr, "round %d: p50 %.1f ms, host CPU %.1f ms per pod\n", round, pct(l, 50), float64(used["host"].Microseconds())/1000)
			if err := profiled(); err != nil {
				return err
			}
			if conc == 10 && round == rounds {
				if err := idleCPU(ctx, n, podMeters(), startIdleProfiles(ctx, c, ca, dir)); err != nil {
					return err
				}
			}
			if err := deleteAll(ctx, c); err != nil {
				return err
			}
			if conc != 10 {
				continue
			}
			if err := settle(); err != nil {
				return err
			}
			quiesce(ctx)
			fmt.Fprintf(os.Stderr, "measuring %d containers through containerd alone, %d at a time (round %d of %d)\n", n, conc, round, rounds)
			fl, fused, err := runtimeFloor(ctx, address, archive, n, conc, floorMeters, "")
			if err != nil {
				return err
			}
			floorLat = append(floorLat, fl...)
			addMean(floorCPU, fused, rounds)
			fmt.Fprintf(os.Stderr, "round %d: p50 %.1f ms, host CPU %.1f ms per container\n", round, pct(fl, 50), float64(fused["host"].Microseconds())/1000)

			quiesce(ctx)
			fmt.Fprintf(os.Stderr, "measuring %d containers through containerd alone, each with a pod network, %d at a time (round %d of %d)\n", n, conc, round, rounds)
			fl, fused, err = runtimeFloor(ctx, address, archive, n, conc, floorMeters, floorNetDir)
			if err != nil {
				return err
			}
			netFloorLat = append(netFloorLat, fl...)
			addMean(netFloorCPU, fused, rounds)
			fmt.Fprintf(os.Stderr, "round %d: p50 %.1f ms, host CPU %.1f ms per container\n", round, pct(fl, 50), float64(fused["host"].Microseconds())/1000)
		}
		r := latencyReport("pod_startup", lat)
		r["pods"], r["concurrency"], r["rounds"] = n, conc, rounds
		addCPU(r, cpu, "_cpu_ms_per_pod")
		addCallsPerPod(r, calls, n*rounds)
		report(r)
		if conc == 10 {
			r := latencyReport("runtime_floor", floorLat)
			r["containers"], r["concurrency"], r["rounds"] = n, conc, rounds
			addCPU(r, floorCPU, "_cpu_ms_per_container")
			report(r)
			r = latencyReport("runtime_floor_net", netFloorLat)
			r["containers"], r["concurrency"], r["rounds"] = n, conc, rounds
			addCPU(r, netFloorCPU, "_cpu_ms_per_container")
			report(r)
		}
	}
	if err := deleteAll(ctx, c); err != nil {
		return err
	}
	if err := settle(); err != nil {
		return err
	}
	pid := kl.cmd.Process.Pid
	// Idle with 10 running pods, each with its worker, probes and watch
	// state, then with none.
	if _, _, err := measure(ctx, c, idlePods, idlePods, "idle", nil); err != nil {
		return err
	}
	time.Sleep(idle)
	reportIdleRSS(pid, idlePods)
	if heapProfile != "" {
		if err := kubeletProfile(ctx, c, ca, dir, "heap", heapProfile); err != nil {
			return fmt.Errorf("the kubelet's heap profile: %w", err)
		}
	}
	if err := deleteAll(ctx, c); err != nil {
		return err
	}
	if err := settle(); err != nil {
		return err
	}
	time.Sleep(idle)
	if smapsOut != "" {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
		if err != nil {
			return err
		}
		if err := os.WriteFile(smapsOut, data, 0o644); err != nil {
			return err
		}
	}
	reportIdleRSS(pid, 0)

	// The floor one at a time (10 at a time took turns with the pods).
	quiesce(ctx)
	fmt.Fprintf(os.Stderr, "measuring %d containers through containerd alone, 1 at a time\n", n)
	lat, cpu, err := runtimeFloor(ctx, address, archive, n, 1, floorMeters, "")
	if err != nil {
		return err
	}
	r := latencyReport("runtime_floor", lat)
	r["containers"], r["concurrency"] = n, 1
	addCPU(r, cpu, "_cpu_ms_per_container")
	report(r)
	return nil
}

// addCalls adds the API calls of one run to calls, by verb and resource;
// leases (the node's heartbeat) and non-resource paths (the bench's own
// reads of /metrics) are left out.
func addCalls(calls map[string]uint64, ls []benchkit.CallLatency) {
	for _, l := range ls {
		if l.Kind.Resource == "leases" || l.Kind.Resource == "" {
			continue
		}
		calls[l.Kind.Name()] += l.Calls
	}
}

// addCallsPerPod reports the API calls per pod started: api_writes_per_pod,
// and api_calls_per_pod by verb and resource (what the control plane's CPU
// per pod pays for).
func addCallsPerPod(r map[string]any, calls map[string]uint64, pods int) {
	perPod := map[string]float64{}
	writes := 0.0
	for k, n := range calls {
		v := float64(n) / float64(pods)
		perPod[k] = round2(v)
		verb, _, _ := strings.Cut(k, " ")
		if (benchkit.CallKind{Verb: verb}).Mutating() {
			writes += v
		}
	}
	r["api_calls_per_pod"], r["api_writes_per_pod"] = perPod, round2(writes)
}

// profileBurst starts the CPU profiles asked for (-kubelet-cpuprofile,
// -up-cpuprofile) over the next 5s, and returns the wait for them.
func profileBurst(ctx context.Context, c *client.Client, ca *pki.CA, dir string) func() error {
	return startProfiles(ctx, c, ca, dir, 5*time.Second, cpuProfile, upCPUProfile)
}

// startProfiles starts CPU profiles of the kubelet (into kubeletOut) and
// of `minik up` (into upOut) over the next d, each only if its file is
// named, and returns the wait for them.
func startProfiles(ctx context.Context, c *client.Client, ca *pki.CA, dir string, d time.Duration, kubeletOut, upOut string) func() error {
	type profile struct {
		name, out string
		read      func() error
	}
	seconds := fmt.Sprint(int(d.Seconds()))
	var ps []profile
	if kubeletOut != "" {
		ps = append(ps, profile{"the kubelet's", kubeletOut, func() error {
			return kubeletProfile(ctx, c, ca, dir, "profile?seconds="+seconds, kubeletOut)
		}})
	}
	if upOut != "" {
		ps = append(ps, profile{"minik up's", upOut, func() error {
			var data []byte
			if err := c.Do(ctx, "GET", "/debug/pprof/profile", url.Values{"seconds": {seconds}}, nil, &data); err != nil {
				return err
			}
			return os.WriteFile(upOut, data, 0o644)
		}})
	}
	errs := make([]chan error, len(ps))
	for i, p := range ps {
		errs[i] = make(chan error, 1)
		go func() { errs[i] <- p.read() }()
	}
	return func() error {
		for i, p := range ps {
			if err := <-errs[i]; err != nil {
				return fmt.Errorf("%s CPU profile: %w", p.name, err)
			}
			fmt.Fprintf(os.Stderr, "wrote %s CPU profile to %s\n", p.name, p.out)
		}
		return nil
	}
}

// quiesce waits (at most 30s) until the machine is quiet: less than a
// tenth of a core busy over a second, so that what the last run left to
// clean up in the background (a deleted container's snapshot, a torn-down
// network) cannot land in the next run, minik's or the floor's.
func quiesce(ctx context.Context) {
	start := time.Now()
	for time.Since(start) < 30*time.Second && ctx.Err() == nil {
		before := hostBusy()
		time.Sleep(time.Second)
		if hostBusy()-before < 100*time.Millisecond {
			break
		}
	}
	fmt.Fprintf(os.Stderr, "the machine was quiet after %v\n", time.Since(start).Round(100*time.Millisecond))
}

// addMean adds each meter's CPU per item of one of n rounds to sum, so
// that sum ends as the mean over the rounds.
func addMean(sum, round map[string]time.Duration, n int) {
	for who, d := range round {
		sum[who] += d / time.Duration(n)
	}
}

// idlePods is how many pods run while the idle kubelet's memory is read
// first (the issue's target: PSS with 10 pods).
const idlePods = 10

// reportIdleRSS reports the idle kubelet's memory with pods running.
func reportIdleRSS(pid, pods int) {
	report(map[string]any{"bench": "kubelet_idle_rss", "pods": pods, "rss_mb": round(benchkit.MemMB(pid, "status", "VmRSS")),
		"anon_mb": round(benchkit.MemMB(pid, "status", "RssAnon")), "file_mb": round(benchkit.MemMB(pid, "status", "RssFile")),
		"pss_mb": round(benchkit.MemMB(pid, "smaps_rollup", "Pss"))})
}

func report(v map[string]any) {
	b, _ := json.Marshal(v)
	fmt.Println(string(b))
}

// latencyReport is a report line of bench with lat's p50, p99 and max in ms.
func latencyReport(bench string, lat []time.Duration) map[string]any {
	return map[string]any{"bench": bench, "p50_ms": pct(lat, 50), "p99_ms": pct(lat, 99), "max_ms": pct(lat, 100)}
}

func round(f float64) float64 { return float64(int(f*10+0.5)) / 10 }

func round2(f float64) float64 { return float64(int(f*100+0.5)) / 100 }

func pct(lat []time.Duration, p int) float64 {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	i := (len(lat)*p + 99) / 100
	i = min(max(i-1, 0), len(lat)-1)
	return round(float64(lat[i].Microseconds()) / 1000)
}

func waitFor(ctx context.Context, timeout time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if cond() {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return errors.New("timed out")
}

func running(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning || len(p.Status.ContainerStatuses) != len(p.Spec.Containers) {
		return false
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running == nil {
			return false
		}
	}
	return true
}

// measure creates n pods, conc at a time, and returns each one's latency
// from its create call to the watch event that shows it Running, and the
// CPU time per pod meanwhile of each meter.
func measure(ctx context.Context, c *client.Client, n, conc int, run string, meters []cpuMeter) ([]time.Duration, map[string]time.Duration, error) {
	w, err := c.Pods().Watch(ctx, "default", metav1.ListOptions{LabelSelector: "bench-run=" + run})
	if err != nil {
		return nil, nil, err
	}
	defer w.Stop()
	var mu sync.Mutex
	seen := map[string]chan struct{}{}
	waiter := func(name string) chan struct{} {
		mu.Lock()
		defer mu.Unlock()
		ch, ok := seen[name]
		if !ok {
			ch = make(chan struct{})
			seen[name] = ch
		}
		return ch
	}
	go func() {
		done := map[string]bool{}
		for ev := range w.Events() {
			if ev.Object == nil || (ev.Type != watch.Added && ev.Type != watch.Modified) {
				continue
			}
			if p := ev.Object; running(p) && !done[p.Name] {
				done[p.Name] = true
				close(waiter(p.Name))
			}
		}
	}()
	zero := int64(0)
	lat, cpu, err := closedLoop(ctx, n, conc, meters, func(i int) error {
		name := fmt.Sprintf("bench-%s-%d", run, i)
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"bench-run": run, "bench": "kubelet"}},
			Spec: corev1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: &zero, Containers: []corev1.Container{{
				Name: "main", Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent, Command: []string{"sleep", "3600"}}}},
		}
		if _, err := c.Pods().Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return err
		}
		select {
		case <-waiter(name):
			return nil
		case <-time.After(60 * time.Second):
			return fmt.Errorf("pod %s not Running after 60s", name)
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	if err != nil {
		return nil, nil, err
	}
	return lat, cpu, nil // the pods keep running: the caller deletes them
}

// startIdleProfiles returns what starts the idle window's CPU profiles of
// the kubelet and `minik up` into -idle-profile-dir, if set.
func startIdleProfiles(ctx context.Context, c *client.Client, ca *pki.CA, dir string) func() func() error {
	if idleProfileDir == "" {
		return func() func() error { return func() error { return nil } }
	}
	return func() func() error {
		return startProfiles(ctx, c, ca, dir, idleCPUWindow,
			filepath.Join(idleProfileDir, "kubelet-idle.pprof"), filepath.Join(idleProfileDir, "up-idle.pprof"))
	}
}

// idleCPU reports node_idle_cpu: the meters' CPU over idleCPUWindow while
// the n pods just started sit idle, in % of one core; profile starts the
// window's CPU profiles and returns their wait.
func idleCPU(ctx context.Context, n int, meters []cpuMeter, profile func() func() error) error {
	fmt.Fprintf(os.Stderr, "measuring the idle node's CPU with %d pods running for %v\n", n, idleCPUWindow)
	select {
	case <-time.After(idleSettle):
	case <-ctx.Done():
		return ctx.Err()
	}
	cpu := map[string]time.Duration{}
	for _, m := range meters {
		cpu[m.name] = -m.read()
	}
	profiled := profile()
	select {
	case <-time.After(idleCPUWindow):
	case <-ctx.Done():
		return ctx.Err()
	}
	r := map[string]any{"bench": "node_idle_cpu", "pods": n, "window_s": idleCPUWindow.Seconds()}
	var own time.Duration
	for _, m := range meters {
		d := cpu[m.name] + m.read()
		r[m.name+"_pct"] = round2(100 * d.Seconds() / idleCPUWindow.Seconds())
		if m.name == "up" || m.name == "kubelet" || m.name == "kubelet_children" {
			own += d
		}
	}
	r["minik_pct"] = round2(100 * own.Seconds() / idleCPUWindow.Seconds())
	report(r)
	return profiled()
}

// deleteAll deletes the bench pods and waits until they are gone.
func deleteAll(ctx context.Context, c *client.Client) error {
	list, err := c.Pods().List(ctx, "default", metav1.ListOptions{LabelSelector: "bench=kubelet"})
	if err != nil {
		return err
	}
	for _, p := range list.Items {
		if err := c.Pods().Delete(ctx, "default", p.Name, metav1.DeleteOptions{}); err != nil {
			return err
		}
	}
	return waitFor(ctx, 120*time.Second, func() bool {
		l, err := c.Pods().List(ctx, "default", metav1.ListOptions{LabelSelector: "bench=kubelet"})
		return err == nil && len(l.Items) == 0
	})
}

// cpuProfile and heapProfile are where -kubelet-cpuprofile and
// -kubelet-heapprofile write the kubelet's profiles.
var cpuProfile, heapProfile string

// upCPUProfile is where -up-cpuprofile writes the control plane's profile.
var upCPUProfile string

// idleProfileDir is where -idle-profile-dir writes the idle window's
// profiles.
var idleProfileDir string

// kubeletProfile reads the kubelet's /debug/pprof/PROFILE (at the port its
// Node reports) as an admin, into out.
func kubeletProfile(ctx context.Context, c *client.Client, ca *pki.CA, dir, profile, out string) error {
	n, err := c.Nodes().Get(ctx, "", node, metav1.GetOptions{})
	if err != nil {
		return err
	}
	certFile, keyFile, err := ca.EnsureClient(filepath.Join(dir, "pki"), "bench-admin", "bench-admin", []string{"system:masters"})
	if err != nil {
		return err
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return err
	}
	// The bench's own kubelet on this host: its serving certificate is
	// not what is measured.
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{Certificates: []tls.Certificate{cert}, InsecureSkipVerify: true}}}
	url := fmt.Sprintf("https://127.0.0.1:%d/debug/pprof/%s", n.Status.DaemonEndpoints.KubeletEndpoint.Port, profile)
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("%s: %s: %s", url, resp.Status, body)
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
