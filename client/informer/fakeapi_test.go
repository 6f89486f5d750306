package informer

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	testingclock "k8s.io/utils/clock/testing"

	"minik/client"
)

// fakeAPI plays the apiserver for /api/v1/pods over HTTP/2 and TLS. Each
// list request takes the next page from lists, and each watch request the
// next script from watches; a request with nothing to take waits, so the
// test decides what the informer sees and when.
type fakeAPI struct {
	lists     chan listPage
	watches   chan watchScript
	listReqs  chan url.Values
	watchReqs chan url.Values
}

// listPage is one answer to a list request.
type listPage struct {
	rv, cont string
	pods     []*corev1.Pod
	status   int // non-zero: answer with a Status of this code instead
}

// end says how a watch stream ends after its frames.
type end int

const (
	endHold  end = iota // stay open until the client leaves
	endClose            // end the response cleanly
	endDrop             // reset the stream, as a dying server or proxy would
)

// watchScript is one answer to a watch request.
type watchScript struct {
	status int // non-zero: refuse with a Status of this code
	frames []string
	end    end
	onEnd  func() // runs after the frames are sent
}

func newFakeAPI(t *testing.T) (*fakeAPI, *client.Client) {
	t.Helper()
	f := &fakeAPI{
		lists:     make(chan listPage, 10),
		watches:   make(chan watchScript, 10),
		listReqs:  make(chan url.Values, 100),
		watchReqs: make(chan url.Values, 100),
	}
	srv := httptest.NewUnstartedServer(f)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	c, err := client.New(client.Config{Host: srv.URL, TLS: &tls.Config{RootCAs: pool}})
	if err != nil {
		t.Fatal(err)
	}
	return f, c
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/v1/pods" {
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound)
		return
	}
	q := r.URL.Query()
	if q.Get("watch") == "true" {
		f.watchReqs <- q
		select {
		case s := <-f.watches:
			f.serveWatch(w, r, s)
		case <-r.Context().Done():
		}
		return
	}
	f.listReqs <- q
	select {
	case p := <-f.lists:
		if p.status != 0 {
			writeStatus(w, p.status, reasonFor(p.status))
			return
		}
		list := client.List[corev1.Pod]{ListMeta: metav1.ListMeta{ResourceVersion: p.rv, Continue: p.cont}}
		for _, pod := range p.pods {
			list.Items = append(list.Items, *pod)
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(list)
	case <-r.Context().Done():
	}
}

func (f *fakeAPI) serveWatch(w http.ResponseWriter, r *http.Request, s watchScript) {
	if s.status != 0 {
		writeStatus(w, s.status, reasonFor(s.status))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush() // as the apiserver does, so the client sees the stream open
	for _, fr := range s.frames {
		io.WriteString(w, fr)
		w.(http.Flusher).Flush()
	}
	if s.onEnd != nil {
		s.onEnd()
	}
	switch s.end {
	case endHold:
		<-r.Context().Done()
	case endDrop:
		panic(http.ErrAbortHandler)
	case endClose:
	}
}

func reasonFor(code int) metav1.StatusReason {
	if code == http.StatusGone {
		return metav1.StatusReasonExpired // what Kubernetes sends for a too old resourceVersion
	}
	return metav1.StatusReasonInternalError
}

func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(goneStatus(code, reason))
}

func goneStatus(code int, reason metav1.StatusReason) *metav1.Status {
	return &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status: metav1.StatusFailure, Code: int32(code), Reason: reason, Message: http.StatusText(code)}
}

// Watch frames, as the apiserver writes them.

func ev(typ watch.EventType, obj any) string {
	b, err := json.Marshal(map[string]any{"type": typ, "object": obj})
	if err != nil {
		panic(err)
	}
	return string(b) + "\n"
}

