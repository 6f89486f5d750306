// Command report runs every benchmark of the repo, one after the other,
// and writes OUT/REPORT.md: one table of the figures, each with its
// target, its anchor (what it is compared with outside minik) and, where
// the same run measured one, its baseline (raw etcd puts, the
// containerd/runc floor), plus the plots the benchmarks drew. Every
// benchmark's JSON lines pass through to stdout.
//
//	for each bench: go run ./test/bench/NAME ARGS ──JSON lines──▶ stdout
//	                                               └──▶ figures table ──▶ OUT/REPORT.md (+ OUT/*.png)
//
// BENCH_QUICK=1 runs each with small sizes (minutes, not half an hour):
// the harness, not the numbers. -check fails when a figure of the table
// is missing from the output: what `make test` runs in quick mode. The
// kubelet, services and footprint benchmarks need root.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"minik/test/bench/benchkit"
)

// bench is one benchmark program and how to run it in full and quick.
type bench struct {
	name        string
	args, quick []string
}

// benches are run in this order. {out} is replaced by the output dir,
// {bin} by the minik binary, {coredns} by CoreDNS built from its Go
// module (test/bench/dns/coredns.sh), {kube-apiserver} by upstream's,
// built from k8s.io/kubernetes (deploy/upstream-k8s.sh). Quick runs drop
// the arguments with a placeholder but {out} and {bin}: they are
// measurements apart.
var benches = []bench{
	{"apiserver", []string{"-bin", "{bin}", "-peer", "{kube-apiserver}"}, []string{"-duration", "500ms", "-list-pods", "2000", "-list-runs", "1"}},
	{"scheduler", []string{"-bin", "{bin}", "-plot", "{out}/scheduling-basic.png"}, []string{"-scale", "0.05"}},
	{"controller", []string{"-bin", "{bin}"}, []string{"-replicas", "300", "-nodes", "20"}},
	{"kubelet", []string{"-bin", "{bin}"}, []string{"-pods", "5", "-rounds", "1", "-idle", "2s", "-idle-cpu-window", "5s"}},
	{"dns", []string{"-minik", "{bin}", "-coredns", "{coredns}"}, []string{"-services", "500", "-duration", "1s", "-warmup", "200ms"}},
	{"services", nil, []string{"-changes", "50", "-runs", "100x10"}},
	{"hollow", []string{"-bin", "{bin}"}, []string{"-nodes", "200", "-idle", "5s", "-settle", "2s", "-start-spread", "2s"}},
	{"density", []string{"-bin", "{bin}", "-plot", "{out}/density-startup-cdf.png"},
		[]string{"-nodes", "50", "-pods-per-node", "10", "-replicas", "100", "-latency-pods", "20", "-start-spread", "2s"}},
	{"footprint", []string{"-bin", "{bin}"}, []string{"-settle", "3s"}},
}

// figure is one row of the report: the value of field in the line of
// bench whose fields include match.
type figure struct {
	name   string
	bench  string
	match  map[string]any
	field  string
	unit   string
	target string
	anchor string
	// baseline, if set, is the same run's figure this one is compared
	// with (in the same bench's output).
	baseline *figure
	// full marks a figure only full runs measure.
	full bool
}

var etcdPut16 = &figure{name: "raw etcd puts, 16 clients", bench: "apiserver", match: map[string]any{"measurement": "etcd_put", "clients": 16}, field: "ops_per_s", unit: "/s"}
var floorP50 = &figure{name: "containerd+runc alone, 10 at a time, p50", bench: "kubelet", match: map[string]any{"bench": "runtime_floor", "concurrency": 10}, field: "p50_ms", unit: "ms"}
var floorNetP50 = &figure{name: "containerd+runc with a pod network each, 10 at a time, p50", bench: "kubelet", match: map[string]any{"bench": "runtime_floor_net", "concurrency": 10}, field: "p50_ms", unit: "ms"}
var floorP99 = &figure{name: "containerd+runc alone, 10 at a time, p99", bench: "kubelet", match: map[string]any{"bench": "runtime_floor", "concurrency": 10}, field: "p99_ms", unit: "ms"}

