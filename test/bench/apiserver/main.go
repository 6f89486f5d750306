// Command apiserver benchmarks minik's apiserver on this machine and prints
// one JSON line per measurement:
//
//	etcd_put         raw puts/s of an embedded etcd member (the baseline),
//	                 with 1, 16 and 128 clients
//	pod_create       pod creates/s through minik/client over HTTP/2 with 16
//	                 and 128 concurrent clients: p50/p99 latency in ms, the
//	                 throughput as % of etcd puts/s at the same concurrency,
//	                 and the apiserver's CPU per create
//	watch_fanout     events/s delivered to 1 and to 100 pod watchers while
//	                 pods are created (total and per watcher)
//	watch_cost       what each added watcher costs: the 1 vs 100 watchers
//	                 runs compared
//	pod_list         a LIST of 41,000 pods (-list-pods) as JSON and protobuf,
//	                 each with and without gzip: time to first byte, total
//	                 time, bytes on the wire and per second, the apiserver's
//	                 RSS growth and CPU (medians of -list-runs); with
//	                 -peer, the same on the upstream kube-apiserver
//	                 ("apiserver": "kube-apiserver"), run after minik stops
//
// It starts `minik up --kubelet=false` (bin/minik, built if missing) in a
// temp dir on a free loopback port, runs each measurement for a few
// seconds, and stops the server when done. Run it with `make
// bench-apiserver` or `go run ./test/bench/apiserver -h` for the flags.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/client"
	"minik/client/kubeconfig"
	"minik/internal/etcd"
	"minik/internal/freeport"
	"minik/test/bench/benchkit"
)

type options struct {
	bin          string
	duration     time.Duration
	watchers     int
	connsPer     int
	watchClients int
	only         string
	keep         bool
	listPods     int
	listRuns     int
	peer         string
}

