package apiserver

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Protection of the server from its clients, with kube-apiserver's
// defaults: a bounded number of requests in flight (read-only and
// mutating apart), a deadline for each request (etcd unreachable: 504
// after it, never a hang) and for reading its body (a client trickling a
// body is cut off). Long-running requests (watches, exec, port-forward,
// following logs) are not counted and have no deadline.
//
// A request that finds every slot of its kind busy waits for one, up to
// a quarter of the request timeout, as kube-apiserver's priority and
// fairness queues a burst instead of refusing it; only then, or when as
// many requests already wait as there are slots, is it refused with 429
// and Retry-After: 1. Refused at once, a burst (a scheduler preempting,
// a controller scaling up) would stall for the second its clients wait
// before they retry, with the server idle meanwhile.
//
// Node heartbeats (a node's Lease, its Node and the Node's status) have
// slots of their own, as priority and fairness gives nodes' requests the
// node-high level: a flood of other requests must not make nodes miss
// their heartbeats, go NotReady and have their pods evicted. Their
// waiting is not bounded in number: a node whose renewals are refused
// for 40s is taken for dead.
//
//	request ─▶ long-running? ──yes──────────────────────────────▶ handler
//	              │no
//	              ▼
//	   body read deadline ─▶ authenticated? ─no─▶ handler (401, or a public page), no slot
//	              │yes
//	              ▼
//	   context deadline (RequestTimeout, or ?timeout= when shorter; the wait below counts)
//	              ▼
//	   in-flight slot (node heartbeat / read-only / mutating): free? ─yes─────────────┐
//	              │no                                                                  │
//	              ▼                                                                    │
//	   fewer waiting than slots? ─yes─▶ wait ≤ RequestTimeout/4 for one ─got one──────┤
//	              │no                     │ none (or the client went away)            ▼
//	              ▼                       ▼                                  handler ─▶ release slot
//	        429 Retry-After: 1 ◀──────────┘
//
//	watch ─▶ user holds MaxWatchesPerUser already? ─yes─▶ 429 Retry-After: 1

// Defaults of the protection settings (kube-apiserver's).
const (
	defaultMaxRequestsInflight         = 400
	defaultMaxMutatingRequestsInflight = 200
	defaultRequestTimeout              = 60 * time.Second
	defaultMaxWatchesPerUser           = 1000
	// About the seats the node-high priority level gets of
	// kube-apiserver's 600 (40 of the default levels' 245 shares).
	nodeHeartbeatsInflight = 100
)

// limiter holds the in-flight slots, the requests waiting for one, and
// the open watches per user.
type limiter struct {
	readOnly, mutating chan struct{}
	nodeHeartbeats     chan struct{}
	// readOnlyWaiting and mutatingWaiting count the requests waiting for
	// a slot of each kind: at most as many as it has slots.
	readOnlyWaiting, mutatingWaiting atomic.Int64
	timeout                          time.Duration
	queueWait                        time.Duration // how long a request waits for a slot

	maxWatches int // per user
	mu         sync.Mutex
	watches    map[string]int // open watches by user name
}

func newLimiter(readOnly, mutating int, timeout time.Duration, maxWatches int) *limiter {
	return &limiter{readOnly: make(chan struct{}, readOnly), mutating: make(chan struct{}, mutating),
		nodeHeartbeats: make(chan struct{}, nodeHeartbeatsInflight), timeout: timeout, queueWait: timeout / 4,
		maxWatches: maxWatches, watches: map[string]int{}}
}

// acquire takes an in-flight slot for r and returns its release. With
// every slot busy it waits for one, up to queueWait or until r's context
// ends, unless as many requests of r's kind wait already as it has slots
// (node heartbeats wait whatever their number); then it returns a 429.
func (l *limiter) acquire(r *http.Request) (release func(), err error) {
	slots, waiting := l.mutating, &l.mutatingWaiting
	switch {
	case nodeHeartbeat(r):
		slots, waiting = l.nodeHeartbeats, nil
	case r.Method == http.MethodGet || r.Method == http.MethodHead:
		slots, waiting = l.readOnly, &l.readOnlyWaiting
	}
	release = func() { <-slots }
	select {
	case slots <- struct{}{}:
		return release, nil
	default:
	}
	tooMany := apierrors.NewTooManyRequests("Too many requests, please try again later.", 1)
	if waiting != nil {
		if waiting.Add(1) > int64(cap(slots)) {
			waiting.Add(-1)
			return nil, tooMany
		}
		defer waiting.Add(-1)
	}
	t := time.NewTimer(l.queueWait)
	defer t.Stop()
	select {
	case slots <- struct{}{}:
		return release, nil
	case <-t.C:
	case <-r.Context().Done():
	}
	return nil, tooMany
}

