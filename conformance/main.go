// Command conformance is the driver of `make conformance` (run.sh builds
// the upstream programs and calls it): it builds the test images, runs
// each batch of scope.txt against a fresh minik cluster, and writes
// REPORT.md and junit.xml from the suite's results.
//
//	conformance images  -o FILE.tar --e2e E2E --agnhost BIN --kube-src DIR
//	conformance batches [--scope FILE]
//	conformance run     --batch NAME [flags]
//	conformance report  [--results DIR] [-o REPORT.md] [--junit junit.xml]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"minik/deploy/images"
	"minik/internal/hostip"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: conformance images|batches|run|report [flags]")
		os.Exit(2)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	var err error
	switch os.Args[1] {
	case "images":
		err = imagesCommand(ctx, os.Args[2:])
	case "batches":
		err = batchesCommand(os.Args[2:])
	case "run":
		err = runCommand(ctx, os.Args[2:])
	case "report":
		err = reportCommand(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q: images, batches, run or report", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		os.Exit(1)
	}
}

func loadScope(path string) (*Scope, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseScope(f)
}

func imagesCommand(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("images", flag.ExitOnError)
	out := fs.String("o", "bin/conformance/images.tar", "the image archive to write")
	e2e := fs.String("e2e", "bin/conformance/e2e.test", "the e2e suite, whose --list-images names the images")
	l := &layerSet{}
	fs.StringVar(&l.agnhostBin, "agnhost", "bin/conformance/agnhost", "agnhost, built static")
	fs.StringVar(&l.kubeSrc, "kube-src", "", "source of the k8s.io/kubernetes module (go list -m -f {{.Dir}})")
	fs.StringVar(&l.busyboxDeb, "busybox", images.DefaultBusyboxPath, "Debian's busybox .deb")
	fs.StringVar(&l.shBin, "sh", "bin/conformance/sh", "the images' /bin/sh (conformance/sh, built static)")
	_ = fs.Parse(args)
	list, err := exec.CommandContext(ctx, *e2e, "--list-images").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s --list-images: %w", *e2e, err)
	}
	if err := BuildTestImages(*out, string(list), l); err != nil {
		return err
	}
	fmt.Println("wrote", *out)
	return nil
}

func batchesCommand(args []string) error {
	fs := flag.NewFlagSet("batches", flag.ExitOnError)
	scope := fs.String("scope", "conformance/scope.txt", "the areas in scope")
	_ = fs.Parse(args)
	s, err := loadScope(*scope)
	if err != nil {
		return err
	}
	for _, b := range s.Batches {
		fmt.Println(b.Name)
	}
	return nil
}

func runCommand(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	scope := fs.String("scope", "conformance/scope.txt", "the areas in scope")
	batch := fs.String("batch", "", "the batch to run")
	imagesFile := fs.String("images", "bin/conformance/images.tar", "the image archive to preload into every node")
	nodes := fs.String("nodes", "conformance-a,conformance-b", "the cluster's nodes")
	dnsPort := fs.Int("dns-port", 10053, "port of the cluster DNS, on the host's primary address")
	cfg := runConfig{}
	fs.StringVar(&cfg.minik, "minik", "bin/minik", "the minik binary")
	fs.StringVar(&cfg.e2e, "e2e", "bin/conformance/e2e.test", "the e2e suite")
	fs.StringVar(&cfg.ginkgo, "ginkgo", "bin/conformance/ginkgo", "the ginkgo CLI (parallel runs)")
	fs.StringVar(&cfg.kubectl, "kubectl", "bin/conformance/kubectl", "the kubectl the suite runs (the suite's version)")
	fs.StringVar(&cfg.dataDir, "data-dir", "bin/conformance/cluster", "the cluster's data dir (reset before and after)")
	fs.StringVar(&cfg.listen, "listen", "0.0.0.0:16443", "the apiserver's address")
	fs.IntVar(&cfg.procs, "procs", 4, "specs run in parallel (ginkgo --procs)")
	fs.StringVar(&cfg.resultsDir, "results", "bin/conformance/results", "directory of each batch's results")
	_ = fs.Parse(args)
	s, err := loadScope(*scope)
	if err != nil {
		return err
	}
	b := s.Batch(*batch)
	if b == nil {
		return fmt.Errorf("no batch %q in %s", *batch, *scope)
	}
	cfg.nodes = strings.Split(*nodes, ",")
	cfg.dnsListen = fmt.Sprintf("%s:%d", hostip.PrimaryIPv4(), *dnsPort)
	cfg.images = *imagesFile
	for _, p := range []*string{&cfg.images, &cfg.minik, &cfg.e2e, &cfg.ginkgo, &cfg.kubectl, &cfg.dataDir, &cfg.resultsDir} {
		if *p, err = filepath.Abs(*p); err != nil {
			return err
		}
	}
	return RunBatch(ctx, cfg, b)
}

func reportCommand(args []string) error {
	fs := flag.NewFlagSet("report", flag.ExitOnError)
	scope := fs.String("scope", "conformance/scope.txt", "the areas in scope")
	results := fs.String("results", "bin/conformance/results", "directory of each batch's results")
	out := fs.String("o", "conformance/REPORT.md", "the report")
	junit := fs.String("junit", "conformance/junit.xml", "the in-scope specs as JUnit")
	suite := fs.String("suite", "", "the suite's module and version, e.g. k8s.io/kubernetes v1.37.2")
	cluster := fs.String("cluster", "a 2-node `minik up` with real containers", "the cluster, in words")
	_ = fs.Parse(args)
	s, err := loadScope(*scope)
	if err != nil {
		return err
	}
	var all []SpecResult
	var runs []BatchRun
	for _, b := range s.Batches {
		res, run, err := BatchResults(b, filepath.Join(*results, b.Name))
		if err != nil {
			fmt.Fprintln(os.Stderr, "conformance:", err)
			continue
		}
		all, runs = append(all, res...), append(runs, run)
	}
	h := ReportHeader{Suite: *suite, Cluster: *cluster, Date: time.Now()}
	if err := writeFile(*out, func(f *os.File) error { return WriteMarkdown(f, s, h, runs, all) }); err != nil {
		return err
	}
	if err := writeFile(*junit, func(f *os.File) error { return WriteJUnit(f, s, all) }); err != nil {
		return err
	}
	for _, c := range count(s, all) {
		fmt.Printf("%-75s passed %3d  failed %3d  not run %3d  out of scope %3d  total %3d\n", c.Area, c.Passed, c.Failed, c.NotRun, c.OutOfScope, c.Total)
	}
	return nil
}

func writeFile(path string, write func(*os.File) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
