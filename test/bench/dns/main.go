// Command dns benchmarks minik's cluster DNS on this machine and prints
// one JSON line per measurement:
//
//	dns_store   the time to feed N Services and their EndpointSlices
//	            through the store's update path, per update
//	dns_rss     the resident memory of the DNS process holding them, next
//	            to CoreDNS's documented (pods + services)/1000 + 54 MB
//	dns_qps     queries per second and p50/p99 latency from closed-loop
//	            UDP clients on loopback, with a mix of ClusterIP A,
//	            headless A, SRV and NXDOMAIN questions, and the server's
//	            CPU per query
//
// The DNS runs in a child process (this binary with -serve), so that its
// RSS and CPU are its own: the child builds the store from an in-memory
// stream of objects (no apiserver), serves on a loopback port and prints
// the address. Run it with `make bench-dns`, or `go run ./test/bench/dns
// -h` for the flags.
package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	miekg "github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"minik/dns"
	"minik/test/bench/benchkit"
)

type options struct {
	serve     bool
	services  int
	endpoints int
	headless  int // one Service in this many is headless
	clients   int
	duration  time.Duration
	warmup    time.Duration
	minik     string // the minik binary, for the side-by-side run ("": skip it)
	coredns   string // the CoreDNS binary, its peer ("": minik alone)
}

func main() {
	var o options
	flag.BoolVar(&o.serve, "serve", false, "internal: be the DNS process")
	flag.IntVar(&o.services, "services", 5000, "Services in the store")
	flag.IntVar(&o.endpoints, "endpoints", 2, "ready endpoints per Service (one EndpointSlice each)")
	flag.IntVar(&o.headless, "headless-every", 5, "one Service in this many is headless")
	flag.IntVar(&o.clients, "clients", 16, "concurrent UDP clients, one question in flight each")
	flag.DurationVar(&o.duration, "duration", 5*time.Second, "length of the QPS measurement")
	flag.DurationVar(&o.warmup, "warmup", time.Second, "load before measuring")
	flag.StringVar(&o.minik, "minik", "", "minik binary: also measure `minik dns` fed by a real apiserver (minik up) holding the same objects")
	flag.StringVar(&o.coredns, "coredns", "", "CoreDNS binary (test/bench/dns/coredns.sh builds it): measure it beside minik dns, same apiserver, same load")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	if o.serve {
		err = serve(ctx, o)
	} else {
		err = run(ctx, o)
		if err == nil && o.minik != "" {
			err = peer(ctx, o, o.minik, o.coredns)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-dns:", err)
		os.Exit(1)
	}
}

// The objects of the benchmark cluster: Service i is svc-i in namespace
// ns-(i%50), ClusterIP 10.96.x.y, with one slice of ready endpoints.
func serviceName(i int) (ns, name string) {
	return "ns-" + strconv.Itoa(i%50), "svc-" + strconv.Itoa(i)
}

func objects(o options, i int) (*corev1.Service, *discoveryv1.EndpointSlice) {
	ns, name := serviceName(i)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP,
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}}}
	if i%o.headless == 0 {
		svc.Spec.ClusterIP = corev1.ClusterIPNone
	} else {
		ip := fmt.Sprintf("10.96.%d.%d", 1+i/250, 1+i%250)
		svc.Spec.ClusterIP, svc.Spec.ClusterIPs = ip, []string{ip}
	}
	sl := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name + "-abcde", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	for e := range o.endpoints {
		n := i*o.endpoints + e
		sl.Endpoints = append(sl.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{fmt.Sprintf("10.%d.%d.%d", 128+n/65536, n/256%256, n%256)},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			Hostname:   ptr.To(fmt.Sprintf("%s-%d", name, e)),
		})
	}
	return svc, sl
}

// serve is the DNS process: store, server, and a line on stdout for
// each milestone.
func serve(ctx context.Context, o options) error {
	if os.Getenv("GOGC") == "" { // as `minik dns` does
		debug.SetGCPercent(dns.GCPercent)
	}
	store := dns.NewStore(dns.StoreConfig{})
	start := time.Now()
	for i := range o.services {
		svc, sl := objects(o, i)
		store.UpsertService(svc)
		store.UpsertSlice(sl)
	}
	build := time.Since(start)
	store.SetSynced(true)
	srv := dns.NewServer(dns.ServerConfig{Listen: "127.0.0.1:0", Store: store, Logger: slog.New(slog.DiscardHandler)})
	if err := srv.Listen(); err != nil {
		return err
	}
	fmt.Printf("ready %s %d\n", srv.Addr(), build.Nanoseconds())
	return srv.Serve(ctx)
}