var upstreamListJSON = &figure{name: "kube-apiserver, same pods and client", bench: "apiserver", match: map[string]any{"measurement": "pod_list", "apiserver": "kube-apiserver", "encoding": "json", "gzip_asked": false}, field: "wire_mb_per_s", unit: "MB/s"}
var upstreamListProtobuf = &figure{name: "kube-apiserver, same pods and client", bench: "apiserver", match: map[string]any{"measurement": "pod_list", "apiserver": "kube-apiserver", "encoding": "protobuf", "gzip_asked": false}, field: "wire_mb_per_s", unit: "MB/s"}
var corednsQPS = &figure{name: "CoreDNS", bench: "dns", match: map[string]any{"bench": "dns_peer", "server": "coredns"}, field: "qps", unit: "queries/s"}
var corednsRSS = &figure{name: "CoreDNS", bench: "dns", match: map[string]any{"bench": "dns_peer", "server": "coredns"}, field: "rss_mb", unit: "MB"}

var figures = []figure{
	{name: "pod creates, 16 clients", bench: "apiserver", match: map[string]any{"measurement": "pod_create", "clients": 16}, field: "objects_per_s", unit: "/s",
		anchor: "kube-apiserver on this machine: minik ~3× (issue 18)", baseline: etcdPut16},
	{name: "pod create p99, 16 clients", bench: "apiserver", match: map[string]any{"measurement": "pod_create", "clients": 16}, field: "p99_ms", unit: "ms"},
	{name: "watch events delivered, 100 watchers", bench: "apiserver", match: map[string]any{"measurement": "watch_fanout", "watchers": 100}, field: "events_per_s_total", unit: "/s"},
	{name: "LIST of every pod (JSON), first byte", bench: "apiserver", match: map[string]any{"measurement": "pod_list", "apiserver": "minik", "encoding": "json", "gzip_asked": false}, field: "first_byte_ms", unit: "ms",
		target: "≤ 100", anchor: "kube-apiserver streams from ~40 ms"},
	{name: "LIST of every pod (JSON), apiserver RSS growth", bench: "apiserver", match: map[string]any{"measurement": "pod_list", "apiserver": "minik", "encoding": "json", "gzip_asked": false}, field: "rss_growth_mb", unit: "MB",
		target: "≤ 100"},
	{name: "LIST of every pod (JSON), wire throughput", bench: "apiserver", match: map[string]any{"measurement": "pod_list", "apiserver": "minik", "encoding": "json", "gzip_asked": false}, field: "wire_mb_per_s", unit: "MB/s",
		target: "≥ 1.5× upstream", anchor: "issue 18", baseline: upstreamListJSON},
	{name: "LIST of every pod (protobuf, as informers ask), wire throughput", bench: "apiserver", match: map[string]any{"measurement": "pod_list", "apiserver": "minik", "encoding": "protobuf", "gzip_asked": false}, field: "wire_mb_per_s", unit: "MB/s",
		baseline: upstreamListProtobuf},
	{name: "SchedulingBasic", bench: "scheduler", match: map[string]any{"workload": "SchedulingBasic"}, field: "pods_per_s", unit: "pods/s", anchor: "scheduler_perf's workload of the same name"},
	{name: "SchedulingNodeAffinity", bench: "scheduler", match: map[string]any{"workload": "SchedulingNodeAffinity"}, field: "pods_per_s", unit: "pods/s", anchor: "scheduler_perf"},
	{name: "SchedulingPodAntiAffinity", bench: "scheduler", match: map[string]any{"workload": "SchedulingPodAntiAffinity"}, field: "pods_per_s", unit: "pods/s", anchor: "scheduler_perf"},
	{name: "SchedulingPreemption", bench: "scheduler", match: map[string]any{"workload": "SchedulingPreemption"}, field: "pods_per_s", unit: "pods/s", anchor: "scheduler_perf"},
	{name: "Deployment scale-up on hollow nodes", bench: "controller", match: map[string]any{"bench": "deployment_scale_up"}, field: "pods_per_s", unit: "pods/s"},
	{name: "pod start, 10 at a time, p50", bench: "kubelet", match: map[string]any{"bench": "pod_startup", "concurrency": 10}, field: "p50_ms", unit: "ms",
		target: "≤ 1.25 × floor", anchor: "issue 16", baseline: floorP50},
	{name: "pod start, 10 at a time, p50, against a floor with a pod network", bench: "kubelet", match: map[string]any{"bench": "pod_startup", "concurrency": 10}, field: "p50_ms", unit: "ms",
		baseline: floorNetP50},
	{name: "pod start, 10 at a time, p99", bench: "kubelet", match: map[string]any{"bench": "pod_startup", "concurrency": 10}, field: "p99_ms", unit: "ms",
		target: "≤ 1.5 × floor", anchor: "issue 16", baseline: floorP99},
	{name: "idle node CPU, minik's processes", bench: "kubelet", match: map[string]any{"bench": "node_idle_cpu"}, field: "minik_pct", unit: "% of a core", target: "≤ 1"},
	{name: "idle kubelet PSS", bench: "kubelet", match: map[string]any{"bench": "kubelet_idle_rss"}, field: "pss_mb", unit: "MB", target: "≤ 25"},
	{name: "cluster DNS, 5,000 Services, in-memory store", bench: "dns", match: map[string]any{"bench": "dns_qps"}, field: "qps", unit: "queries/s", target: "≥ 20,000"},
	{name: "cluster DNS p99, in-memory store", bench: "dns", match: map[string]any{"bench": "dns_qps"}, field: "p99_ms", unit: "ms"},
	{name: "minik dns fed by an apiserver", bench: "dns", match: map[string]any{"bench": "dns_peer", "server": "minik"}, field: "qps", unit: "queries/s", full: true,
		anchor: "CoreDNS, same apiserver and load", baseline: corednsQPS},
	{name: "minik dns RSS", bench: "dns", match: map[string]any{"bench": "dns_peer", "server": "minik"}, field: "rss_mb", unit: "MB", full: true,
		anchor: "CoreDNS, same objects", baseline: corednsRSS},
	{name: "network programming p99, 1,000 Services × 10", bench: "services", match: map[string]any{"bench": "services", "endpoints_per_service": 10}, field: "programming_latency_p99_ms", unit: "ms",
		anchor: "Kubernetes SLO: p99 ≤ 30 s"},
	{name: "hollow nodes held Ready", bench: "hollow", match: map[string]any{"bench": "hollow_nodes"}, field: "ready_nodes", unit: "nodes", target: "5,000"},
	{name: "hollow nodes' process RSS", bench: "hollow", match: map[string]any{"bench": "hollow_nodes"}, field: "hollow_rss_mb", unit: "MB",
		target: "≤ 2,048 for 5,000", anchor: "kubemark: ~220 MB per hollow node"},
	{name: "hollow nodes' process, idle CPU", bench: "hollow", match: map[string]any{"bench": "hollow_nodes"}, field: "hollow_idle_cpu_pct", unit: "% of a core",
		target: "≤ 25 for 5,000", anchor: "kubemark: ~0.1 core per hollow node"},
	{name: "apiserver idle CPU holding them", bench: "hollow", match: map[string]any{"bench": "hollow_nodes"}, field: "apiserver_idle_cpu_pct", unit: "% of a core"},
	{name: "density: pod startup p50 (latency pods)", bench: "density", match: map[string]any{"figure": "pod_startup_latency", "pods": "latency"}, field: "p50_ms", unit: "ms"},
	{name: "density: pod startup p99 (latency pods)", bench: "density", match: map[string]any{"figure": "pod_startup_latency", "pods": "latency"}, field: "p99_ms", unit: "ms",
		target: "≤ 2,000", anchor: "Kubernetes SLO: p99 ≤ 5 s"},
	{name: "density: pod startup max (latency pods)", bench: "density", match: map[string]any{"figure": "pod_startup_latency", "pods": "latency"}, field: "max_ms", unit: "ms"},
	{name: "density: pod startup p99 (saturation pods)", bench: "density", match: map[string]any{"figure": "pod_startup_latency", "pods": "saturation"}, field: "p99_ms", unit: "ms"},
	{name: "density: mutating API call p99 (worst kind)", bench: "density", match: map[string]any{"figure": "api_call_latency"}, field: "mutating_p99_ms", unit: "ms",
		target: "≤ 250", anchor: "Kubernetes SLO: p99 ≤ 1 s"},
	{name: "density: read-only API call p99 (worst kind)", bench: "density", match: map[string]any{"figure": "api_call_latency"}, field: "readonly_p99_ms", unit: "ms",
		target: "≤ 250", anchor: "Kubernetes SLO: p99 ≤ 1 s (single objects)"},
	{name: "density: peak RSS, apiserver", bench: "density", match: map[string]any{"figure": "peak_rss"}, field: "apiserver_mb", unit: "MB"},
	{name: "density: peak RSS, etcd", bench: "density", match: map[string]any{"figure": "peak_rss"}, field: "etcd_mb", unit: "MB"},
	{name: "density: peak RSS, scheduler", bench: "density", match: map[string]any{"figure": "peak_rss"}, field: "scheduler_mb", unit: "MB"},
	{name: "density: peak RSS, controller", bench: "density", match: map[string]any{"figure": "peak_rss"}, field: "controller_mb", unit: "MB"},
	{name: "density: etcd database", bench: "density", match: map[string]any{"figure": "etcd_db"}, field: "size_mb", unit: "MB"},
	{name: "density: saturation throughput", bench: "density", match: map[string]any{"figure": "total"}, field: "saturation_pods_per_s", unit: "pods/s"},
	{name: "density: total time", bench: "density", match: map[string]any{"figure": "total"}, field: "total_s", unit: "s"},
	{name: "minik up to a Ready node with a Running pod (warm)", bench: "footprint", match: map[string]any{"figure": "startup", "phase": "warm"}, field: "startup_s", unit: "s",
		target: "≤ 1.5", anchor: "kind 12–17 s, k3s tens of seconds"},
	{name: "minik up to a Ready node with a Running pod (cold)", bench: "footprint", match: map[string]any{"figure": "startup", "phase": "cold"}, field: "startup_s", unit: "s"},
	{name: "kubelet registration retries", bench: "footprint", match: map[string]any{"figure": "startup", "phase": "cold"}, field: "registration_retries", unit: "", target: "0"},
	{name: "minik up RSS, idle, 1 node, 10 pods", bench: "footprint", match: map[string]any{"figure": "idle_memory"}, field: "up_rss_mb", unit: "MB",
		target: "≤ 60", anchor: "k3s ~535–565 MB for one idle node"},
	{name: "minik up PSS, idle, 1 node, 10 pods", bench: "footprint", match: map[string]any{"figure": "idle_memory"}, field: "up_pss_mb", unit: "MB"},
	{name: "containerd RSS (apart)", bench: "footprint", match: map[string]any{"figure": "idle_memory"}, field: "containerd_rss_mb", unit: "MB"},
	{name: "10 shims' RSS (apart)", bench: "footprint", match: map[string]any{"figure": "idle_memory"}, field: "shims_rss_mb", unit: "MB"},
	{name: "minik binary", bench: "footprint", match: map[string]any{"figure": "binary"}, field: "size_mb", unit: "MB"},
}

// plots are the images the benchmarks draw, with their captions.
var plots = []struct{ file, caption string }{
	{"scheduling-basic.png", "Pods scheduled over time in SchedulingBasic"},
	{"density-startup-cdf.png", "Pod startup latency (the SLI) of the density test's latency pods, CDF"},
}

func main() {
	out := flag.String("out", "bench", "directory of REPORT.md and the plots")
	bin := flag.String("bin", "", "minik binary (default: bin/minik of this module, built if missing)")
	only := flag.String("only", "", "comma-separated benchmarks to run (default all); the others' figures come from their last run saved in OUT/runs")
	check := flag.Bool("check", false, "fail if a figure of the table is missing (the harness check CI runs with BENCH_QUICK=1)")
	flag.Parse()
	quick, _ := strconv.ParseBool(os.Getenv("BENCH_QUICK"))
	if err := run(*out, *bin, *only, quick, *check); err != nil {
		fmt.Fprintln(os.Stderr, "bench report:", err)
		os.Exit(1)
	}
}

// result is one benchmark's lines and how its run went.
type result struct {
	lines []map[string]any
	took  time.Duration
	err   error
	// earlier is when the lines were measured, if not in this run (-only
	// reuses the last saved run of the other benchmarks).
	earlier time.Time
}

// savedRun is a benchmark's run as kept in OUT/runs/NAME.json, so that a
// report made with -only still shows the other benchmarks' last figures.
type savedRun struct {
	When  time.Time        `json:"when"`
	TookS float64          `json:"took_s"`
	Err   string           `json:"err,omitempty"`
	Lines []map[string]any `json:"lines"`
}

