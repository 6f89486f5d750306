package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// runConfig is how the driver runs a batch: the programs, and the cluster
// it starts for it.
type runConfig struct {
	minik, e2e, ginkgo, kubectl string
	dataDir                     string   // the cluster's `minik up --data-dir`, reset before and after
	listen                      string   // apiserver address, e.g. 0.0.0.0:16443
	dnsListen                   string   // cluster DNS address, e.g. 10.0.0.5:10053
	nodes                       []string // one kubelet each
	images                      string   // the image archive preloaded into every node
	procs                       int      // ginkgo parallel processes
	resultsDir                  string   // results/<batch>/ of each batch
}

// RunBatch lists the batch's specs, starts a fresh cluster, runs the
// specs with ginkgo within the batch's limit, removes the cluster and
// records the run in results/<batch>/batch.json.
func RunBatch(ctx context.Context, cfg runConfig, b *Batch) error {
	dir := filepath.Join(cfg.resultsDir, b.Name)
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	run := BatchRun{Batch: b.Name, Start: time.Now()}
	err := runBatch(ctx, cfg, b, dir, &run)
	if err != nil {
		run.Error = err.Error()
	}
	run.Seconds = time.Since(run.Start).Seconds()
	data, _ := json.MarshalIndent(run, "", "  ")
	if werr := os.WriteFile(filepath.Join(dir, "batch.json"), data, 0o644); werr != nil {
		return werr
	}
	return err
}

func runBatch(ctx context.Context, cfg runConfig, b *Batch, dir string, run *BatchRun) error {
	specs, err := listSpecs(ctx, cfg.e2e, b)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "specs.txt"), []byte(strings.Join(specs, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	fmt.Printf("batch %s: %d specs, limit %s\n", b.Name, len(specs), b.Limit)
	stop, err := startCluster(ctx, cfg, dir)
	defer stop()
	if err != nil {
		return err
	}
	kubeconfig := filepath.Join(cfg.dataDir, "admin.kubeconfig")
	args := []string{
		"--procs", fmt.Sprint(cfg.procs), "--timeout", b.Limit.String(), "--no-color",
		"--focus", b.Focus(),
	}
	if skip := b.Skip(); skip != "" {
		args = append(args, "--skip", skip)
	}
	args = append(args, cfg.e2e, "--",
		"--kubeconfig="+kubeconfig, "--provider=skeleton", "--report-dir="+dir,
		"--kubectl-path="+cfg.kubectl, "--disable-log-dump", "--dump-logs-on-failure=false")
	log, err := os.Create(filepath.Join(dir, "e2e.log"))
	if err != nil {
		return err
	}
	defer log.Close()
	// The suite stops itself at the limit; the context is the backstop.
	runCtx, cancel := context.WithTimeout(ctx, b.Limit+5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(runCtx, cfg.ginkgo, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	start := time.Now()
	err = cmd.Run()
	run.LimitHit = time.Since(start) >= b.Limit
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return fmt.Errorf("ginkgo: %w", err)
	}
	// A non-zero exit is failed specs: the JUnit file says which.
	return nil
}

// listSpecs returns the names of the batch's specs, from the suite's own
// list (`e2e.test --list-tests`).
func listSpecs(ctx context.Context, e2e string, b *Batch) ([]string, error) {
	out, err := exec.CommandContext(ctx, e2e, "--list-tests").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%s --list-tests: %w", e2e, err)
	}
	var specs []string
	for _, name := range parseSpecList(string(out)) {
		if b.Area(name) != "" {
			specs = append(specs, name)
		}
	}
	if len(specs) == 0 {
		return nil, fmt.Errorf("the suite has no [Conformance] spec in batch %s's areas", b.Name)
	}
	return specs, nil
}

// specLine is a line of `e2e.test --list-tests`: "    FILE:LINE: NAME".
var specLine = regexp.MustCompile(`^\s+\S+:\d+: (.+)$`)

func parseSpecList(out string) []string {
	var names []string
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if m := specLine.FindStringSubmatch(sc.Text()); m != nil {
			names = append(names, strings.TrimSpace(m[1]))
		}
	}
	return names
}

// startCluster resets the host, starts `minik up` and waits for its nodes
// to be Ready. stop deletes the pods the specs left, stops the cluster
// and resets the host again.
func startCluster(ctx context.Context, cfg runConfig, dir string) (stop func(), err error) {
	if err := reset(ctx, cfg); err != nil {
		return func() {}, err
	}
	log, err := os.Create(filepath.Join(dir, "minik.log"))
	if err != nil {
		return func() {}, err
	}
	up := exec.Command(cfg.minik, "up", "--data-dir", cfg.dataDir, "--listen", cfg.listen,
		"--nodes", strings.Join(cfg.nodes, ","), "--dns-listen", cfg.dnsListen,
		"--preload-images", cfg.images)
	up.Stdout, up.Stderr = log, log
	up.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := up.Start(); err != nil {
		log.Close()
		return func() {}, err
	}
	exited := make(chan error, 1)
	go func() { exited <- up.Wait() }()
	stop = func() {
		kubectl := func(args ...string) {
			c := exec.Command(cfg.kubectl, append([]string{"--kubeconfig", filepath.Join(cfg.dataDir, "admin.kubeconfig")}, args...)...)
			c.Stdout, c.Stderr = log, log
			_ = c.Run()
		}
		// The specs' namespaces first (their controllers would recreate
		// pods), then any pod left anywhere.
		kubectl("delete", "namespace", "-l", "e2e-run", "--wait=true", "--timeout=180s")
		kubectl("delete", "pods", "--all", "--all-namespaces", "--grace-period=0", "--force", "--wait=true", "--timeout=60s")
		_ = up.Process.Signal(syscall.SIGINT)
		select {
		case <-exited:
		case <-time.After(60 * time.Second):
			_ = syscall.Kill(-up.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		log.Close()
		if err := reset(context.Background(), cfg); err != nil {
			fmt.Fprintln(os.Stderr, "reset:", err)
		}
	}
	if err := waitReady(ctx, cfg, exited); err != nil {
		return stop, fmt.Errorf("%w (see %s)", err, log.Name())
	}
	return stop, nil
}

// waitReady waits up to 3 minutes for every node to be Ready.
func waitReady(ctx context.Context, cfg runConfig, exited <-chan error) error {
	kubeconfig := filepath.Join(cfg.dataDir, "admin.kubeconfig")
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return fmt.Errorf("minik up exited: %v", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
		out, err := exec.CommandContext(ctx, cfg.kubectl, "--kubeconfig", kubeconfig, "get", "nodes", "-o",
			`jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}`).Output()
		if err == nil && strings.Count(string(out), "True") == len(cfg.nodes) {
			return nil
		}
	}
	return errors.New("the nodes were not Ready within 3 minutes")
}

func reset(ctx context.Context, cfg runConfig) error {
	out, err := exec.CommandContext(ctx, cfg.minik, "reset", "--data-dir", cfg.dataDir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("minik reset: %w: %s", err, out)
	}
	return nil
}