// question is one packed query of the mix, and the rcode it must get.
type question struct {
	kind  string
	wire  []byte
	rcode int
}

func mix(o options) []question {
	var qs []question
	add := func(kind, name string, qtype uint16, rcode int) {
		m := new(miekg.Msg).SetQuestion(name, qtype)
		wire, err := m.Pack()
		if err != nil {
			panic(err)
		}
		qs = append(qs, question{kind, wire, rcode})
	}
	r := rand.New(rand.NewPCG(1, 2))
	for len(qs) < 10000 {
		i := r.IntN(o.services)
		ns, name := serviceName(i)
		fqdn := name + "." + ns + ".svc.cluster.local."
		switch k := len(qs) % 10; {
		case k < 4: // ClusterIP A
			if i%o.headless == 0 {
				i++
				ns, name = serviceName(i % o.services)
				fqdn = name + "." + ns + ".svc.cluster.local."
			}
			add("clusterip_a", fqdn, miekg.TypeA, miekg.RcodeSuccess)
		case k < 6: // headless A
			i -= i % o.headless
			ns, name = serviceName(i)
			add("headless_a", name+"."+ns+".svc.cluster.local.", miekg.TypeA, miekg.RcodeSuccess)
		case k < 8:
			add("srv", "_http._tcp."+fqdn, miekg.TypeSRV, miekg.RcodeSuccess)
		default: // a search-path miss, the commonest NXDOMAIN in a cluster
			add("nxdomain", fqdn+"svc.cluster.local.", miekg.TypeA, miekg.RcodeNameError)
		}
	}
	return qs
}

type result struct {
	Bench string `json:"bench"`
	// dns_store
	Services     int     `json:"services,omitempty"`
	Slices       int     `json:"slices,omitempty"`
	Endpoints    int     `json:"endpoints,omitempty"`
	BuildMs      float64 `json:"build_ms,omitempty"`
	PerUpdateUs  float64 `json:"per_update_us,omitempty"`
	RSSMB        float64 `json:"rss_mb,omitempty"`
	RSSAfterMB   float64 `json:"rss_after_load_mb,omitempty"`
	CoreDNSMB    float64 `json:"coredns_mb,omitempty"`
	TargetMB     float64 `json:"target_mb,omitempty"`
	Clients      int     `json:"clients,omitempty"`
	Queries      int64   `json:"queries,omitempty"`
	QPS          float64 `json:"qps,omitempty"`
	P50Ms        float64 `json:"p50_ms,omitempty"`
	P99Ms        float64 `json:"p99_ms,omitempty"`
	MaxMs        float64 `json:"max_ms,omitempty"`
	Timeouts     int64   `json:"timeouts,omitempty"`
	WrongRcode   int64   `json:"wrong_rcode,omitempty"`
	CPUPerQueryU float64 `json:"server_cpu_per_query_us,omitempty"`
	ServerCPU    float64 `json:"server_cpu_cores,omitempty"`
	Target       float64 `json:"target_qps,omitempty"`
	Mix          string  `json:"mix,omitempty"`
	Pass         *bool   `json:"pass,omitempty"`
}

