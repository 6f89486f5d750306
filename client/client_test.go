package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"minik/client/kubeconfig"
	"minik/internal/pki"
)

// request is what the test server saw.
type request struct {
	method, path, contentType, body, auth, userAgent string
	query                                            url.Values
	protoMajor                                       int
}

// newServer starts an HTTP/2 TLS server running h and returns a Client
// for it plus a channel of the requests it got.
func newServer(t *testing.T, h http.HandlerFunc, cfg Config) (*Client, <-chan request) {
	t.Helper()
	reqs := make(chan request, 100)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		reqs <- request{
			method: r.Method, path: r.URL.Path, query: r.URL.Query(), contentType: r.Header.Get("Content-Type"),
			body: string(body), auth: r.Header.Get("Authorization"), userAgent: r.UserAgent(), protoMajor: r.ProtoMajor,
		}
		h(w, r)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	cfg.Host = srv.URL
	cfg.TLS = &tls.Config{RootCAs: pool}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, reqs
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func status(code int32, reason metav1.StatusReason, msg string) *metav1.Status {
	return &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Code: code, Reason: reason, Message: msg,
	}
}

func pod(ns, name, rv string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv}}
}

func TestResourcePath(t *testing.T) {
	tests := []struct {
		name string
		res  Resource
		ns   string
		obj  string
		sub  []string
		want string
	}{
		{name: "a namespaced core collection", res: Pods, ns: "default", want: "/api/v1/namespaces/default/pods"},
		{name: "a namespaced core collection across namespaces", res: Pods, want: "/api/v1/pods"},
		{name: "a core object's subresource", res: Pods, ns: "default", obj: "p", sub: []string{"binding"}, want: "/api/v1/namespaces/default/pods/p/binding"},
		{name: "a cluster-scoped object ignores the namespace", res: Nodes, ns: "default", obj: "n1", want: "/api/v1/nodes/n1"},
		{name: "a namespace object", res: Namespaces, obj: "kube-system", want: "/api/v1/namespaces/kube-system"},
		{name: "a grouped collection", res: Deployments, ns: "team", want: "/apis/apps/v1/namespaces/team/deployments"},
		{name: "a grouped cluster-scoped object", res: PriorityClasses, obj: "high", want: "/apis/scheduling.k8s.io/v1/priorityclasses/high"},
		{name: "a name with a slash is escaped", res: Leases, ns: "kube-node-lease", obj: "a/b", want: "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/a%2Fb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.res.Path(tt.ns, tt.obj, tt.sub...); got != tt.want {
				t.Errorf("Path = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestNewRejectsHostsThatAreNotHTTPURLs(t *testing.T) {
	for _, host := range []string{"", "127.0.0.1:6443", "ftp://x", "https://"} {
		if _, err := New(Config{Host: host}); err == nil {
			t.Errorf("New accepted host %q", host)
		}
	}
}

func TestTypedRequests(t *testing.T) {
	grace := int64(5)
	uid := types.UID("u1")
	bg := metav1.DeletePropagationBackground
	tests := []struct {
		name string
		call func(ctx context.Context, c *Client) (any, error)
		// answer is the server's reply body.
		answer any
		want   request
		// wantQuery lists query parameters that must be present.
		wantQuery map[string]string
		// wantBody lists JSON fields (dotted paths) the body must have.
		wantBody map[string]any
		check    func(t *testing.T, got any)
	}{
		{
			name: "Get reads one object by namespace and name",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.Pods().Get(ctx, "ns", "p", metav1.GetOptions{})
			},
			answer: pod("ns", "p", "7"),
			want:   request{method: "GET", path: "/api/v1/namespaces/ns/pods/p"},
			check: func(t *testing.T, got any) {
				if p := got.(*corev1.Pod); p.Name != "p" || p.ResourceVersion != "7" {
					t.Errorf("got pod %s rv %s", p.Name, p.ResourceVersion)
				}
			},
		},
		{
			name: "List sends selectors, paging and resourceVersion as query parameters",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.Pods().List(ctx, "", metav1.ListOptions{
					LabelSelector: "app=web", FieldSelector: "spec.nodeName=n1", Limit: 10, Continue: "tok",
					ResourceVersion: "5", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
				})
			},
			answer: map[string]any{"kind": "PodList", "apiVersion": "v1", "metadata": map[string]any{"resourceVersion": "9", "continue": "next"},
				"items": []any{pod("a", "p1", "8"), pod("b", "p2", "9")}},
			want: request{method: "GET", path: "/api/v1/pods"},
			wantQuery: map[string]string{"labelSelector": "app=web", "fieldSelector": "spec.nodeName=n1", "limit": "10",
				"continue": "tok", "resourceVersion": "5", "resourceVersionMatch": "NotOlderThan"},
			check: func(t *testing.T, got any) {
				l := got.(*List[corev1.Pod])
				if l.ResourceVersion != "9" || l.Continue != "next" || len(l.Items) != 2 || l.Items[1].Name != "p2" {
					t.Errorf("got list rv=%q continue=%q items=%d", l.ResourceVersion, l.Continue, len(l.Items))
				}
			},
		},
		{
			name: "Create posts the object with its kind into its namespace",
			call: func(ctx context.Context, c *Client) (any, error) {
				d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web"}}
				return c.Deployments().Create(ctx, d, metav1.CreateOptions{FieldManager: "ctl"})
			},
			answer:    &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", UID: "x"}},
			want:      request{method: "POST", path: "/apis/apps/v1/namespaces/team/deployments", contentType: "application/json"},
			wantQuery: map[string]string{"fieldManager": "ctl"},
			wantBody:  map[string]any{"kind": "Deployment", "apiVersion": "apps/v1", "metadata.name": "web"},
			check: func(t *testing.T, got any) {
				if d := got.(*appsv1.Deployment); d.UID != "x" {
					t.Errorf("got uid %q, want the server's answer", d.UID)
				}
			},
		},
		{
			name: "Update puts the whole object to its URL",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.Nodes().Update(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: "3"}}, metav1.UpdateOptions{})
			},
			answer:   &corev1.Node{},
			want:     request{method: "PUT", path: "/api/v1/nodes/n1", contentType: "application/json"},
			wantBody: map[string]any{"kind": "Node", "apiVersion": "v1", "metadata.resourceVersion": "3"},
		},
		{
			name: "UpdateStatus puts to the status subresource",
			call: func(ctx context.Context, c *Client) (any, error) {
				p := pod("ns", "p", "4")
				p.Status.Phase = corev1.PodRunning
				return c.Pods().UpdateStatus(ctx, p, metav1.UpdateOptions{})
			},
			answer:   &corev1.Pod{},
			want:     request{method: "PUT", path: "/api/v1/namespaces/ns/pods/p/status", contentType: "application/json"},
			wantBody: map[string]any{"status.phase": "Running"},
		},
		{
			name: "a JSON patch is sent with the json-patch content type",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.Pods().Patch(ctx, "ns", "p", types.JSONPatchType, []byte(`[{"op":"remove","path":"/metadata/labels/a"}]`), metav1.PatchOptions{})
			},
			answer: &corev1.Pod{},
			want:   request{method: "PATCH", path: "/api/v1/namespaces/ns/pods/p", contentType: "application/json-patch+json"},
		},
		{
			name: "a merge patch is sent with the merge-patch content type",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.Pods().Patch(ctx, "ns", "p", types.MergePatchType, []byte(`{"metadata":{"labels":{"a":"b"}}}`), metav1.PatchOptions{})
			},
			answer:   &corev1.Pod{},
			want:     request{method: "PATCH", path: "/api/v1/namespaces/ns/pods/p", contentType: "application/merge-patch+json"},
			wantBody: map[string]any{"metadata.labels.a": "b"},
		},
		{
			name: "a strategic merge patch to status goes to the subresource",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.Nodes().Patch(ctx, "", "n1", types.StrategicMergePatchType, []byte(`{"status":{}}`), metav1.PatchOptions{}, "status")
			},
			answer: &corev1.Node{},
			want:   request{method: "PATCH", path: "/api/v1/nodes/n1/status", contentType: "application/strategic-merge-patch+json"},
		},
		{
			name: "Delete sends grace period, preconditions and propagation policy in the body",
			call: func(ctx context.Context, c *Client) (any, error) {
				return nil, c.ReplicaSets().Delete(ctx, "ns", "rs", metav1.DeleteOptions{
					GracePeriodSeconds: &grace, Preconditions: &metav1.Preconditions{UID: &uid}, PropagationPolicy: &bg,
				})
			},
			answer: status(200, "", ""),
			want:   request{method: "DELETE", path: "/apis/apps/v1/namespaces/ns/replicasets/rs", contentType: "application/json"},
			wantBody: map[string]any{"gracePeriodSeconds": float64(5), "preconditions.uid": "u1",
				"propagationPolicy": "Background"},
		},
		{
			name: "Delete without options sends no body",
			call: func(ctx context.Context, c *Client) (any, error) {
				return nil, c.Pods().Delete(ctx, "ns", "p", metav1.DeleteOptions{})
			},
			answer: pod("ns", "p", "9"),
			want:   request{method: "DELETE", path: "/api/v1/namespaces/ns/pods/p"},
		},
		{
			name: "Bind posts a Binding to the pod's binding subresource",
			call: func(ctx context.Context, c *Client) (any, error) {
				return nil, c.Bind(ctx, &corev1.Binding{
					ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"},
					Target:     corev1.ObjectReference{Kind: "Node", Name: "n1"},
				}, metav1.CreateOptions{})
			},
			answer:   status(201, "", ""),
			want:     request{method: "POST", path: "/api/v1/namespaces/ns/pods/p/binding", contentType: "application/json"},
			wantBody: map[string]any{"kind": "Binding", "apiVersion": "v1", "target.name": "n1"},
		},
		{
			name: "Evict posts a policy/v1 Eviction to the pod's eviction subresource",
			call: func(ctx context.Context, c *Client) (any, error) {
				return nil, c.Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}})
			},
			answer:   status(201, "", ""),
			want:     request{method: "POST", path: "/api/v1/namespaces/ns/pods/p/eviction", contentType: "application/json"},
			wantBody: map[string]any{"kind": "Eviction", "apiVersion": "policy/v1", "metadata.name": "p"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// JSON, so that the bodies can be checked field by field;
			// TestProtobuf covers the default encoding.
			c, reqs := newServer(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, tt.answer) }, Config{JSON: true})
			got, err := tt.call(t.Context(), c)
			if err != nil {
				t.Fatal(err)
			}
			r := <-reqs
			if r.method != tt.want.method || r.path != tt.want.path || r.contentType != tt.want.contentType {
				t.Errorf("request %s %s (%q), want %s %s (%q)", r.method, r.path, r.contentType, tt.want.method, tt.want.path, tt.want.contentType)
			}
			for k, v := range tt.wantQuery {
				if r.query.Get(k) != v {
					t.Errorf("query %s = %q, want %q (query %v)", k, r.query.Get(k), v, r.query)
				}
			}
			if tt.wantBody != nil {
				var body map[string]any
				if err := json.Unmarshal([]byte(r.body), &body); err != nil {
					t.Fatalf("body %q: %v", r.body, err)
				}
				for path, want := range tt.wantBody {
					if got := lookup(body, path); got != want {
						t.Errorf("body %s = %v, want %v", path, got, want)
					}
				}
			} else if tt.want.contentType == "" && r.body != "" {
				t.Errorf("unexpected body %q", r.body)
			}
			if tt.check != nil {
				tt.check(t, got)
			}
		})
	}
}

