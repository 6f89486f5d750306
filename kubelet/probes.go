package kubelet

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"minik/kubelet/runtime"
	"minik/proto/cri"
)

type probeKind string

const (
	liveness  probeKind = "Liveness"
	readiness probeKind = "Readiness"
	startup   probeKind = "Startup"
)

// prober runs one goroutine per probe of each running container and
// feeds the results into the pod worker's state.
type prober struct {
	k       *Kubelet
	mu      sync.Mutex
	running map[string]context.CancelFunc // "containerID/kind"
	byPod   map[types.UID]map[string]bool // keys per pod
}

func newProber(k *Kubelet) *prober {
	return &prober{k: k, running: map[string]context.CancelFunc{}, byPod: map[types.UID]map[string]bool{}}
}

// sync starts probers for the pod's current running containers and stops
// those of containers that are gone.
func (p *prober) sync(w *podWorker, pod *corev1.Pod, obs *runtime.Pod) {
	want := map[string]func(ctx context.Context){}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		cur, _ := obs.Latest(c.Name)
		if cur == nil || cur.State != cri.ContainerState_CONTAINER_RUNNING {
			continue
		}
		for kind, probe := range map[probeKind]*corev1.Probe{liveness: c.LivenessProbe, readiness: c.ReadinessProbe, startup: c.StartupProbe} {
			if probe == nil {
				continue
			}
			id, kind, probe := cur.Id, kind, probe
			want[id+"/"+string(kind)] = func(ctx context.Context) { p.run(ctx, w, pod, c, id, kind, probe) }
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	keys := p.byPod[pod.UID]
	if keys == nil {
		keys = map[string]bool{}
		p.byPod[pod.UID] = keys
	}
	for key := range keys {
		if _, ok := want[key]; !ok {
			p.running[key]()
			delete(p.running, key)
			delete(keys, key)
		}
	}
	for key, fn := range want {
		if keys[key] {
			continue
		}
		ctx, cancel := context.WithCancel(context.Background())
		p.running[key] = cancel
		keys[key] = true
		go fn(ctx)
	}
}

func (p *prober) removePod(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for key := range p.byPod[uid] {
		p.running[key]()
		delete(p.running, key)
	}
	delete(p.byPod, uid)
}

func secondsOr(v, def int32) time.Duration {
	if v <= 0 {
		v = def
	}
	return time.Duration(v) * time.Second
}

// run probes one container periodically and applies the thresholds.
func (p *prober) run(ctx context.Context, w *podWorker, pod *corev1.Pod, c *corev1.Container, id string, kind probeKind, probe *corev1.Probe) {
	clock := p.k.cfg.Clock
	period := secondsOr(probe.PeriodSeconds, 10)
	timeout := secondsOr(probe.TimeoutSeconds, 1)
	success := max(probe.SuccessThreshold, 1)
	failure := probe.FailureThreshold
	if failure <= 0 {
		failure = 3
	}
	select {
	case <-ctx.Done():
		return
	case <-clock.After(time.Duration(probe.InitialDelaySeconds) * time.Second):
	}
	var okRun, failRun int32
	for {
		// Liveness and readiness wait for the startup probe.
		w.mu.Lock()
		started := c.StartupProbe == nil || w.state.started[id]
		w.mu.Unlock()
		host, known := probeHost(probe, p.podIP(w, pod))
		wait := period
		if !known {
			// No address to probe yet: no result either way; look again soon.
			wait = min(period, time.Second)
		} else if kind == startup || started {
			ok, msg := p.probe(ctx, pod, c, id, host, probe, timeout)
			if ctx.Err() != nil {
				return
			}
			if ok {
				okRun, failRun = okRun+1, 0
			} else {
				okRun, failRun = 0, failRun+1
				w.event(pod, corev1.EventTypeWarning, "Unhealthy", "%s probe failed: %s", kind, msg)
			}
			if p.apply(w, c, id, kind, okRun, failRun, success, failure) {
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-clock.After(wait):
		}
	}
}

// podIP is the pod's IP as last reported, "" before it has one.
func (p *prober) podIP(w *podWorker, pod *corev1.Pod) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.lastStatus != nil && w.lastStatus.PodIP != "" {
		return w.lastStatus.PodIP
	}
	return pod.Status.PodIP
}

// probeHost is the host an httpGet or tcpSocket probe connects to: its
// own host, else the pod's IP. known is false when the probe needs the
// pod's IP and the pod has none yet (Kubernetes probes only a pod with
// an IP).
func probeHost(probe *corev1.Probe, podIP string) (host string, known bool) {
	switch {
	case probe.HTTPGet != nil && probe.HTTPGet.Host != "":
		return probe.HTTPGet.Host, true
	case probe.TCPSocket != nil && probe.TCPSocket.Host != "":
		return probe.TCPSocket.Host, true
	case probe.HTTPGet != nil || probe.TCPSocket != nil:
		return podIP, podIP != ""
	}
	return "", true // an exec probe needs no address
}

// apply records a probe's result; it returns true when the probe is done.
func (p *prober) apply(w *podWorker, c *corev1.Container, id string, kind probeKind, okRun, failRun, success, failure int32) bool {
	w.mu.Lock()
	changed, done := false, false
	switch kind {
	case readiness:
		if okRun >= success && !w.state.ready[id] {
			w.state.ready[id], changed = true, true
		}
		if failRun >= failure && w.state.ready[id] {
			w.state.ready[id], changed = false, true
		}
	case startup:
		if okRun >= 1 {
			w.state.started[id], changed, done = true, true, true
		} else if failRun >= failure {
			w.state.unhealthy[id] = fmt.Sprintf("Container %s failed startup probe, will be restarted", c.Name)
			changed, done = true, true
		}
	case liveness:
		if failRun >= failure {
			w.state.unhealthy[id] = fmt.Sprintf("Container %s failed liveness probe, will be restarted", c.Name)
			changed, done = true, true
		}
	}
	w.mu.Unlock()
	if changed {
		w.wake()
	}
	return done
}

// probe runs one exec, httpGet or tcpSocket check against host.
func (p *prober) probe(ctx context.Context, pod *corev1.Pod, c *corev1.Container, id, host string, probe *corev1.Probe, timeout time.Duration) (bool, string) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch {
	case probe.Exec != nil:
		resp, err := p.k.rt.ExecSync(ctx, id, probe.Exec.Command, int64(timeout/time.Second))
		if err != nil {
			return false, err.Error()
		}
		if resp.ExitCode != 0 {
			out := strings.TrimSpace(string(resp.Stdout) + string(resp.Stderr))
			return false, fmt.Sprintf("command %q exited with %d: %s", strings.Join(probe.Exec.Command, " "), resp.ExitCode, out)
		}
		return true, ""
	case probe.HTTPGet != nil:
		g := probe.HTTPGet
		port, err := resolvePort(g.Port, c)
		if err != nil {
			return false, err.Error()
		}
		scheme := strings.ToLower(string(g.Scheme))
		if scheme == "" {
			scheme = "http"
		}
		url := fmt.Sprintf("%s://%s%s", scheme, net.JoinHostPort(host, strconv.Itoa(port)), ensureSlash(g.Path))
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err.Error()
		}
		for _, h := range g.HTTPHeaders {
			req.Header.Add(h.Name, h.Value)
		}
		resp, err := probeHTTPClient.Do(req)
		if err != nil {
			return false, fmt.Sprintf("Get %q: %v", url, err)
		}
		resp.Body.Close()
		if resp.StatusCode < 200 || resp.StatusCode >= 400 {
			return false, fmt.Sprintf("HTTP probe failed with statuscode: %d", resp.StatusCode)
		}
		return true, ""
	case probe.TCPSocket != nil:
		port, err := resolvePort(probe.TCPSocket.Port, c)
		if err != nil {
			return false, err.Error()
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			return false, fmt.Sprintf("dial tcp %s: %v", net.JoinHostPort(host, strconv.Itoa(port)), err)
		}
		conn.Close()
		return true, ""
	}
	return false, "probe has no handler"
}

var probeHTTPClient = &http.Client{
	Transport:     &http.Transport{DisableKeepAlives: true},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

func ensureSlash(p string) string {
	if !strings.HasPrefix(p, "/") {
		return "/" + p
	}
	return p
}

// resolvePort turns a number or a named container port into a number.
func resolvePort(p intstr.IntOrString, c *corev1.Container) (int, error) {
	if p.Type == intstr.Int {
		return p.IntValue(), nil
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	if n, err := strconv.Atoi(p.StrVal); err == nil {
		return n, nil
	}
	return 0, fmt.Errorf("no port named %q in container %s", p.StrVal, c.Name)
}
