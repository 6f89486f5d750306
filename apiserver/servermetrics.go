package apiserver

import (
	"bufio"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"minik/apiserver/registry"
	"minik/apiserver/storage"
	"minik/internal/metrics"
)

// Metrics of the apiserver, with kube-apiserver's names and labels, in a
// registry of the Server served at /metrics (authorized as a non-resource
// URL: cluster-admin and the group system:monitoring may get it).
//
//	request ─▶ measure (code, duration) ─▶ authenticate ─▶ serveResource (sets verb, resource, scope)
//	           a watch, log or CONNECT while it lasts ─▶ apiserver_longrunning_requests
//	watch event written ─▶ apiserver_watch_events_total
//	storage op ─▶ etcd_request_duration_seconds (storage/metrics.go)
//	in-flight slots ─▶ apiserver_current_inflight_requests (read when scraped)
//	requests waiting for one ─▶ apiserver_current_inqueue_requests (read when scraped)
//	refused for want of one (429) ─▶ apiserver_request_total, verb only (protect.go)
type serverMetrics struct {
	registry    *prometheus.Registry
	requests    *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	watchEvents *prometheus.CounterVec
	longRunning *prometheus.GaugeVec
}

// watchCounter is the apiserver_watch_events_total series of a resource
// (built-in, or a custom one when its CRD is served).
func (m *serverMetrics) watchCounter(res *registry.Resource) prometheus.Counter {
	return m.watchEvents.WithLabelValues(res.Group, res.Version, res.Resource)
}

func newServerMetrics(s *Server) *serverMetrics {
	m := &serverMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_request_total",
			Help: "Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.",
		}, []string{"verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_request_duration_seconds",
			Help:    "Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.",
			Buckets: metrics.RequestBuckets,
		}, []string{"verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component"}),
	}
	m.longRunning = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "apiserver_longrunning_requests",
		Help: "Gauge of all active long-running apiserver requests broken out by verb, group, version, resource, scope and component. Not all requests are tracked this way.",
	}, []string{"verb", "group", "version", "resource", "subresource", "scope", "component"})
	m.watchEvents = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "apiserver_watch_events_total",
		Help: "Number of events sent in watch clients",
	}, []string{"group", "version", "resource"})
	for _, h := range s.handlers {
		h.watchEvents = m.watchCounter(h.res)
	}
	inflight := func(kind string, slots chan struct{}) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "apiserver_current_inflight_requests",
			Help:        "Maximal number of currently used inflight request limit of this apiserver per request kind in last second.",
			ConstLabels: prometheus.Labels{"request_kind": kind},
		}, func() float64 { return float64(len(slots)) })
	}
	inqueue := func(kind string, waiting *atomic.Int64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "apiserver_current_inqueue_requests",
			Help:        "Maximal number of queued requests in this apiserver per request kind in last second.",
			ConstLabels: prometheus.Labels{"request_kind": kind},
		}, func() float64 { return float64(waiting.Load()) })
	}
	cs := append([]prometheus.Collector{m.requests, m.duration, m.watchEvents, m.longRunning,
		inflight("readOnly", s.limiter.readOnly), inflight("mutating", s.limiter.mutating),
		inqueue("readOnly", &s.limiter.readOnlyWaiting), inqueue("mutating", &s.limiter.mutatingWaiting)}, storage.Collectors()...)
	m.registry = metrics.NewRegistry(cs...)
	return m
}

// Registry returns the server's metrics registry.
func (s *Server) Registry() *prometheus.Registry { return s.metrics.registry }

// servePrometheus answers /metrics (Prometheus text).
func (s *Server) servePrometheus(w http.ResponseWriter, r *http.Request) {
	metrics.Handler(s.Gatherer()).ServeHTTP(w, r)
}

// Gatherer returns what /metrics serves: the registry, and
// Config.ExtraMetrics when set.
func (s *Server) Gatherer() prometheus.Gatherer {
	if s.cfg.ExtraMetrics == nil {
		return s.metrics.registry
	}
	return prometheus.Gatherers{s.metrics.registry, s.cfg.ExtraMetrics}
}