// lookup follows a dotted path through decoded JSON.
func lookup(v any, path string) any {
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func TestCreateAndUpdateRefuseANamespacedObjectWithoutNamespace(t *testing.T) {
	c, _ := newServer(t, func(w http.ResponseWriter, r *http.Request) { t.Error("request sent") }, Config{})
	if _, err := c.Pods().Create(t.Context(), pod("", "p", ""), metav1.CreateOptions{}); err == nil {
		t.Error("Create without namespace succeeded")
	}
	if _, err := c.Pods().Update(t.Context(), pod("", "p", ""), metav1.UpdateOptions{}); err == nil {
		t.Error("Update without namespace succeeded")
	}
	if _, err := c.Pods().Update(t.Context(), pod("ns", "", ""), metav1.UpdateOptions{}); err == nil {
		t.Error("Update without name succeeded")
	}
}

func TestCreateLeavesTheCallersObjectUnchanged(t *testing.T) {
	c, _ := newServer(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 201, pod("ns", "p", "1")) }, Config{})
	p := pod("ns", "p", "")
	if _, err := c.Pods().Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if p.Kind != "" || p.APIVersion != "" {
		t.Errorf("caller's object got kind %q apiVersion %q", p.Kind, p.APIVersion)
	}
}

func TestServerErrorsBecomeStatusErrors(t *testing.T) {
	tests := []struct {
		name   string
		code   int
		body   string
		header map[string]string
		is     func(error) bool
		isName string
	}{
		{name: "a NotFound Status", code: 404, body: mustJSON(status(404, metav1.StatusReasonNotFound, `pods "p" not found`)), is: apierrors.IsNotFound, isName: "IsNotFound"},
		{name: "a Conflict Status", code: 409, body: mustJSON(status(409, metav1.StatusReasonConflict, "changed")), is: apierrors.IsConflict, isName: "IsConflict"},
		{name: "an AlreadyExists Status", code: 409, body: mustJSON(status(409, metav1.StatusReasonAlreadyExists, "exists")), is: apierrors.IsAlreadyExists, isName: "IsAlreadyExists"},
		{name: "an Expired Status with code 410", code: 410, body: mustJSON(status(410, metav1.StatusReasonExpired, "too old")), is: IsGone, isName: "client.IsGone"},
		{name: "a Gone Status", code: 410, body: mustJSON(status(410, metav1.StatusReasonGone, "gone")), is: apierrors.IsGone, isName: "IsGone"},
		{name: "a Status without code takes the HTTP code", code: 403, body: `{"kind":"Status","reason":"Forbidden"}`, is: func(err error) bool {
			return apierrors.IsForbidden(err) && err.(*apierrors.StatusError).ErrStatus.Code == 403
		}, isName: "IsForbidden with code 403"},
		{name: "a plain-text 500 is an internal error", code: 500, body: "boom", is: apierrors.IsInternalError, isName: "IsInternalError"},
		{name: "a plain-text 404 is NotFound", code: 404, body: "404 page not found", is: apierrors.IsNotFound, isName: "IsNotFound"},
		{name: "a plain 429 without Retry-After is not retried", code: 429, body: "slow down", is: apierrors.IsTooManyRequests, isName: "IsTooManyRequests"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tt.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tt.code)
				io.WriteString(w, tt.body)
			}, Config{})
			_, err := c.Pods().Get(t.Context(), "ns", "p", metav1.GetOptions{})
			if _, ok := err.(*apierrors.StatusError); !ok {
				t.Fatalf("err is %T (%v), want *apierrors.StatusError", err, err)
			}
			if !tt.is(err) {
				t.Errorf("%s(%v) = false", tt.isName, err)
			}
		})
	}
}