func added(p *corev1.Pod) string    { return ev(watch.Added, p) }
func modified(p *corev1.Pod) string { return ev(watch.Modified, p) }
func deleted(p *corev1.Pod) string  { return ev(watch.Deleted, p) }
func bookmark(rv string) string {
	return ev(watch.Bookmark, map[string]any{"kind": "Pod", "apiVersion": "v1", "metadata": map[string]any{"resourceVersion": rv}})
}
func errorEvent(code int, reason metav1.StatusReason) string {
	return ev(watch.Error, goneStatus(code, reason))
}

// podBuilder makes test pods: makePod("a").RV("10").Node("n1").Obj().
type podBuilder struct{ p corev1.Pod }

func makePod(name string) *podBuilder {
	return &podBuilder{p: corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}}
}
func (b *podBuilder) NS(ns string) *podBuilder  { b.p.Namespace = ns; return b }
func (b *podBuilder) RV(rv string) *podBuilder  { b.p.ResourceVersion = rv; return b }
func (b *podBuilder) Node(n string) *podBuilder { b.p.Spec.NodeName = n; return b }
func (b *podBuilder) Label(k, v string) *podBuilder {
	if b.p.Labels == nil {
		b.p.Labels = map[string]string{}
	}
	b.p.Labels[k] = v
	return b
}
func (b *podBuilder) Obj() *corev1.Pod { p := b.p.DeepCopy(); return p }

// recorder turns handler calls into lines such as "add default/a@10" and
// "update default/a@10->12", in the order they happen.
type recorder struct{ calls chan string }

func newRecorder() *recorder { return &recorder{calls: make(chan string, 1000)} }

func (r *recorder) handler() Handler[corev1.Pod] {
	id := func(p *corev1.Pod) string { return KeyOf(p) + "@" + p.ResourceVersion }
	return Handler[corev1.Pod]{
		OnAdd: func(p *corev1.Pod) { r.calls <- "add " + id(p) },
		OnUpdate: func(old, new *corev1.Pod) {
			if old == new {
				r.calls <- "resync " + id(new)
				return
			}
			r.calls <- "update " + id(old) + "->" + new.ResourceVersion
		},
		OnDelete: func(p *corev1.Pod) { r.calls <- "delete " + id(p) },
	}
}

// expect fails unless the next handler calls are exactly want.
func (r *recorder) expect(t *testing.T, want ...string) {
	t.Helper()
	for i, w := range want {
		select {
		case got := <-r.calls:
			if got != w {
				t.Fatalf("handler call %d = %q, want %q", i, got, w)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("handler call %d: timed out waiting for %q", i, w)
		}
	}
}

// expectNone fails if a handler call is pending now. Handlers run in
// order, so after a later call has been seen, nothing can be missing.
func (r *recorder) expectNone(t *testing.T) {
	t.Helper()
	select {
	case got := <-r.calls:
		t.Fatalf("unexpected handler call %q", got)
	default:
	}
}

// next returns the next value from ch or fails after a timeout.
func next[V any](t *testing.T, ch <-chan V, what string) V {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// fakeClock records every wait the informer asks for. Waits of length
// resync are fired by the test through tick; all others fire at once, so
// backoff costs no real time. Now moves only with advance.
type fakeClock struct {
	*testingclock.FakeClock // Now, Since and the rest; After is this type's
	waits                   chan time.Duration
	resync                  time.Duration
	tick                    chan time.Time
}

func newFakeClock(resync time.Duration) *fakeClock {
	return &fakeClock{FakeClock: testingclock.NewFakeClock(time.Unix(1_000_000, 0)),
		waits: make(chan time.Duration, 100), resync: resync, tick: make(chan time.Time)}
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	if c.resync > 0 && d == c.resync {
		return c.tick
	}
	c.waits <- d
	ch := make(chan time.Time, 1)
	ch <- c.Now()
	return ch
}

// advance moves Now forward, as if a watch had been open that long.
func (c *fakeClock) advance(d time.Duration) { c.Step(d) }

// drainWaits returns the waits recorded so far.
func (c *fakeClock) drainWaits() []time.Duration {
	var out []time.Duration
	for {
		select {
		case d := <-c.waits:
			out = append(out, d)
		default:
			return out
		}
	}
}