func main() {
	var o options
	flag.StringVar(&o.bin, "bin", "", "minik binary (default: bin/minik of this module, built if missing)")
	flag.DurationVar(&o.duration, "duration", 3*time.Second, "length of each measurement")
	flag.IntVar(&o.watchers, "watchers", 100, "watchers in the fan-out measurement")
	flag.IntVar(&o.connsPer, "clients-per-conn", 8, "concurrent creators sharing one HTTP/2 connection (one minik/client.Client); 0: all share one")
	flag.IntVar(&o.watchClients, "watch-creators", 16, "concurrent creators while watchers listen")
	flag.StringVar(&o.only, "only", "etcd,create,watch,list", "measurements to run (comma-separated: etcd, create, watch, list)")
	flag.IntVar(&o.listPods, "list-pods", 41000, "pods to create for the list measurement")
	flag.IntVar(&o.listRuns, "list-runs", 3, "LISTs of each form (JSON, protobuf, each with and without gzip); medians are reported")
	flag.StringVar(&o.peer, "peer", "", "upstream kube-apiserver binary: the LISTs are measured on it too, after minik, with the same pods and client (`make bench-apiserver PEER=1` builds it)")
	flag.BoolVar(&o.keep, "keep", false, "keep the temp dir (minik's log is in it)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "bench-apiserver:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	want := map[string]bool{}
	for _, m := range strings.Split(o.only, ",") {
		want[strings.TrimSpace(m)] = true
	}
	tmp, err := os.MkdirTemp("", "minik-bench-")
	if err != nil {
		return err
	}
	if o.keep {
		fmt.Fprintln(os.Stderr, "temp dir:", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	out := json.NewEncoder(os.Stdout)

	// The baseline first, alone on the machine.
	etcdRate := map[int]float64{}
	if want["etcd"] || want["create"] {
		value := storedPodSize()
		for _, clients := range []int{1, 16, 128} {
			r, err := benchEtcd(ctx, filepath.Join(tmp, fmt.Sprintf("etcd-%d", clients)), clients, value, o.duration)
			if err != nil {
				return err
			}
			etcdRate[clients] = r.Rate
			if err := out.Encode(map[string]any{"measurement": "etcd_put", "clients": clients, "value_bytes": value,
				"ops_per_s": round(r.Rate), "p50_ms": ms(r.P50), "p99_ms": ms(r.P99), "errors": r.Errors}); err != nil {
				return err
			}
		}
	}
	if !want["create"] && !want["watch"] && !want["list"] {
		return nil
	}

	srv, err := startMinik(ctx, o.bin, filepath.Join(tmp, "minik"))
	if err != nil {
		return err
	}
	defer srv.stop()
	if err := out.Encode(map[string]any{"measurement": "startup", "ready_ms": ms(srv.startup)}); err != nil {
		return err
	}
	kc, err := kubeconfig.Load(srv.kubeconfig)
	if err != nil {
		return err
	}
	cfg, err := client.ConfigFromKubeconfig(kc)
	if err != nil {
		return err
	}
	cfg.UserAgent = "minik-bench"

	if want["create"] {
		for _, clients := range []int{16, 128} {
			ns := fmt.Sprintf("bench-create-%d", clients)
			r, err := benchCreate(ctx, cfg, srv, ns, clients, o.connsPer, o.duration)
			if err != nil {
				return err
			}
			line := map[string]any{"measurement": "pod_create", "clients": clients, "connections": r.Conns,
				"objects_per_s": round(r.Rate), "p50_ms": ms(r.P50), "p99_ms": ms(r.P99), "errors": r.Errors,
				"server_cpu_ms_per_object": round3(r.ServerCPU.Seconds() * 1000 / float64(max(r.Count, 1)))}
			if base := etcdRate[clients]; base > 0 {
				line["etcd_put_ops_per_s"] = round(base)
				line["pct_of_etcd_put"] = round(100 * r.Rate / base)
			}
			if err := out.Encode(line); err != nil {
				return err
			}
		}
	}

	if want["list"] {
		lines, err := listLines(ctx, cfg, srv, o.listPods, o.listRuns)
		if err != nil {
			return err
		}
		for _, l := range lines {
			if err := out.Encode(l); err != nil {
				return err
			}
		}
	}

	if want["watch"] {
		one, err := benchWatch(ctx, cfg, srv, "bench-watch-1", 1, o.watchClients, o.connsPer, o.duration)
		if err != nil {
			return err
		}
		many, err := benchWatch(ctx, cfg, srv, fmt.Sprintf("bench-watch-%d", o.watchers), o.watchers, o.watchClients, o.connsPer, o.duration)
		if err != nil {
			return err
		}
		for _, r := range []*watchResult{one, many} {
			if err := out.Encode(r.line()); err != nil {
				return err
			}
		}
		// Each watcher adds (deliveries) events; charge the extra server CPU
		// and lost create throughput of the larger run to them.
		extra := float64(many.Watchers - one.Watchers)
		cpuPerCreate := func(r *watchResult) float64 { return r.ServerCPU.Seconds() / float64(max(r.Created, 1)) }
		if err := out.Encode(map[string]any{
			"measurement":                          "watch_cost",
			"watchers":                             []int{one.Watchers, many.Watchers},
			"creates_per_s":                        []float64{round(one.CreateRate), round(many.CreateRate)},
			"create_p99_ms":                        []float64{ms(one.CreateP99), ms(many.CreateP99)},
			"server_cpu_ms_per_create":             []float64{round3(cpuPerCreate(one) * 1000), round3(cpuPerCreate(many) * 1000)},
			"server_cpu_us_per_create_per_watcher": round3((cpuPerCreate(many) - cpuPerCreate(one)) * 1e6 / extra),
			"create_throughput_lost_pct_per_watcher": round3(100 * (one.CreateRate - many.CreateRate) /
				math.Max(one.CreateRate, 1) / extra),
		}); err != nil {
			return err
		}
	}

	if want["list"] && o.peer != "" {
		// Upstream alone on the machine, as minik was.
		srv.stop()
		dir := filepath.Join(tmp, "upstream")
		u, err := startUpstream(ctx, o.bin, o.peer, dir)
		if err != nil {
			keepLog(filepath.Join(dir, "apiserver.log"))
			return err
		}
		defer u.cp.Stop()
		lines, err := listLines(ctx, u.cfg, u, o.listPods, o.listRuns)
		if err != nil {
			keepLog(filepath.Join(dir, "apiserver.log"))
			return err
		}
		for _, l := range lines {
			if err := out.Encode(l); err != nil {
				return err
			}
		}
	}
	return nil
}

// ---------------------------------------------------------------- results

type latencies []time.Duration

func (l latencies) quantile(q float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
	return l[min(len(l)-1, int(q*float64(len(l))))]
}

type loadResult struct {
	Count     int
	Errors    int
	Rate      float64
	P50, P99  time.Duration
	Conns     int
	ServerCPU time.Duration
}

// load runs op from clients goroutines for d and measures each call.
func load(ctx context.Context, clients int, d time.Duration, op func(ctx context.Context, worker, seq int) error) loadResult {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		all      latencies
		errCount atomic.Int64
		firstErr atomic.Value
	)
	deadline := time.Now().Add(d)
	start := time.Now()
	for w := 0; w < clients; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine latencies
			for seq := 0; time.Now().Before(deadline) && ctx.Err() == nil; seq++ {
				t0 := time.Now()
				if err := op(ctx, w, seq); err != nil {
					if errCount.Add(1) == 1 {
						firstErr.Store(err.Error())
					}
					continue
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if e, ok := firstErr.Load().(string); ok {
		fmt.Fprintf(os.Stderr, "bench-apiserver: %d errors, first: %s\n", errCount.Load(), e)
	}
	return loadResult{Count: len(all), Errors: int(errCount.Load()), Rate: float64(len(all)) / elapsed.Seconds(),
		P50: all.quantile(0.50), P99: all.quantile(0.99)}
}

func ms(d time.Duration) float64 { return round3(float64(d) / float64(time.Millisecond)) }
func round(f float64) float64    { return math.Round(f*10) / 10 }
func round3(f float64) float64   { return math.Round(f*1000) / 1000 }

// ---------------------------------------------------------------- etcd baseline

// storedPodSize is about the size of a bench pod as the apiserver stores
// it, defaults, status and system fields included (986 bytes, read from
// etcd once by hand).
func storedPodSize() int { return 1000 }

// benchEtcd measures puts/s on an embedded member in dir, through the
// same in-process client minik up's apiserver uses (no network).
func benchEtcd(ctx context.Context, dir string, clients, valueSize int, d time.Duration) (loadResult, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return loadResult{}, err
	}
	member, cli, err := etcd.StartEmbedded(ctx, dir)
	if err != nil {
		return loadResult{}, err
	}
	defer member.Close()
	defer cli.Close()
	value := strings.Repeat("x", valueSize)
	put := func(ctx context.Context, worker, seq int) error {
		_, err := cli.Put(ctx, fmt.Sprintf("/registry/bench/%d/%d", worker, seq), value)
		return err
	}
	load(ctx, clients, 300*time.Millisecond, func(ctx context.Context, w, s int) error { return put(ctx, w+1000, s) })
	return load(ctx, clients, d, put), nil
}

// ---------------------------------------------------------------- minik up

type minik struct {
	startup    time.Duration // from exec to the first 200 of /readyz
	cmd        *exec.Cmd
	done       chan struct{}
	kubeconfig string
	listen     string
	log        *os.File
}

func startMinik(ctx context.Context, bin, dir string) (*minik, error) {
	bin, err := benchkit.Binary(bin)
	if err != nil {
		return nil, err
	}
	listen, err := freeport.Addr()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(dir, "minik.log"))
	if err != nil {
		return nil, err
	}
	m := &minik{kubeconfig: filepath.Join(dir, "admin.kubeconfig"), listen: listen, log: logFile, done: make(chan struct{})}
	// The apiserver alone: a scheduler would try (and fail) to place every
	// pod the bench creates and write an event for each.
	// Admission as users run it (ServiceAccount included): the bench
	// creates each namespace's default account itself (createNamespace).
	m.cmd = exec.Command(bin, "up", "--data-dir", dir, "--listen", listen, "--kubelet=false", "--scheduler=false", "--controller=false")
	m.cmd.Stdout, m.cmd.Stderr = logFile, logFile
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	started := time.Now()
	if err := m.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = m.cmd.Wait(); close(m.done) }()
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, Timeout: time.Second}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-m.done:
			return nil, fmt.Errorf("minik up exited early; see %s", logFile.Name())
		case <-ctx.Done():
			m.stop()
			return nil, ctx.Err()
		default:
		}
		if _, err := os.Stat(m.kubeconfig); err == nil {
			if resp, err := hc.Get("https://" + listen + "/readyz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					m.startup = time.Since(started)
					return m, nil
				}
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	m.stop()
	return nil, fmt.Errorf("minik up not ready after 60s; see %s", logFile.Name())
}