// TestRetryAfterSendsTheRequestAgain: a 429 (or a 5xx) with Retry-After
// means the apiserver did not handle the request, so the client sends it
// again after that delay, body and all, whatever the verb, as client-go
// does; a PodDisruptionBudget's 429 carries no Retry-After and comes back
// to the caller at once.
func TestRetryAfterSendsTheRequestAgain(t *testing.T) {
	var calls atomic.Int32
	c, reqs := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch calls.Add(1) {
		case 1:
			w.Header().Set("Retry-After", "0")
			writeJSON(w, 429, status(429, metav1.StatusReasonTooManyRequests, "Too many requests, please try again later."))
		case 2:
			w.Header().Set("Retry-After", "0")
			writeJSON(w, 503, status(503, metav1.StatusReasonServiceUnavailable, "not ready"))
		default:
			writeJSON(w, 201, pod("ns", "p", "7"))
		}
	}, Config{})
	got, err := c.Pods().Create(t.Context(), pod("ns", "p", ""), metav1.CreateOptions{})
	if err != nil || got.ResourceVersion != "7" {
		t.Fatalf("Create = %v, %v; want the pod the third try made", got, err)
	}
	if n := calls.Load(); n != 3 {
		t.Fatalf("the server saw %d requests, want 3", n)
	}
	var bodies []string
	for range 3 {
		r := <-reqs
		bodies = append(bodies, r.body)
	}
	if bodies[0] == "" || bodies[1] != bodies[0] || bodies[2] != bodies[0] {
		t.Fatalf("bodies sent %q, want the same body each time", bodies)
	}

	calls.Store(0)
	c, _ = newServer(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Retry-After", "0")
		writeJSON(w, 429, status(429, metav1.StatusReasonTooManyRequests, "Too many requests, please try again later."))
	}, Config{})
	if _, err := c.Pods().Get(t.Context(), "ns", "p", metav1.GetOptions{}); !apierrors.IsTooManyRequests(err) {
		t.Fatalf("Get from a server that always refuses = %v, want the 429", err)
	}
	if n := calls.Load(); n != 1+defaultMaxRetries {
		t.Fatalf("the server saw %d requests, want 1 and %d retries", n, defaultMaxRetries)
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestRequestsUseHTTP2TokenAndUserAgent(t *testing.T) {
	c, reqs := newServer(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, pod("ns", "p", "1")) },
		Config{BearerToken: "abc", UserAgent: "minik-scheduler"})
	if _, err := c.Pods().Get(t.Context(), "ns", "p", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	r := <-reqs
	if r.protoMajor != 2 {
		t.Errorf("protocol HTTP/%d, want HTTP/2", r.protoMajor)
	}
	if r.auth != "Bearer abc" {
		t.Errorf("Authorization %q", r.auth)
	}
	if r.userAgent != "minik-scheduler" {
		t.Errorf("User-Agent %q", r.userAgent)
	}
}