// measure records every authenticated-path request: its code and
// duration, labelled with what serveResource learnt of it (non-resource
// requests keep empty resource labels, as upstream's).
func (s *Server) measure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, verb: r.Method, longRunning: s.metrics.longRunning}
		var out http.ResponseWriter = rec
		if _, ok := w.(http.Hijacker); ok {
			out = hijackRecorder{rec} // HTTP/1.1: exec and port-forward take the connection
		}
		next.ServeHTTP(out, r)
		if rec.open != nil {
			rec.open.Dec()
		}
		dryRun := ""
		if rec.dryRun {
			dryRun = "All"
		}
		code := rec.code
		if code == 0 {
			code = http.StatusOK
		}
		s.metrics.requests.WithLabelValues(rec.verb, dryRun, rec.group, rec.version, rec.resource, rec.subresource, rec.scope, "apiserver", codeString(code)).Inc()
		s.metrics.duration.WithLabelValues(rec.verb, dryRun, rec.group, rec.version, rec.resource, rec.subresource, rec.scope, "apiserver").Observe(time.Since(start).Seconds())
	})
}

// noteRequest labels the measured request with its resource; called by
// serveResource once the path is parsed.
func noteRequest(w http.ResponseWriter, r *http.Request, ri *requestInfo) {
	r2, ok := w.(interface{ recorder() *statusRecorder })
	if !ok {
		return
	}
	rec := r2.recorder()
	res := ri.handler.res
	rec.group, rec.version, rec.resource, rec.subresource = res.Group, res.Version, res.Resource, ri.subresource
	rec.verb = upstreamVerb(r, ri)
	switch {
	case ri.name != "":
		rec.scope = "resource"
	case ri.namespace != "":
		rec.scope = "namespace"
	default:
		rec.scope = "cluster"
	}
	_, rec.dryRun = r.URL.Query()["dryRun"]
	// The requests kube-apiserver counts as long-running: watches, logs
	// and the streaming subresources.
	if rec.open == nil && (rec.verb == "WATCH" || rec.verb == "CONNECT" || rec.subresource == "log") {
		rec.open = rec.longRunning.WithLabelValues(rec.verb, rec.group, rec.version, rec.resource, rec.subresource, rec.scope, "apiserver")
		rec.open.Inc()
	}
}

// countRejected counts in apiserver_request_total a request the in-flight
// limits refused with 429, as kube-apiserver counts the requests its
// limits drop. It was never routed: only its HTTP verb is known.
func (m *serverMetrics) countRejected(r *http.Request) {
	m.requests.WithLabelValues(r.Method, "", "", "", "", "", "", "apiserver", codeString(http.StatusTooManyRequests)).Inc()
}

// upstreamVerb is the verb label kube-apiserver reports: the HTTP verb,
// with LIST and WATCH told apart, APPLY for server-side apply and CONNECT
// for the streaming subresources.
func upstreamVerb(r *http.Request, ri *requestInfo) string {
	switch ri.subresource {
	case "exec", "attach", "portforward", "proxy":
		return "CONNECT"
	}
	switch ri.verb {
	case "list":
		return "LIST"
	case "watch":
		return "WATCH"
	case "deletecollection":
		return "DELETECOLLECTION"
	case "patch":
		if r.Header.Get("Content-Type") == "application/apply-patch+yaml" {
			return "APPLY"
		}
	}
	return r.Method
}

// codes holds the label of each HTTP status, so a request allocates none.
var codes = func() (c [600]string) {
	for i := range c {
		c[i] = strconv.Itoa(i)
	}
	return c
}()

func codeString(code int) string {
	if code >= 0 && code < len(codes) {
		return codes[code]
	}
	return strconv.Itoa(code)
}

// statusRecorder notes the response code and the labels of a request. It
// keeps the writer's Flush (watches) and unwraps for
// http.ResponseController.
type statusRecorder struct {
	http.ResponseWriter
	code                                               int
	verb, group, version, resource, subresource, scope string
	dryRun                                             bool
	// longRunning is the gauge vector; open, the series this request
	// holds up while it lasts (watch, log, CONNECT), if any.
	longRunning *prometheus.GaugeVec
	open        prometheus.Gauge
}

func (w *statusRecorder) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusRecorder) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusRecorder) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusRecorder) recorder() *statusRecorder { return w }

// hijackRecorder is a statusRecorder whose writer can be hijacked: only
// then does it offer Hijack, so handlers still learn when it cannot.
type hijackRecorder struct{ *statusRecorder }

func (w hijackRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, buf, err := w.ResponseWriter.(http.Hijacker).Hijack()
	if err == nil && w.code == 0 {
		w.code = http.StatusSwitchingProtocols
	}
	return conn, buf, err
}

func (w *statusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }
