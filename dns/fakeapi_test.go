package dns

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"minik/client"
)

// fakeAPI is a small apiserver for Services and EndpointSlices, in JSON:
// list, watch, get, create, update and delete, with resourceVersions and
// UIDs, enough for the DNS's informers and its registration. It stands in
// until the real apiserver serves these resources.
type fakeAPI struct {
	mu       sync.Mutex
	rv       int
	objects  map[string]map[string]json.RawMessage // resource → "ns/name" → object
	watchers map[string][]chan string              // resource → watch streams
	requests []string                              // "METHOD path" of each write
	history  []fakeEvent                           // every event, to resume watches from
}

type fakeEvent struct {
	resource string
	rv       int
	line     string
}

// The collections served, by URL path prefix.
var fakeResources = map[string]string{
	"/api/v1/":                   "services",
	"/apis/discovery.k8s.io/v1/": "endpointslices",
}

func newFakeAPI(t *testing.T) (*fakeAPI, *client.Client) {
	t.Helper()
	f := &fakeAPI{objects: map[string]map[string]json.RawMessage{"services": {}, "endpointslices": {}}, watchers: map[string][]chan string{}}
	srv := httptest.NewUnstartedServer(f)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	t.Cleanup(f.closeWatches) // before srv.Close, which waits for handlers
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	c, err := client.New(client.Config{Host: srv.URL, TLS: &tls.Config{RootCAs: pool}, JSON: true})
	if err != nil {
		t.Fatal(err)
	}
	return f, c
}

// parse splits a path into resource, namespace and name.
func parsePath(p string) (resource, ns, name string, ok bool) {
	for prefix := range fakeResources {
		if rest, found := strings.CutPrefix(p, prefix); found {
			parts := strings.Split(rest, "/")
			switch {
			case len(parts) == 1:
				return parts[0], "", "", parts[0] == fakeResources[prefix]
			case len(parts) >= 3 && parts[0] == "namespaces":
				resource, ns = parts[2], parts[1]
				if len(parts) == 4 {
					name = parts[3]
				}
				return resource, ns, name, resource == fakeResources[prefix]
			}
		}
	}
	return "", "", "", false
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	resource, ns, name, ok := parsePath(r.URL.Path)
	if !ok {
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound)
		return
	}
	switch {
	case r.Method == http.MethodGet && r.URL.Query().Get("watch") == "true":
		f.serveWatch(w, r, resource)
	case r.Method == http.MethodGet && name == "":
		f.serveList(w, resource)
	case r.Method == http.MethodGet:
		f.mu.Lock()
		obj, found := f.objects[resource][ns+"/"+name]
		f.mu.Unlock()
		if !found {
			writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound)
			return
		}
		writeJSON(w, http.StatusOK, obj)
	case r.Method == http.MethodPost, r.Method == http.MethodPut:
		body, _ := io.ReadAll(r.Body)
		var meta struct {
			metav1.ObjectMeta `json:"metadata"`
		}
		if err := json.Unmarshal(body, &meta); err != nil {
			writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest)
			return
		}
		if ns == "" {
			ns = meta.Namespace
		}
		code, obj := f.write(resource, ns, meta.Name, body, r.Method == http.MethodPost)
		f.mu.Lock()
		f.requests = append(f.requests, r.Method+" "+resource+"/"+meta.Name)
		f.mu.Unlock()
		if code >= 300 {
			writeStatus(w, code, metav1.StatusReasonConflict)
			return
		}
		writeJSON(w, code, obj)
	case r.Method == http.MethodDelete:
		if !f.delete(resource, ns, name) {
			writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound)
			return
		}
		f.mu.Lock()
		f.requests = append(f.requests, "DELETE "+resource+"/"+name)
		f.mu.Unlock()
		writeJSON(w, http.StatusOK, json.RawMessage(`{"kind":"Status","apiVersion":"v1","status":"Success"}`))
	default:
		writeStatus(w, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed)
	}
}