func TestQPSLimitSpacesRequests(t *testing.T) {
	c, _ := newServer(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, pod("ns", "p", "1")) },
		Config{QPS: 20, Burst: 1})
	start := time.Now()
	for range 3 {
		if _, err := c.Pods().Get(t.Context(), "ns", "p", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Burst 1 at 20/s: the 2nd and 3rd request each wait about 50ms.
	if elapsed := time.Since(start); elapsed < 90*time.Millisecond {
		t.Errorf("3 requests at 20 QPS took %v, want at least 100ms", elapsed)
	}
}

// wireEvent renders one watch event as the apiserver does.
func wireEvent(typ watch.EventType, obj any) string {
	return mustJSON(map[string]any{"type": typ, "object": obj}) + "\n"
}

func TestWatchDecodesEveryEventTypeInOrder(t *testing.T) {
	frames := []string{
		wireEvent(watch.Added, pod("ns", "a", "11")),
		wireEvent(watch.Modified, pod("ns", "a", "12")),
		wireEvent(watch.Deleted, pod("ns", "a", "13")),
		wireEvent(watch.Bookmark, map[string]any{"kind": "Pod", "apiVersion": "v1", "metadata": map[string]any{"resourceVersion": "14"}}),
		wireEvent(watch.Error, status(410, metav1.StatusReasonExpired, "too old resource version")),
	}
	c, reqs := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		for _, f := range frames {
			// Split each frame in two writes: decoding must not depend on
			// how the stream is chunked.
			io.WriteString(w, f[:len(f)/2])
			w.(http.Flusher).Flush()
			io.WriteString(w, f[len(f)/2:])
			w.(http.Flusher).Flush()
		}
	}, Config{})
	w, err := c.Pods().Watch(t.Context(), "ns", metav1.ListOptions{ResourceVersion: "10", AllowWatchBookmarks: true, LabelSelector: "a=b"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	r := <-reqs
	if r.path != "/api/v1/namespaces/ns/pods" || r.query.Get("watch") != "true" || r.query.Get("resourceVersion") != "10" ||
		r.query.Get("allowWatchBookmarks") != "true" || r.query.Get("labelSelector") != "a=b" {
		t.Errorf("watch request %s?%s", r.path, r.query.Encode())
	}
	var got []string
	for ev := range w.Events() {
		switch ev.Type {
		case watch.Error:
			got = append(got, fmt.Sprintf("%s %d gone=%v", ev.Type, ev.Status.Code, IsGone(ev.Err())))
		default:
			got = append(got, fmt.Sprintf("%s %s@%s", ev.Type, ev.Object.Name, ev.Object.ResourceVersion))
		}
	}
	want := []string{"ADDED a@11", "MODIFIED a@12", "DELETED a@13", "BOOKMARK @14", "ERROR 410 gone=true"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("events\n got %q\nwant %q", got, want)
	}
	if err := w.Err(); err != nil {
		t.Errorf("Err after a clean end = %v", err)
	}
}

func TestWatchErrSaysHowTheStreamEnded(t *testing.T) {
	tests := []struct {
		name    string
		serve   func(w http.ResponseWriter, r *http.Request)
		stop    bool
		wantErr bool
	}{
		{
			name: "a stream the server ends cleanly has no error",
			serve: func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, wireEvent(watch.Added, pod("ns", "a", "1")))
			},
		},
		{
			name: "a stream the server resets is an error",
			serve: func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, wireEvent(watch.Added, pod("ns", "a", "1")))
				w.(http.Flusher).Flush()
				panic(http.ErrAbortHandler)
			},
			wantErr: true,
		},
		{
			name: "a frame cut in the middle is an error",
			serve: func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, wireEvent(watch.Added, pod("ns", "a", "1"))[:20])
			},
			wantErr: true,
		},
		{
			name: "an unknown event type is an error",
			serve: func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, wireEvent("RENAMED", pod("ns", "a", "1")))
			},
			wantErr: true,
		},
		{
			name: "a stream the client stops has no error",
			serve: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(200)
				w.(http.Flusher).Flush()
				<-r.Context().Done()
			},
			stop: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newServer(t, tt.serve, Config{})
			w, err := c.Pods().Watch(t.Context(), "", metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if tt.stop {
				w.Stop()
			}
			for range w.Events() {
			}
			if err := w.Err(); (err != nil) != tt.wantErr {
				t.Errorf("Err() = %v, want error: %v", err, tt.wantErr)
			}
		})
	}
}

func TestWatchReturnsAStatusErrorWhenTheServerRefuses(t *testing.T) {
	c, _ := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 410, status(410, metav1.StatusReasonExpired, "too old resource version: 1 (5)"))
	}, Config{})
	_, err := c.Pods().Watch(t.Context(), "", metav1.ListOptions{ResourceVersion: "1"})
	if !IsGone(err) || !apierrors.IsResourceExpired(err) {
		t.Errorf("err = %v, want a 410 Expired StatusError", err)
	}
}

func TestNewFromKubeconfigAuthenticatesWithTheClientCertificate(t *testing.T) {
	dir := t.TempDir()
	ca, err := pki.EnsureCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	srvCert, srvKey, err := ca.EnsureServing(dir, "apiserver", nil)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.IssueClient(pki.SchedulerUser, nil)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(srvCert, srvKey)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := pod("ns", r.TLS.PeerCertificates[0].Subject.CommonName, "1")
		p.Labels = map[string]string{"proto": r.Proto}
		writeJSON(w, 200, p)
	}))
	srv.EnableHTTP2 = true
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.CertPool()}
	srv.StartTLS()
	defer srv.Close()

	path := filepath.Join(dir, "scheduler.kubeconfig")
	if err := kubeconfig.Write(path, srv.URL, ca.CertPEM(), certPEM, keyPEM, pki.SchedulerUser); err != nil {
		t.Fatal(err)
	}
	kc, err := kubeconfig.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewFromKubeconfig(kc)
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Pods().Get(t.Context(), "ns", "x", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != pki.SchedulerUser || p.Labels["proto"] != "HTTP/2.0" {
		t.Errorf("server saw user %q over %s, want %s over HTTP/2.0", p.Name, p.Labels["proto"], pki.SchedulerUser)
	}
}

// kube-apiserver's list items carry no kind or apiVersion; the client
// gives them the list's, as for protobuf lists.
func TestJSONListItemsGetTheListsKind(t *testing.T) {
	c, _ := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"kind":"DeploymentList","apiVersion":"apps/v1","metadata":{"resourceVersion":"5"},"items":[{"metadata":{"name":"a","namespace":"ns"}}]}`)
	}, Config{})
	got, err := c.Deployments().List(t.Context(), "ns", metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Items) != 1 || got.Items[0].Kind != "Deployment" || got.Items[0].APIVersion != "apps/v1" || got.Items[0].Name != "a" {
		t.Fatalf("items %+v", got.Items)
	}
}

// A client of PartialObjectMetadata asks for metadata-only answers
// (the list form for a list), with plain JSON as the fallback.
func TestMetadataOnlyReadsAskForMetadata(t *testing.T) {
	accepts := make(chan string, 3)
	c, _ := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		accepts <- r.Header.Get("Accept")
		if r.URL.Query().Get("watch") == "true" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			return
		}
		if strings.HasSuffix(r.URL.Path, "/roles") {
			writeJSON(w, http.StatusOK, map[string]any{"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1",
				"items": []any{map[string]any{"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": map[string]any{"name": "r"}}}})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": map[string]any{"name": "r"}})
	}, Config{})
	roles := For[metav1.PartialObjectMetadata](c, Resource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles", Namespaced: true})
	list, err := roles.List(t.Context(), "ns", metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != "r" {
		t.Fatalf("list: %v %+v", err, list)
	}
	if _, err := roles.Get(t.Context(), "ns", "r", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := roles.Watch(t.Context(), "ns", metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.Stop()
	for _, want := range []string{
		"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json",
		"application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json",
		"application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json",
	} {
		if got := <-accepts; got != want {
			t.Errorf("Accept %q, want %q", got, want)
		}
	}
}

// Each client made with WithTokenSource has its own token bucket of the
// same size, as each of kube-controller-manager's controllers does: one
// busy controller does not slow the others.
func TestTokenSourceClientsHaveTheirOwnRateLimit(t *testing.T) {
	c, _ := newServer(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, pod("ns", "p", "1")) },
		Config{QPS: 100, Burst: 30})
	a := c.WithTokenSource(fixedToken("a"), "a")
	b := c.WithTokenSource(fixedToken("b"), "b")
	for _, d := range []*Client{a, b} {
		if d.limiter == nil || d.limiter.Limit() != 100 || d.limiter.Burst() != 30 {
			t.Fatalf("derived limiter = %+v, want 100 QPS with bursts of 30", d.limiter)
		}
	}
	if a.limiter == c.limiter || a.limiter == b.limiter {
		t.Error("derived clients share a token bucket")
	}
	unlimited, err := New(Config{Host: "https://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	if u := unlimited.WithTokenSource(fixedToken("u"), "u"); u.limiter != nil {
		t.Error("a client without a limit made a limited one")
	}
}

type fixedToken string

func (f fixedToken) Token(context.Context) (string, error) { return string(f), nil }

// Options left at their zero value skip the parameter codec; what they
// encode to must still be what the codec gives, and any set field must
// still reach the query.
func TestZeroOptionsEncodeAsTheCodecDoes(t *testing.T) {
	for _, opts := range []runtime.Object{&metav1.GetOptions{}, &metav1.ListOptions{}, &metav1.CreateOptions{},
		&metav1.UpdateOptions{}, &metav1.PatchOptions{}, &metav1.DeleteOptions{}} {
		want, err := metav1.ParameterCodec.EncodeParameters(opts, metav1.SchemeGroupVersion)
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodeOptions(opts)
		if err != nil || got.Encode() != want.Encode() {
			t.Errorf("%T: got %q %v, want %q", opts, got.Encode(), err, want.Encode())
		}
	}
	got, err := encodeOptions(&metav1.CreateOptions{DryRun: []string{"All"}, FieldManager: "m"})
	if err != nil || got.Encode() != "dryRun=All&fieldManager=m" {
		t.Errorf("options with fields: got %q %v", got.Encode(), err)
	}
}