func saveRun(out, name string, r *result) error {
	s := savedRun{When: time.Now().UTC(), TookS: r.took.Seconds(), Lines: r.lines}
	if r.err != nil {
		s.Err = r.err.Error()
	}
	data, err := json.MarshalIndent(s, "", " ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(out, "runs"), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "runs", name+".json"), data, 0o644)
}

// loadRun reads a benchmark's last saved run; nil if there is none.
func loadRun(out, name string) *result {
	data, err := os.ReadFile(filepath.Join(out, "runs", name+".json"))
	if err != nil {
		return nil
	}
	var s savedRun
	if json.Unmarshal(data, &s) != nil {
		return nil
	}
	r := &result{lines: s.Lines, took: time.Duration(s.TookS * float64(time.Second)), earlier: s.When}
	if s.Err != "" {
		r.err = errors.New(s.Err)
	}
	return r
}

func run(out, bin, only string, quick, check bool) error {
	bin, err := benchkit.Binary(bin)
	if err != nil {
		return err
	}
	if bin, err = filepath.Abs(bin); err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	if out, err = filepath.Abs(out); err != nil {
		return err
	}
	root, err := benchkit.ModuleRoot()
	if err != nil {
		return err
	}
	start, load0 := time.Now(), benchkit.LoadAvg()
	results := map[string]*result{}
	var failed []string
	for _, b := range benches {
		if only != "" && !strings.Contains(","+only+",", ","+b.name+",") {
			if r := loadRun(out, b.name); r != nil && !quick {
				results[b.name] = r
			}
			continue
		}
		args, err := expand(root, out, bin, b, quick)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "=== bench %s %s\n", b.name, strings.Join(args, " "))
		r := runBench(root, b.name, args)
		results[b.name] = r
		if err := saveRun(out, b.name, r); err != nil {
			return err
		}
		if r.err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", b.name, r.err))
			fmt.Fprintf(os.Stderr, "=== bench %s failed after %.0fs: %v\n", b.name, r.took.Seconds(), r.err)
		}
	}
	md := render(results, quick, start, load0)
	if err := os.WriteFile(filepath.Join(out, "REPORT.md"), md, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "wrote %s in %.0fs\n", filepath.Join(out, "REPORT.md"), time.Since(start).Seconds())
	if check {
		for _, f := range figures {
			if results[f.bench] == nil || f.full && quick {
				continue // not run (-only), or not in quick runs
			}
			if _, ok := value(results, &f); !ok {
				failed = append(failed, fmt.Sprintf("figure %q (%s: %v %s) is missing", f.name, f.bench, f.match, f.field))
			}
		}
		for _, p := range plots {
			if _, err := os.Stat(filepath.Join(out, p.file)); err != nil {
				failed = append(failed, fmt.Sprintf("plot %s is missing", p.file))
			}
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d problems:\n  %s", len(failed), strings.Join(failed, "\n  "))
	}
	return nil
}

