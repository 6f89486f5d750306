package main

import (
	gz "compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/client"
)

// listResult is one LIST of every pod, as a client reads it.
type listResult struct {
	FirstByte, Total time.Duration
	Bytes            int64 // on the wire (compressed when gzipped)
	BodyBytes        int64 // decompressed
	Gzipped          bool
	RSSBefore        int64 // the apiserver's RSS before the request, bytes
	RSSGrowth        int64 // its peak RSS during the request minus RSSBefore
	ServerCPU        time.Duration
}

// fillPods creates n pods in ns with 64 concurrent clients.
func fillPods(ctx context.Context, cfg client.Config, ns string, n int) error {
	cs, err := newClients(cfg, 64, 8)
	if err != nil {
		return err
	}
	if err := createNamespace(ctx, cs[0], ns); err != nil {
		return err
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := 0; w < 64; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if _, err := cs[w%len(cs)].Pods().Create(ctx, benchPod(ns, w, i), metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// rss returns the resident set size of pid in bytes.
func rss(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// benchList reads every pod of bench-list once in the given form, sampling the
// server's RSS every 5ms meanwhile.
func benchList(ctx context.Context, hc *http.Client, host string, srv server, protobuf, gzip bool) (listResult, error) {
	var res listResult
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, host+"/api/v1/namespaces/bench-list/pods", nil)
	if err != nil {
		return res, err
	}
	if protobuf {
		req.Header.Set("Accept", "application/vnd.kubernetes.protobuf, application/json")
	} else {
		req.Header.Set("Accept", "application/json")
	}
	if gzip {
		// Set by hand, so the transport hands over the compressed bytes.
		req.Header.Set("Accept-Encoding", "gzip")
	} else {
		req.Header.Set("Accept-Encoding", "identity")
	}
	pid := srv.PID()
	res.RSSBefore = rss(pid)
	peak := res.RSSBefore
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if r := rss(pid); r > peak {
					peak = r
				}
			}
		}
	}()
	cpu0 := srv.CPU()
	start := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		close(stop)
		return res, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		close(stop)
		body, _ := io.ReadAll(resp.Body)
		return res, fmt.Errorf("list: %s: %.200s", resp.Status, body)
	}
	wire := &firstByteReader{r: resp.Body, start: start}
	var body io.Reader = wire
	if resp.Header.Get("Content-Encoding") == "gzip" {
		if body, err = gz.NewReader(wire); err != nil {
			close(stop)
			return res, err
		}
	}
	res.BodyBytes, err = io.Copy(io.Discard, body)
	if err != nil {
		close(stop)
		return res, err
	}
	res.Bytes, res.FirstByte = wire.n, wire.first
	res.Total = time.Since(start)
	close(stop)
	<-sampled
	if r := rss(pid); r > peak {
		peak = r
	}
	res.ServerCPU = srv.CPU() - cpu0
	res.RSSGrowth = peak - res.RSSBefore
	res.Gzipped = resp.Header.Get("Content-Encoding") == "gzip"
	return res, nil
}

// listLines fills the server with pods and measures LISTs of all of them
// in each form, runs times each (interleaved), and returns one line per
// form with the medians.
func listLines(ctx context.Context, cfg client.Config, srv server, pods, runs int) ([]map[string]any, error) {
	fillStart := time.Now()
	if err := fillPods(ctx, cfg, "bench-list", pods); err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "created %d pods in %s\n", pods, time.Since(fillStart).Round(time.Millisecond))
	hc := &http.Client{Transport: client.NewTransport(cfg.TLS)}
	type form struct {
		name           string
		protobuf, gzip bool
		results        []listResult
	}
	forms := []*form{{name: "json", gzip: false}, {name: "json", gzip: true}, {name: "protobuf"}, {name: "protobuf", gzip: true}}
	for i := 0; i < runs; i++ {
		for _, f := range forms {
			r, err := benchList(ctx, hc, cfg.Host, srv, f.protobuf || f.name == "protobuf", f.gzip)
			if err != nil {
				return nil, err
			}
			f.results = append(f.results, r)
		}
	}
	var lines []map[string]any
	for _, f := range forms {
		med := func(v func(listResult) float64) float64 {
			xs := make([]float64, len(f.results))
			for i, r := range f.results {
				xs[i] = v(r)
			}
			sort.Float64s(xs)
			return xs[len(xs)/2]
		}
		lines = append(lines, map[string]any{
			"measurement": "pod_list", "apiserver": srv.Name(), "pods": pods, "encoding": f.name, "gzip_asked": f.gzip,
			"gzipped": f.results[0].Gzipped, "runs": runs,
			"first_byte_ms":  round(med(func(r listResult) float64 { return float64(r.FirstByte) / 1e6 })),
			"total_ms":       round(med(func(r listResult) float64 { return float64(r.Total) / 1e6 })),
			"first_byte_pct": round(med(func(r listResult) float64 { return 100 * float64(r.FirstByte) / float64(r.Total) })),
			"wire_mb":        round3(med(func(r listResult) float64 { return float64(r.Bytes) / 1e6 })),
			"wire_mb_per_s":  round(med(func(r listResult) float64 { return float64(r.Bytes) / 1e6 / r.Total.Seconds() })),
			"body_mb":        round3(med(func(r listResult) float64 { return float64(r.BodyBytes) / 1e6 })),
			"body_mb_per_s":  round(med(func(r listResult) float64 { return float64(r.BodyBytes) / 1e6 / r.Total.Seconds() })),
			"rss_peak_mb":    round(maxPeak(f.results)),
			"rss_before_mb":  round(med(func(r listResult) float64 { return float64(r.RSSBefore) / 1e6 })),
			"rss_growth_mb":  round(med(func(r listResult) float64 { return float64(r.RSSGrowth) / 1e6 })),
			"server_cpu_ms":  round(med(func(r listResult) float64 { return float64(r.ServerCPU) / 1e6 })),
			"total_ms_each":  totals(f.results),
		})
	}
	return lines, nil
}

func totals(rs []listResult) []float64 {
	out := make([]float64, len(rs))
	for i, r := range rs {
		out[i] = round(float64(r.Total) / 1e6)
	}
	return out
}

// maxPeak is the highest RSS the server reached in any of the runs, MB.
func maxPeak(rs []listResult) float64 {
	var m int64
	for _, r := range rs {
		m = max(m, r.RSSBefore+r.RSSGrowth)
	}
	return float64(m) / 1e6
}

// firstByteReader counts the bytes read and notes when the first came.
type firstByteReader struct {
	r     io.Reader
	start time.Time
	first time.Duration
	n     int64
}

func (f *firstByteReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if n > 0 && f.n == 0 {
		f.first = time.Since(f.start)
	}
	f.n += int64(n)
	return n, err
}
