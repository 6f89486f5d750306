// Package prober runs the liveness, readiness and startup probes of a
// node's running containers and reports each change of their verdict as
// a Result. It keeps no pod state beyond its own counters: what a result
// means for the pod is its worker's decision. See README.md.
package prober

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
	"k8s.io/utils/clock"

	"minik/kubelet/runtime"
	"minik/proto/cri"
)

// Kind is a probe's kind, as Kubernetes names it in events.
type Kind string

// The three kinds of probe.
const (
	Liveness  Kind = "Liveness"
	Readiness Kind = "Readiness"
	Startup   Kind = "Startup"
)

// Result is a change of one probe's verdict on one container.
type Result struct {
	PodUID      types.UID
	ContainerID string
	Kind        Kind
	// Success: ready (Readiness), started (Startup). A failed Liveness or
	// Startup probe is never a success: the container must be restarted,
	// and Message says so in the kubelet's words.
	Success bool
	Message string
}

// Execer runs a command in a container (an exec probe).
type Execer interface {
	ExecSync(ctx context.Context, containerID string, cmd []string, timeoutSeconds int64) (*cri.ExecSyncResponse, error)
}

// Config is what the prober needs from the kubelet.
type Config struct {
	Runtime Execer
	Clock   clock.Clock
	// Results receives every change of a verdict, from the probes'
	// goroutines.
	Results func(Result)
	// PodIP is the pod's IP as last reported, "" before it has one.
	PodIP func(uid types.UID) string
	// Event records an event on the pod ("Unhealthy").
	Event func(pod *corev1.Pod, eventType, reason, message string)
}

// Manager runs one goroutine per probe of each running container.
type Manager struct {
	cfg     Config
	mu      sync.Mutex
	running map[string]context.CancelFunc // "containerID/kind"
	byPod   map[types.UID]map[string]bool // keys per pod
	// started holds the containers whose startup probe succeeded:
	// liveness and readiness wait for it.
	started map[string]bool
}

// New returns a Manager that probes nothing until Sync.
func New(cfg Config) *Manager {
	return &Manager{cfg: cfg, running: map[string]context.CancelFunc{}, byPod: map[types.UID]map[string]bool{},
		started: map[string]bool{}}
}

// Sync starts the probes of the pod's running containers and stops
// those of containers that are gone.
func (m *Manager) Sync(pod *corev1.Pod, obs *runtime.Pod) {
	want := map[string]func(ctx context.Context){}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		cur, _ := obs.Latest(c.Name)
		if cur == nil || cur.State != cri.ContainerState_CONTAINER_RUNNING {
			continue
		}
		for kind, probe := range map[Kind]*corev1.Probe{Liveness: c.LivenessProbe, Readiness: c.ReadinessProbe, Startup: c.StartupProbe} {
			if probe == nil {
				continue
			}
			id, kind, probe := cur.Id, kind, probe
			want[id+"/"+string(kind)] = func(ctx context.Context) { m.run(ctx, pod, c, id, kind, probe) }
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	keys := m.byPod[pod.UID]
	if keys == nil {
		keys = map[string]bool{}
		m.byPod[pod.UID] = keys
	}
	for key := range keys {
		if _, ok := want[key]; !ok {
			m.stopLocked(key)
			delete(keys, key)
		}
	}
	for key, fn := range want {
		if keys[key] {
			continue
		}
		ctx, cancel := context.WithCancel(context.Background())
		m.running[key] = cancel
		keys[key] = true
		go fn(ctx)
	}
}

// RemovePod stops every probe of the pod.
func (m *Manager) RemovePod(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for key := range m.byPod[uid] {
		m.stopLocked(key)
	}
	delete(m.byPod, uid)
}

func (m *Manager) stopLocked(key string) {
	m.running[key]()
	delete(m.running, key)
	id, _, _ := strings.Cut(key, "/")
	delete(m.started, id)
}

func (m *Manager) isStarted(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.started[id]
}

func secondsOr(v, def int32) time.Duration {
	if v <= 0 {
		v = def
	}
	return time.Duration(v) * time.Second
}

// run probes one container periodically and applies the thresholds.
func (m *Manager) run(ctx context.Context, pod *corev1.Pod, c *corev1.Container, id string, kind Kind, probe *corev1.Probe) {
	clock := m.cfg.Clock
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
	t := thresholds{kind: kind, container: c.Name, success: success, failure: failure}
	for {
		// Liveness and readiness wait for the startup probe.
		started := c.StartupProbe == nil || m.isStarted(id)
		host, known := probeHost(probe, m.cfg.PodIP(pod.UID))
		wait := period
		if !known {
			// No address to probe yet: no result either way; look again soon.
			wait = min(period, time.Second)
		} else if kind == Startup || started {
			ok, msg := m.probe(ctx, c, id, host, probe, timeout)
			if ctx.Err() != nil {
				return
			}
			if !ok {
				m.cfg.Event(pod, corev1.EventTypeWarning, "Unhealthy", fmt.Sprintf("%s probe failed: %s", kind, msg))
			}
			r, changed, done := t.observe(ok)
			if changed {
				if kind == Startup && r.Success {
					m.mu.Lock()
					m.started[id] = true
					m.mu.Unlock()
				}
				r.PodUID, r.ContainerID = pod.UID, id
				m.cfg.Results(r)
			}
			if done {
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

// thresholds turns a probe's outcomes into verdicts: successThreshold
// successes in a row make a container ready, failureThreshold failures
// unready, or unhealthy (liveness, startup); a startup probe stops at its
// first verdict, a liveness probe at its failure.
type thresholds struct {
	kind             Kind
	container        string
	success, failure int32
	okRun, failRun   int32
	ready            bool // the last readiness verdict
}

// observe counts one outcome; it returns the verdict when it changed,
// and whether the probe is done.
func (t *thresholds) observe(ok bool) (verdict Result, changed, done bool) {
	if ok {
		t.okRun, t.failRun = t.okRun+1, 0
	} else {
		t.okRun, t.failRun = 0, t.failRun+1
	}
	switch t.kind {
	case Readiness:
		if t.okRun >= t.success && !t.ready {
			t.ready = true
			return Result{Kind: t.kind, Success: true}, true, false
		}
		if t.failRun >= t.failure && t.ready {
			t.ready = false
			return Result{Kind: t.kind}, true, false
		}
	case Startup:
		if t.okRun >= 1 {
			return Result{Kind: t.kind, Success: true}, true, true
		}
		if t.failRun >= t.failure {
			return Result{Kind: t.kind, Message: fmt.Sprintf("Container %s failed startup probe, will be restarted", t.container)}, true, true
		}
	case Liveness:
		if t.failRun >= t.failure {
			return Result{Kind: t.kind, Message: fmt.Sprintf("Container %s failed liveness probe, will be restarted", t.container)}, true, true
		}
	}
	return Result{}, false, false
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

// probe runs one exec, httpGet or tcpSocket check against host.
func (m *Manager) probe(ctx context.Context, c *corev1.Container, id, host string, probe *corev1.Probe, timeout time.Duration) (bool, string) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch {
	case probe.Exec != nil:
		resp, err := m.cfg.Runtime.ExecSync(ctx, id, probe.Exec.Command, int64(timeout/time.Second))
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