// stop interrupts minik up as Ctrl-C does, and kills it after 20s.
func (m *minik) stop() {
	_ = m.cmd.Process.Signal(os.Interrupt)
	select {
	case <-m.done:
	case <-time.After(20 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.done
	}
	m.log.Close()
}

// cpu returns the CPU time (user + system) minik up has used so far.
func (m *minik) cpu() time.Duration { return benchkit.ProcCPU(m.cmd.Process.Pid) }

// server is an apiserver process a measurement reads the memory and CPU
// of: minik up, or the upstream kube-apiserver (peer.go).
type server interface {
	Name() string
	PID() int
	CPU() time.Duration
}

func (m *minik) Name() string       { return "minik" }
func (m *minik) PID() int           { return m.cmd.Process.Pid }
func (m *minik) CPU() time.Duration { return m.cpu() }

// ---------------------------------------------------------------- creates

func benchPod(ns string, worker, seq int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%d-%d", worker, seq), Namespace: ns,
			Labels: map[string]string{"app": "bench", "worker": strconv.Itoa(worker)}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "c", Image: "busybox", Command: []string{"sleep", "3600"},
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")}},
		}}},
	}
}

// clients returns n creators' clients: one minik/client.Client (one HTTP/2
// connection) per perConn creators, as separate components would have.
func newClients(cfg client.Config, n, perConn int) ([]*client.Client, error) {
	conns := 1
	if perConn > 0 {
		conns = (n + perConn - 1) / perConn
	}
	out := make([]*client.Client, conns)
	for i := range out {
		c, err := client.New(cfg)
		if err != nil {
			return nil, err
		}
		out[i] = c
	}
	return out, nil
}

