package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	miekg "github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/client"
	"minik/test/bench/benchkit"
)

// The side-by-side run (-minik, and -coredns for the peer): one real
// apiserver (minik apiserver and etcd, as processes) holds the Services and
// EndpointSlices; `minik dns` and then CoreDNS (its kubernetes plugin,
// kubeadm's Corefile) each list-watch them from it, as they would in a
// cluster, and answer the same load:
//
//	bench ── creates N Services + N slices ──▶ apiserver + etcd (benchkit's control plane)
//	             ▲ list-watch                        ▲ list-watch
//	        minik dns (process)               coredns (process)
//	             ▲ UDP                               ▲ UDP
//	        load generator ─── same mix, same clients, one server at a time
//
// For each: the time from exec until it answers for the last Service,
// RSS then and after the load, QPS, p50/p99 and CPU per query.

// peerResult is one server's line (bench "dns_peer").
type peerResult struct {
	Bench        string  `json:"bench"`
	Server       string  `json:"server"`
	Services     int     `json:"services"`
	Endpoints    int     `json:"endpoints"`
	SyncMs       float64 `json:"sync_ms"`
	RSSMB        float64 `json:"rss_mb"`
	RSSAfterMB   float64 `json:"rss_after_load_mb"`
	AnonMB       float64 `json:"rss_anon_mb"` // of rss_mb: heap, stacks
	FileMB       float64 `json:"rss_file_mb"` // of rss_mb: the binary's pages
	AnonAfterMB  float64 `json:"rss_anon_after_load_mb"`
	FileAfterMB  float64 `json:"rss_file_after_load_mb"`
	QPS          float64 `json:"qps"`
	P50Ms        float64 `json:"p50_ms"`
	P99Ms        float64 `json:"p99_ms"`
	Timeouts     int64   `json:"timeouts"`
	WrongRcode   int64   `json:"wrong_rcode"`
	CPUPerQueryU float64 `json:"server_cpu_per_query_us"`
}

func peer(ctx context.Context, o options, minikBin, corednsBin string) error {
	dir, err := os.MkdirTemp("", "bench-dns-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cp, err := benchkit.StartControlPlane(ctx, minikBin, dir, benchkit.ControlPlaneOptions{})
	if err != nil {
		return err
	}
	defer cp.Stop()
	admin, err := cp.Client("bench-dns")
	if err != nil {
		return err
	}
	start := time.Now()
	if err := populate(ctx, admin, o); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "bench-dns: %d Services and slices created through the apiserver in %v\n", o.services, time.Since(start).Round(time.Millisecond))

	servers := []struct {
		name string
		args func(addr string) (bin string, args []string, err error)
	}{{"minik", func(addr string) (string, []string, error) {
		return minikBin, []string{"dns", "--kubeconfig", cp.Admin, "--listen", addr, "--register=false"}, nil
	}}}
	if corednsBin != "" {
		servers = append(servers, struct {
			name string
			args func(addr string) (string, []string, error)
		}{"coredns", func(addr string) (string, []string, error) {
			corefile, err := writeCorefile(dir, addr, cp.Admin)
			return corednsBin, []string{"-conf", corefile}, err
		}})
	}
	out := json.NewEncoder(os.Stdout)
	var results []peerResult
	for _, s := range servers {
		addr, err := freeUDPAndTCP()
		if err != nil {
			return err
		}
		bin, args, err := s.args(addr)
		if err != nil {
			return err
		}
		r, err := measureServer(ctx, o, s.name, addr, bin, args, filepath.Join(dir, s.name+".log"))
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		_ = out.Encode(r)
		results = append(results, r)
	}
	if len(results) == 2 {
		m, c := results[0], results[1]
		rss := max(m.RSSMB, m.RSSAfterMB) / max(c.RSSMB, c.RSSAfterMB)
		_ = out.Encode(map[string]any{"bench": "dns_peer_ratio", "services": o.services,
			"rss_ratio": rss, "qps_ratio": m.QPS / c.QPS, "cpu_per_query_ratio": m.CPUPerQueryU / c.CPUPerQueryU,
			"target_rss_ratio": 0.5, "pass": rss <= 0.5})
	}
	return nil
}

// populate creates the bench's namespaces, Services and EndpointSlices
// (objects(o, i)) through the API, 32 at a time.
func populate(ctx context.Context, c *client.Client, o options) error {
	for i := range min(50, o.services) {
		ns, _ := serviceName(i)
		if _, err := c.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	svcs := client.For[corev1.Service](c, client.Services)
	slices := client.For[discoveryv1.EndpointSlice](c, client.EndpointSlices)
	next := make(chan int)
	errs := make(chan error, 32)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for i := range next {
				svc, sl := objects(o, i)
				if _, err := svcs.Create(ctx, svc, metav1.CreateOptions{}); err != nil {
					errs <- fmt.Errorf("service %s/%s: %w", svc.Namespace, svc.Name, err)
					return
				}
				if _, err := slices.Create(ctx, sl, metav1.CreateOptions{}); err != nil {
					errs <- fmt.Errorf("slice %s/%s: %w", sl.Namespace, sl.Name, err)
					return
				}
			}
		})
	}
	var err error