func run(ctx context.Context, o options) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	args := []string{"-serve", "-services", strconv.Itoa(o.services), "-endpoints", strconv.Itoa(o.endpoints),
		"-headless-every", strconv.Itoa(o.headless)}
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		return fmt.Errorf("dns process: %w", err)
	}
	var addr string
	var buildNs int64
	if _, err := fmt.Sscanf(line, "ready %s %d", &addr, &buildNs); err != nil {
		return fmt.Errorf("dns process said %q: %w", line, err)
	}
	out := json.NewEncoder(os.Stdout)
	pid := cmd.Process.Pid
	updates := 2 * o.services
	_ = out.Encode(result{Bench: "dns_store", Services: o.services, Slices: o.services, Endpoints: o.services * o.endpoints,
		BuildMs: ms(time.Duration(buildNs)), PerUpdateUs: float64(buildNs) / 1e3 / float64(updates)})

	time.Sleep(time.Second) // let the heap settle after the build
	rss := benchkit.MemMB(pid, "status", "VmRSS")

	qs := mix(o)
	cpu0 := benchkit.ProcCPU(pid)
	res, err := load(ctx, addr, qs, o)
	if err != nil {
		return err
	}
	cpu1 := benchkit.ProcCPU(pid)
	res.CPUPerQueryU = float64((cpu1 - cpu0).Microseconds()) / float64(res.Queries)
	res.ServerCPU = (cpu1 - cpu0).Seconds() / o.duration.Seconds()
	res.Target = 20000
	res.Pass = ptr.To(res.QPS >= res.Target && res.Timeouts == 0 && res.WrongRcode == 0)
	_ = out.Encode(res)

	after := benchkit.MemMB(pid, "status", "VmRSS")
	coredns := float64(o.services+o.services*o.endpoints)/1000 + 54
	_ = out.Encode(result{Bench: "dns_rss", Services: o.services, Slices: o.services, Endpoints: o.services * o.endpoints,
		RSSMB: rss, RSSAfterMB: after, CoreDNSMB: coredns, TargetMB: coredns / 2, Pass: ptr.To(max(rss, after) < coredns/2)})
	return nil
}

// load runs o.clients closed-loop UDP clients against addr for the warmup
// and then o.duration, and returns what the measured part saw.
func load(ctx context.Context, addr string, qs []question, o options) (result, error) {
	var (
		measuring atomic.Bool
		stop      atomic.Bool
		mu        sync.Mutex
		lat       []time.Duration
		total     result
		wg        sync.WaitGroup
		errs      = make(chan error, o.clients)
	)
	for c := range o.clients {
		conn, err := net.Dial("udp", addr)
		if err != nil {
			return result{}, err
		}
		wg.Go(func() {
			defer conn.Close()
			var mine []time.Duration
			var timeouts, wrong int64
			buf := make([]byte, 4096)
			pkt := make([]byte, 512)
			r := rand.New(rand.NewPCG(uint64(c), 7))
			id := uint16(c << 10)
			for !stop.Load() && ctx.Err() == nil {
				q := qs[r.IntN(len(qs))]
				id++
				pkt = append(pkt[:0], q.wire...)
				binary.BigEndian.PutUint16(pkt, id)
				start := time.Now()
				if _, err := conn.Write(pkt); err != nil {
					errs <- err
					return
				}
				_ = conn.SetReadDeadline(start.Add(time.Second))
				var n int
				var err error
				for {
					n, err = conn.Read(buf)
					if err != nil || (n >= 12 && binary.BigEndian.Uint16(buf) == id) {
						break // a late answer to an earlier question is skipped
					}
				}
				d := time.Since(start)
				if !measuring.Load() {
					continue
				}
				if err != nil {
					var ne net.Error
					if errors.As(err, &ne) && ne.Timeout() {
						timeouts++
						continue
					}
					errs <- err
					return
				}
				if int(buf[3]&0x0f) != q.rcode {
					wrong++
				}
				mine = append(mine, d)
			}
			mu.Lock()
			lat = append(lat, mine...)
			total.Timeouts += timeouts
			total.WrongRcode += wrong
			mu.Unlock()
		})
	}
	time.Sleep(o.warmup)
	measuring.Store(true)
	time.Sleep(o.duration)
	measuring.Store(false)
	stop.Store(true)
	wg.Wait()
	select {
	case err := <-errs:
		return result{}, err
	default:
	}
	slices.Sort(lat)
	total.Bench, total.Clients, total.Queries = "dns_qps", o.clients, int64(len(lat))
	total.QPS = float64(len(lat)) / o.duration.Seconds()
	if len(lat) > 0 {
		total.P50Ms = ms(lat[len(lat)/2])
		total.P99Ms = ms(lat[len(lat)*99/100])
		total.MaxMs = ms(lat[len(lat)-1])
	}
	total.Mix = "40% ClusterIP A, 20% headless A, 20% SRV, 20% NXDOMAIN"
	return total, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