// expand is b's arguments with their placeholders replaced.
// peerBuilders build the upstream programs a full run measures minik
// against, each printing the binary's path.
var peerBuilders = map[string][]string{
	"{coredns}":        {"test/bench/dns/coredns.sh"},
	"{kube-apiserver}": {"-c", "deploy/upstream-k8s.sh build bin/kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver >&2 && echo bin/kube-apiserver"},
}

func expand(root, out, bin string, b bench, quick bool) ([]string, error) {
	var args []string
	for i := 0; i < len(b.args); i++ {
		a := b.args[i]
		if builder, ok := peerBuilders[a]; ok {
			if quick {
				args = args[:len(args)-1] // and its flag
				continue
			}
			cmd := exec.Command("bash", builder...)
			cmd.Dir, cmd.Stderr = root, os.Stderr
			path, err := cmd.Output()
			if err != nil {
				return nil, fmt.Errorf("building %s: %w", a, err)
			}
			a = strings.TrimSpace(string(path))
		}
		args = append(args, strings.NewReplacer("{out}", out, "{bin}", bin).Replace(a))
	}
	if quick {
		args = append(args, b.quick...)
	}
	return args, nil
}

// runBench runs one benchmark, passing its JSON lines to stdout and its
// other output to stderr.
func runBench(root, name string, args []string) *result {
	r := &result{}
	cmd := exec.Command("go", append([]string{"run", "./test/bench/" + name}, args...)...)
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	cmd.Env = append(os.Environ(), "BENCH_QUICK=") // the runner decides the sizes
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		r.err = err
		return r
	}
	began := time.Now()
	if err := cmd.Start(); err != nil {
		r.err = err
		return r
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		fmt.Println(string(line))
		var m map[string]any
		if json.Unmarshal(line, &m) == nil {
			r.lines = append(r.lines, m)
		}
	}
	_, _ = io.Copy(io.Discard, stdout)
	r.err = cmd.Wait()
	r.took = time.Since(began)
	return r
}