feed:
	for i := range o.services {
		select {
		case next <- i:
		case err = <-errs:
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err != nil {
		return err
	}
	select {
	case err = <-errs:
	default:
	}
	return err
}

// writeCorefile writes kubeadm's default Corefile for CoreDNS, serving on
// addr and reaching the apiserver with kubeconfig; its health, ready and
// prometheus listeners on free loopback ports.
func writeCorefile(dir, addr, kubeconfig string) (string, error) {
	host, port, _ := net.SplitHostPort(addr)
	var extra [3]string
	for i := range extra {
		a, err := freeUDPAndTCP()
		if err != nil {
			return "", err
		}
		extra[i] = a
	}
	corefile := fmt.Sprintf(`.:%s {
    bind %s
    errors
    health %s
    ready %s
    kubernetes cluster.local in-addr.arpa ip6.arpa {
       kubeconfig %s
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
    }
    prometheus %s
    forward . /etc/resolv.conf {
       max_concurrent 1000
    }
    cache 30
    loop
    reload
    loadbalance
}
`, port, host, extra[0], extra[1], kubeconfig, extra[2])
	path := filepath.Join(dir, "Corefile")
	return path, os.WriteFile(path, []byte(corefile), 0o644)
}

// measureServer starts one DNS server, waits until it answers for the
// last Service (its caches hold them all), and measures it.
func measureServer(ctx context.Context, o options, name, addr, bin string, args []string, logPath string) (peerResult, error) {
	proc, err := benchkit.Start(name, bin, logPath, args...)
	if err != nil {
		return peerResult{}, err
	}
	defer proc.Stop()
	start := proc.Started

	last := o.services - 1
	if last%o.headless == 0 {
		last--
	}
	ns, svc := serviceName(last)
	if err := waitForAnswer(ctx, proc, addr, svc+"."+ns+".svc.cluster.local.", 2*time.Minute); err != nil {
		return peerResult{}, fmt.Errorf("%w (log: %s)", err, logPath)
	}
	r := peerResult{Bench: "dns_peer", Server: name, Services: o.services, Endpoints: o.services * o.endpoints,
		SyncMs: ms(time.Since(start))}
	time.Sleep(time.Second) // let the heap settle after the initial lists
	pid := proc.PID()
	r.RSSMB, r.AnonMB, r.FileMB = rss(pid)
	cpu0 := proc.CPU()
	res, err := load(ctx, addr, mix(o), o)
	if err != nil {
		return r, err
	}
	cpu1 := proc.CPU()
	r.RSSAfterMB, r.AnonAfterMB, r.FileAfterMB = rss(pid)
	r.QPS, r.P50Ms, r.P99Ms, r.Timeouts, r.WrongRcode = res.QPS, res.P50Ms, res.P99Ms, res.Timeouts, res.WrongRcode
	if res.Queries > 0 {
		r.CPUPerQueryU = float64((cpu1 - cpu0).Microseconds()) / float64(res.Queries)
	}
	return r, nil
}

// rss is a process's resident set, and its anonymous (heap, stacks) and
// file-backed (the binary's pages) parts, in MB.
func rss(pid int) (total, anon, file float64) {
	return benchkit.MemMB(pid, "status", "VmRSS"), benchkit.MemMB(pid, "status", "RssAnon"), benchkit.MemMB(pid, "status", "RssFile")
}

// waitForAnswer asks for name's A record until it gets one.
func waitForAnswer(ctx context.Context, proc *benchkit.Proc, addr, name string, within time.Duration) error {
	c := &miekg.Client{Timeout: 500 * time.Millisecond}
	q := new(miekg.Msg).SetQuestion(name, miekg.TypeA)
	for deadline := time.Now().Add(within); time.Now().Before(deadline); {
		if r, _, err := c.ExchangeContext(ctx, q, addr); err == nil && r.Rcode == miekg.RcodeSuccess && len(r.Answer) > 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-proc.Done():
			return fmt.Errorf("%s exited", proc.Name)
		case <-time.After(20 * time.Millisecond):
		}
	}
	return fmt.Errorf("no answer for %s from %s within %v", name, addr, within)
}

// freeUDPAndTCP returns a loopback address whose port is free for both
// UDP and TCP (a DNS server takes both).
func freeUDPAndTCP() (string, error) {
	for range 50 {
		u, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		addr := u.LocalAddr().String()
		t, err := net.Listen("tcp", addr)
		u.Close()
		if err == nil {
			t.Close()
			return addr, nil
		}
	}
	return "", fmt.Errorf("no port free for both UDP and TCP")
}