// createNamespace creates a namespace and its "default" ServiceAccount,
// which the ServiceAccount admission plugin requires of every pod (the
// controller that creates it is not running here).
func createNamespace(ctx context.Context, c *client.Client, name string) error {
	if _, err := c.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	_, err := c.ServiceAccounts().Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: name}}, metav1.CreateOptions{})
	return err
}

func benchCreate(ctx context.Context, cfg client.Config, srv *minik, ns string, clients, perConn int, d time.Duration) (loadResult, error) {
	cs, err := newClients(cfg, clients, perConn)
	if err != nil {
		return loadResult{}, err
	}
	if err := createNamespace(ctx, cs[0], ns); err != nil {
		return loadResult{}, err
	}
	create := func(seqBase int) func(ctx context.Context, worker, seq int) error {
		return func(ctx context.Context, worker, seq int) error {
			c := cs[worker%len(cs)]
			_, err := c.Pods().Create(ctx, benchPod(ns, worker, seqBase+seq), metav1.CreateOptions{})
			return err
		}
	}
	// Warm up: connections, TLS handshakes, caches.
	load(ctx, clients, 500*time.Millisecond, create(1_000_000))
	cpu0 := srv.cpu()
	r := load(ctx, clients, d, create(0))
	r.ServerCPU = srv.cpu() - cpu0
	r.Conns = len(cs)
	return r, nil
}

// ---------------------------------------------------------------- watch fan-out

type watchResult struct {
	Watchers      int
	Created       int
	CreateRate    float64
	CreateP99     time.Duration
	Delivered     int64
	Expected      int64
	Closed        int64
	DeliveryRate  float64 // events/s, all watchers together
	DrainAfterEnd time.Duration
	ServerCPU     time.Duration
}

func (r *watchResult) line() map[string]any {
	return map[string]any{"measurement": "watch_fanout", "watchers": r.Watchers,
		"creates_per_s": round(r.CreateRate), "create_p99_ms": ms(r.CreateP99),
		"events_per_s_total": round(r.DeliveryRate), "events_per_s_per_watcher": round(r.DeliveryRate / float64(r.Watchers)),
		"delivered": r.Delivered, "expected": r.Expected, "watchers_closed": r.Closed,
		"drain_ms_after_last_create": ms(r.DrainAfterEnd), "server_cpu_s": round3(r.ServerCPU.Seconds())}
}

// rawWatch opens a watch and counts ADDED frames without decoding them,
// so that the bench's own JSON decoding does not eat the 2 CPUs the
// server also runs on. It uses minik/client's HTTP/2 transport.
type rawWatch struct {
	added  atomic.Int64
	closed atomic.Bool
}

func startRawWatch(ctx context.Context, hc *http.Client, host, ns string, w *rawWatch, ready chan<- error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, host+"/api/v1/namespaces/"+ns+"/pods?watch=true&resourceVersion=0", nil)
	if err != nil {
		ready <- err
		return
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		ready <- err
		return
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		ready <- fmt.Errorf("watch: %s: %s", resp.Status, body)
		return
	}
	ready <- nil // the server registers the watcher before it answers
	defer resp.Body.Close()
	r := bufio.NewReaderSize(resp.Body, 64<<10)
	added := []byte(`{"type":"ADDED"`)
	for {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A frame longer than the buffer: count its start, skip the rest.
			if bytes.HasPrefix(line, added) {
				w.added.Add(1)
			}
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = r.ReadSlice('\n')
			}
		} else if bytes.HasPrefix(line, added) {
			w.added.Add(1)
		}
		if err != nil {
			if ctx.Err() == nil {
				w.closed.Store(true)
			}
			return
		}
	}
}

func benchWatch(ctx context.Context, cfg client.Config, srv *minik, ns string, watchers, creators, perConn int, d time.Duration) (*watchResult, error) {
	cs, err := newClients(cfg, creators, perConn)
	if err != nil {
		return nil, err
	}
	if err := createNamespace(ctx, cs[0], ns); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// One connection per watcher: each stands for a separate component.
	ws := make([]*rawWatch, watchers)
	ready := make(chan error, watchers)
	for i := range ws {
		ws[i] = &rawWatch{}
		hc := &http.Client{Transport: client.NewTransport(cfg.TLS)}
		go startRawWatch(wctx, hc, cfg.Host, ns, ws[i], ready)
	}
	for range ws {
		if err := <-ready; err != nil {
			return nil, err
		}
	}
	cpu0 := srv.cpu()
	start := time.Now()
	r := load(ctx, creators, d, func(ctx context.Context, worker, seq int) error {
		_, err := cs[worker%len(cs)].Pods().Create(ctx, benchPod(ns, worker, seq), metav1.CreateOptions{})
		return err
	})
	createEnd := time.Now()
	res := &watchResult{Watchers: watchers, Created: r.Count, CreateRate: r.Rate, CreateP99: r.P99,
		Expected: int64(r.Count * watchers)}
	delivered := func() (n int64, closed int64) {
		for _, w := range ws {
			n += w.added.Load()
			if w.closed.Load() {
				closed++
			}
		}
		return n, closed
	}
	// Wait until every watcher has every event (or gave up: closed).
	last := time.Now()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		n, _ := delivered()
		last = time.Now()
		complete := true
		for _, w := range ws {
			if !w.closed.Load() && w.added.Load() < int64(r.Count) {
				complete = false
				break
			}
		}
		if complete {
			res.Delivered = n
			break
		}
	}
	res.ServerCPU = srv.cpu() - cpu0
	res.Delivered, res.Closed = delivered()
	res.DrainAfterEnd = last.Sub(createEnd)
	res.DeliveryRate = float64(res.Delivered) / last.Sub(start).Seconds()
	return res, nil
}