// value finds f's value in its bench's lines.
func value(results map[string]*result, f *figure) (any, bool) {
	r := results[f.bench]
	if r == nil {
		return nil, false
	}
	for _, l := range r.lines {
		if matches(l, f.match) {
			v, ok := l[f.field]
			return v, ok
		}
	}
	return nil, false
}

func matches(l, match map[string]any) bool {
	for k, want := range match {
		got, ok := l[k]
		if !ok {
			return false
		}
		if n, isNum := want.(int); isNum {
			if g, isF := got.(float64); !isF || g != float64(n) {
				return false
			}
			continue
		}
		if got != want {
			return false
		}
	}
	return true
}

func format(v any, unit string) string {
	switch x := v.(type) {
	case float64:
		s := strconv.FormatFloat(x, 'f', -1, 64)
		if x >= 100 || x <= -100 {
			s = strconv.FormatFloat(x, 'f', 0, 64)
		}
		return strings.TrimSpace(s + " " + unit)
	default:
		return strings.TrimSpace(fmt.Sprint(x) + " " + unit)
	}
}

// render writes the report: the table, the plots, how it was run.
func render(results map[string]*result, quick bool, start time.Time, load0 float64) []byte {
	var b bytes.Buffer
	mode := "full"
	if quick {
		mode = "quick (BENCH_QUICK=1: small sizes, for the harness; not the numbers to quote)"
	}
	fmt.Fprintf(&b, "# minik benchmark report\n\n")
	fmt.Fprintf(&b, "Made by `make bench` (`go run ./test/bench/report`) on %s: %d CPUs, %s, mode %s; took %.0f min; load average %.1f at the start, %.1f at the end (the machine is shared: numbers move with it).\n\n",
		start.UTC().Format("2006-01-02 15:04 UTC"), runtime.NumCPU(), memTotal(), mode, time.Since(start).Minutes(), load0, benchkit.LoadAvg())
	b.WriteString("| figure | value | target | anchor | baseline (same run) |\n| --- | --- | --- | --- | --- |\n")
	for _, f := range figures {
		if results[f.bench] == nil {
			continue
		}
		val := "missing"
		if v, ok := value(results, &f); ok {
			val = format(v, f.unit)
		}
		base := ""
		if f.baseline != nil {
			if v, ok := value(results, f.baseline); ok {
				base = f.baseline.name + ": " + format(v, f.baseline.unit)
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", f.name, val, f.target, f.anchor, base)
	}
	b.WriteString("\n")
	for _, p := range plots {
		fmt.Fprintf(&b, "![%s](%s)\n\n*%s*\n\n", p.caption, p.file, p.caption)
	}
	b.WriteString("## Runs\n\n| benchmark | time | result |\n| --- | --- | --- |\n")
	for _, bn := range benches {
		r := results[bn.name]
		if r == nil {
			continue
		}
		status := "ok"
		if r.err != nil {
			status = "failed: " + r.err.Error()
		}
		if !r.earlier.IsZero() {
			status += " (an earlier run, " + r.earlier.Format("2006-01-02 15:04 UTC") + ")"
		}
		took := "not recorded"
		if r.took > 0 {
			took = fmt.Sprintf("%.0f s", r.took.Seconds())
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", bn.name, took, status)
	}
	return b.Bytes()
}

func memTotal() string {
	data, _ := os.ReadFile("/proc/meminfo")
	var kb int64
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			fmt.Sscanf(strings.TrimSpace(v), "%d", &kb)
		}
	}
	return fmt.Sprintf("%.0f GiB", float64(kb)/(1<<20))
}