// write stores body as ns/name with a new resourceVersion (and a UID when
// created) and tells the watchers.
func (f *fakeAPI) write(resource, ns, name string, body []byte, create bool) (int, json.RawMessage) {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := ns + "/" + name
	old, exists := f.objects[resource][key]
	if create == exists {
		if create {
			return http.StatusConflict, nil
		}
		return http.StatusNotFound, nil
	}
	var obj map[string]any
	_ = json.Unmarshal(body, &obj)
	meta, _ := obj["metadata"].(map[string]any)
	meta["namespace"] = ns
	f.rv++
	meta["resourceVersion"] = strconv.Itoa(f.rv)
	if create {
		meta["uid"] = fmt.Sprintf("uid-%d", f.rv)
	} else {
		var prev map[string]any
		_ = json.Unmarshal(old, &prev)
		meta["uid"] = prev["metadata"].(map[string]any)["uid"]
	}
	out, _ := json.Marshal(obj)
	f.objects[resource][key] = out
	typ := watch.Modified
	if create {
		typ = watch.Added
	}
	f.notify(resource, typ, out)
	return map[bool]int{true: http.StatusCreated, false: http.StatusOK}[create], out
}

func (f *fakeAPI) delete(resource, ns, name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	obj, ok := f.objects[resource][ns+"/"+name]
	if ok {
		delete(f.objects[resource], ns+"/"+name)
		f.rv++
		f.notify(resource, watch.Deleted, obj)
	}
	return ok
}

// notify sends an event to every watch of resource; f.mu is held.
func (f *fakeAPI) notify(resource string, typ watch.EventType, obj json.RawMessage) {
	line, _ := json.Marshal(map[string]any{"type": typ, "object": obj})
	f.history = append(f.history, fakeEvent{resource, f.rv, string(line)})
	for _, ch := range f.watchers[resource] {
		ch <- string(line)
	}
}

func (f *fakeAPI) serveList(w http.ResponseWriter, resource string) {
	f.mu.Lock()
	items := make([]json.RawMessage, 0, len(f.objects[resource]))
	for _, o := range f.objects[resource] {
		items = append(items, o)
	}
	rv := strconv.Itoa(f.rv)
	f.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"metadata": map[string]any{"resourceVersion": rv}, "items": items})
}

// serveWatch streams the events after the resourceVersion asked for.
func (f *fakeAPI) serveWatch(w http.ResponseWriter, r *http.Request, resource string) {
	from, _ := strconv.Atoi(r.URL.Query().Get("resourceVersion"))
	ch := make(chan string, 1000)
	f.mu.Lock()
	for _, e := range f.history {
		if e.resource == resource && e.rv > from {
			ch <- e.line
		}
	}
	f.watchers[resource] = append(f.watchers[resource], ch)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	for {
		select {
		case line, ok := <-ch:
			if !ok {
				return
			}
			fmt.Fprintln(w, line)
			w.(http.Flusher).Flush()
		case <-r.Context().Done():
			f.mu.Lock()
			list := f.watchers[resource]
			for i, c := range list {
				if c == ch {
					f.watchers[resource] = append(list[:i:i], list[i+1:]...)
					break
				}
			}
			f.mu.Unlock()
			return
		}
	}
}

func (f *fakeAPI) closeWatches() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, list := range f.watchers {
		for _, ch := range list {
			close(ch)
		}
	}
	f.watchers = map[string][]chan string{}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason) {
	writeJSON(w, code, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status: metav1.StatusFailure, Code: int32(code), Reason: reason, Message: http.StatusText(code)})
}

// Helpers for the tests: typed access to what the fake holds.

func (f *fakeAPI) service(ns, name string) *corev1.Service {
	return fakeGet[corev1.Service](f, "services", ns, name)
}

func (f *fakeAPI) slice(ns, name string) *discoveryv1.EndpointSlice {
	return fakeGet[discoveryv1.EndpointSlice](f, "endpointslices", ns, name)
}

func fakeGet[T any](f *fakeAPI, resource, ns, name string) *T {
	f.mu.Lock()
	raw, ok := f.objects[resource][ns+"/"+name]
	f.mu.Unlock()
	if !ok {
		return nil
	}
	obj := new(T)
	if err := json.Unmarshal(raw, obj); err != nil {
		panic(err)
	}
	return obj
}

func (f *fakeAPI) put(t *testing.T, resource string, obj metav1.Object, create bool) {
	t.Helper()
	body, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := f.write(resource, obj.GetNamespace(), obj.GetName(), body, create); code >= 300 {
		t.Fatalf("fake %s %s/%s: %d", resource, obj.GetNamespace(), obj.GetName(), code)
	}
}
