// Command hollow measures what hollow nodes cost: a control plane
// (etcd, apiserver, controller as separate processes, benchkit) holds
// -nodes hollow nodes of one `minik hollow` process; it reports the time
// until every node is Ready, then, over an idle window, each process's
// CPU and RSS and how many nodes stayed Ready. One JSON line.
//
//	benchkit.ControlPlane (etcd, apiserver, controller: node lifecycle)
//	        ▲ watches, Leases, node status
//	minik hollow --nodes N  (one process, identity hollow.User)
//
// Run it with `make bench-hollow` or `go run ./test/bench/hollow -h`.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"minik/test/bench/benchkit"
)

type options struct {
	bin    string
	nodes  int
	idle   time.Duration
	settle time.Duration
	spread time.Duration
	keep   bool
}

func main() {
	var o options
	flag.StringVar(&o.bin, "bin", "", "minik binary (default: bin/minik of this module, built if missing)")
	flag.IntVar(&o.nodes, "nodes", 5000, "hollow nodes")
	flag.DurationVar(&o.idle, "idle", 60*time.Second, "idle window over which CPU is measured")
	flag.DurationVar(&o.settle, "settle", 30*time.Second, "wait after every node is Ready before the idle window (the first status rounds)")
	flag.DurationVar(&o.spread, "start-spread", 10*time.Second, "the hollow nodes start evenly over this time (minik hollow --start-spread)")
	flag.BoolVar(&o.keep, "keep", false, "keep the temp dir (the components' logs are in it)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "bench-hollow:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	dir, cleanup, err := benchkit.TempDir("minik-bench-hollow-", o.keep)
	if err != nil {
		return err
	}
	defer cleanup()
	cp, h, c, err := benchkit.StartWithHollowNodes(ctx, o.bin, dir, benchkit.ControlPlaneOptions{Controller: true}, o.nodes, o.spread)
	if err != nil {
		return err
	}
	defer cp.Stop()
	defer h.Stop()
	registered := time.Since(h.Started)

	select {
	case <-time.After(o.settle):
	case <-ctx.Done():
		return ctx.Err()
	}
	procs := []*benchkit.Proc{h, cp.Procs["apiserver"], cp.Procs["etcd"], cp.Procs["controller"]}
	cpu0 := map[string]time.Duration{}
	for _, p := range procs {
		cpu0[p.Name] = p.CPU()
	}
	start := time.Now()
	select {
	case <-time.After(o.idle):
	case <-ctx.Done():
		return ctx.Err()
	}
	window := time.Since(start)
	line := map[string]any{"bench": "hollow_nodes", "nodes": o.nodes, "register_s": benchkit.Round(registered.Seconds(), 1),
		"idle_window_s": benchkit.Round(window.Seconds(), 1), "load1": benchkit.LoadAvg()}
	for _, p := range procs {
		line[p.Name+"_idle_cpu_pct"] = benchkit.Round(100*float64(p.CPU()-cpu0[p.Name])/float64(window), 1)
		line[p.Name+"_rss_mb"] = benchkit.Round(p.RSSMB(), 1)
	}
	ready, err := benchkit.ReadyNodes(ctx, c)
	if err != nil {
		return err
	}
	line["ready_nodes"] = ready
	benchkit.Emit(line)
	return nil
}