// openWatch counts a watch against its user, or refuses it with 429 when
// the user already holds maxWatches: watches are long-running, so the
// in-flight slots do not bound them, and each holds a goroutine and a
// buffer. The apiserver's own watches (no user) are not counted.
func (l *limiter) openWatch(u *User) (closeWatch func(), err error) {
	if u == nil {
		return func() {}, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.watches[u.Name] >= l.maxWatches {
		return nil, apierrors.NewTooManyRequests(fmt.Sprintf("too many watches open by user %q (limit %d per user); close some and retry", u.Name, l.maxWatches), 1)
	}
	l.watches[u.Name]++
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.watches[u.Name]--; l.watches[u.Name] == 0 {
			delete(l.watches, u.Name)
		}
	}, nil
}

// longRunning reports the requests that legitimately last: watches, the
// streaming subresources and followed logs.
func longRunning(r *http.Request) bool {
	q := r.URL.Query()
	if w := q.Get("watch"); w == "true" || w == "1" {
		return true
	}
	if q.Get("follow") == "true" && strings.HasSuffix(r.URL.Path, "/log") {
		return true
	}
	for _, sub := range []string{"/exec", "/attach", "/portforward", "/proxy"} {
		if strings.HasSuffix(r.URL.Path, sub) || strings.Contains(r.URL.Path, sub+"/") {
			return true
		}
	}
	return strings.EqualFold(r.Header.Get("Connection"), "upgrade")
}

// nodeHeartbeat reports a read or write of one node's Lease (namespace
// kube-node-lease), of one Node, or of its status: what a kubelet sends
// to stay Ready. (The path decides, before authentication: a client that
// is not a node gets no further than a 401 or 403, holding the slot
// that long.)
func nodeHeartbeat(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodPut, http.MethodPatch:
	default:
		return false
	}
	if name, ok := strings.CutPrefix(r.URL.Path, "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/"); ok {
		return name != "" && !strings.Contains(name, "/")
	}
	if rest, ok := strings.CutPrefix(r.URL.Path, "/api/v1/nodes/"); ok {
		name, sub, _ := strings.Cut(rest, "/")
		return name != "" && (sub == "" || sub == "status")
	}
	return false
}

// protect wraps the router.
func (s *Server) protect(next http.Handler) http.Handler {
	l := s.limiter
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer recoverPanic(w, r)
		switch r.URL.Path {
		case "/healthz", "/livez", "/readyz", "/version":
			next.ServeHTTP(w, r)
			return
		}
		if longRunning(r) {
			next.ServeHTTP(w, r)
			return
		}
		growStack()
		if r.Body != nil && r.Body != http.NoBody {
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(l.timeout))
		}
		// As kube-apiserver authenticates before its in-flight limits: a
		// client that cannot authenticate never holds a slot (the router
		// answers it 401, or serves a public page).
		u := s.authenticateRequest(r)
		if u == nil {
			next.ServeHTTP(w, r)
			return
		}
		timeout, err := requestTimeout(r, l.timeout)
		if err != nil {
			writeError(w, r, err)
			return
		}
		// The deadline runs from here, so that the wait for a slot counts
		// (kube-apiserver's request deadline comes before its queues).
		ctx, cancel := context.WithTimeout(withAuthenticated(r.Context(), u), timeout)
		defer cancel()
		r = r.WithContext(ctx)
		release, err := l.acquire(r)
		if err != nil {
			s.metrics.countRejected(r)
			writeError(w, r, err)
			return
		}
		defer release()
		next.ServeHTTP(w, r)
	})
}

// requestTimeout is the deadline of a request: the client's ?timeout=
// (client-go sends its own timeout there) when it is shorter than the
// server's, as kube-apiserver's request-deadline filter does.
func requestTimeout(r *http.Request, server time.Duration) (time.Duration, error) {
	v := r.URL.Query().Get("timeout")
	if v == "" {
		return server, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("invalid timeout specified in the request URL: %q", v))
	}
	if d == 0 || d > server {
		return server, nil
	}
	return d, nil
}

// recoverPanic answers a request whose handler panicked with a 500
// Status, as kube-apiserver's panic filter does, instead of a dropped
// connection; the stack goes to the log. http.ErrAbortHandler passes.
func recoverPanic(w http.ResponseWriter, r *http.Request) {
	v := recover()
	if v == nil {
		return
	}
	if v == http.ErrAbortHandler {
		panic(v)
	}
	slog.Error("panic serving a request", "method", r.Method, "path", r.URL.Path, "panic", v, "stack", string(debug.Stack()))
	writeError(w, r, apierrors.NewInternalError(fmt.Errorf("the server panicked: %v", v)))
}
