// Package ui is minik's live view: a web page that shows the cluster
// working, built from the same list-watch streams the components use.
//
//	apiserver ──one watch per resource (pods, nodes, events, namespaces, PDBs, services,
//	            endpointslices, persistentvolumeclaims, persistentvolumes, storageclasses)──▶ informers (this process)
//	                                     │ handlers
//	                                     ▼
//	              hub: a snapshot + deltas, batched every 100ms ──SSE /api/stream──▶ browsers
//	              flow.Model (ui/flow): pod watch events and Events → numbered steps ──GET /api/flow──▶ Flow panel
//	              informer caches → scheduler.ExplainObjects ──GET /api/explain──▶ Scheduling panel
//
// Browsers never reach the API: however many are open, the cluster sees
// one watch per resource. The page (static/) is embedded in the binary.
package ui

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"log/slog"
	"net/http"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/client"
	"minik/client/informer"
	"minik/scheduler"
	"minik/scheduler/framework"
	"minik/ui/flow"
)

//go:embed static
var static embed.FS

// Server serves the live view.
type Server struct {
	log        *slog.Logger
	pods       *informer.Informer[corev1.Pod]
	nodes      *informer.Informer[corev1.Node]
	events     *informer.Informer[corev1.Event]
	namespaces *informer.Informer[corev1.Namespace]
	pdbs       *informer.Informer[policyv1.PodDisruptionBudget]
	services   *informer.Informer[corev1.Service]
	slices     *informer.Informer[discoveryv1.EndpointSlice]
	claims     *informer.Informer[corev1.PersistentVolumeClaim]
	volumes    *informer.Informer[corev1.PersistentVolume]
	classes    *informer.Informer[storagev1.StorageClass]

	mu     sync.Mutex
	model  *flow.Model
	recent []eventView // the last maxEvents Events, oldest first
	subs   map[*subscriber]struct{}
	synced bool

	token    string // the one-time login token; "" once used
	sessions map[string]bool
}

const (
	maxEvents     = 1000
	batchInterval = 100 * time.Millisecond
	cookieName    = "minik-ui"
)

// New returns a live view reading the cluster through c.
func New(c *client.Client, log *slog.Logger) *Server {
	if log == nil {
		log = slog.Default()
	}
	cfg := informer.Config{Logger: log}
	s := &Server{log: log, model: flow.New(), subs: map[*subscriber]struct{}{}, sessions: map[string]bool{},
		pods:       informer.New(c.Pods(), cfg),
		nodes:      informer.New(c.Nodes(), cfg),
		events:     informer.New(c.Events(), cfg),
		namespaces: informer.New(c.Namespaces(), cfg),
		pdbs:       informer.New(client.For[policyv1.PodDisruptionBudget](c, client.PodDisruptionBudgets), cfg),
		services:   informer.New(client.For[corev1.Service](c, client.Services), cfg),
		slices:     informer.New(client.For[discoveryv1.EndpointSlice](c, client.EndpointSlices), cfg),
		claims:     informer.New(c.PersistentVolumeClaims(), cfg),
		volumes:    informer.New(c.PersistentVolumes(), cfg),
		classes:    informer.New(c.StorageClasses(), cfg),
	}
	slim(s.pods)
	slim(s.nodes)
	slim(s.events)
	slim(s.namespaces)
	slim(s.pdbs)
	slim(s.services)
	slim(s.claims)
	slim(s.volumes)
	slim(s.classes)
	// Nothing reads a slice's annotations, nor labels but its Service's name.
	s.slices.SetTransform(func(es *discoveryv1.EndpointSlice) *discoveryv1.EndpointSlice {
		es.ManagedFields, es.Annotations = nil, nil
		es.Labels = map[string]string{discoveryv1.LabelServiceName: es.Labels[discoveryv1.LabelServiceName]}
		return es
	})
	s.token = randomToken()
	podMsg := func(typ string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			now := time.Now()
			s.mu.Lock()
			defer s.mu.Unlock()
			s.model.Pod(typ, p, now)
			s.broadcast(message{Kind: "pod", Type: typ, Pod: ptr(viewPod(p))})
		}
	}
	s.pods.AddHandler(informer.Handler[corev1.Pod]{OnAdd: podMsg("ADDED"),
		OnUpdate: func(_, p *corev1.Pod) { podMsg("MODIFIED")(p) }, OnDelete: podMsg("DELETED")})
	nodeMsg := func(typ string) func(*corev1.Node) {
		return func(n *corev1.Node) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.broadcast(message{Kind: "node", Type: typ, Node: ptr(viewNode(n))})
		}
	}
	s.nodes.AddHandler(informer.Handler[corev1.Node]{OnAdd: nodeMsg("ADDED"),
		OnUpdate: func(_, n *corev1.Node) { nodeMsg("MODIFIED")(n) }, OnDelete: nodeMsg("DELETED")})
	eventMsg := func(e *corev1.Event) {
		now := time.Now()
		s.mu.Lock()
		defer s.mu.Unlock()
		s.model.Event(e, now)
		v := viewEvent(e, now)
		s.recent = append(s.recent, v)
		if len(s.recent) > maxEvents {
			s.recent = append(s.recent[:0:0], s.recent[len(s.recent)-maxEvents:]...)
		}
		s.broadcast(message{Kind: "event", Type: "ADDED", Event: &v})
	}
	onChange(s, s.services, func(m *message, o *corev1.Service) { m.Kind, m.Service = "service", ptr(viewService(o)) })
	onChange(s, s.slices, func(m *message, o *discoveryv1.EndpointSlice) { m.Kind, m.Slice = "slice", ptr(viewSlice(o)) })
	onChange(s, s.claims, func(m *message, o *corev1.PersistentVolumeClaim) { m.Kind, m.Claim = "claim", ptr(viewClaim(o)) })
	onChange(s, s.volumes, func(m *message, o *corev1.PersistentVolume) { m.Kind, m.Volume = "volume", ptr(viewVolume(o)) })
	onChange(s, s.classes, func(m *message, o *storagev1.StorageClass) { m.Kind, m.Class = "class", ptr(viewClass(o)) })
	s.events.AddHandler(informer.Handler[corev1.Event]{OnAdd: eventMsg, OnUpdate: func(old, e *corev1.Event) {
		if old.ResourceVersion != e.ResourceVersion {
			eventMsg(e)
		}
	}})
	return s
}

func ptr[T any](v T) *T { return &v }

// onChange broadcasts every add, update and delete of inf's objects as
// the view that set puts in the message.
func onChange[T any](s *Server, inf *informer.Informer[T], set func(*message, *T)) {
	msg := func(typ string) func(*T) {
		return func(o *T) {
			m := message{Type: typ}
			set(&m, o)
			s.mu.Lock()
			defer s.mu.Unlock()
			s.broadcast(m)
		}
	}
	inf.AddHandler(informer.Handler[T]{OnAdd: msg("ADDED"), OnUpdate: func(_, o *T) { msg("MODIFIED")(o) }, OnDelete: msg("DELETED")})
}

// slim makes inf cache its objects without what no panel and no
// explanation reads: managed fields and kubectl's last-applied copy,
// often the larger part of an object.
func slim[T any](inf *informer.Informer[T]) {
	inf.SetTransform(func(o *T) *T {
		trim(any(o).(metav1.Object))
		return o
	})
}

// trim drops m's managed fields and last-applied annotation in place.
func trim(m metav1.Object) {
	m.SetManagedFields(nil)
	if a := m.GetAnnotations(); a != nil {
		delete(a, corev1.LastAppliedConfigAnnotation)
	}
}

func randomToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// LoginToken is the one-time token of the login link (/login?token=…).
func (s *Server) LoginToken() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.token
}

// Run watches the cluster until ctx ends.
func (s *Server) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, run := range []func(context.Context) error{s.pods.Run, s.nodes.Run, s.events.Run, s.namespaces.Run, s.pdbs.Run,
		s.services.Run, s.slices.Run, s.claims.Run, s.volumes.Run, s.classes.Run} {
		wg.Go(func() { _ = run(ctx) })
	}
	for _, c := range []<-chan struct{}{s.pods.Synced(), s.nodes.Synced(), s.events.Synced()} {
		select {
		case <-c:
		case <-ctx.Done():
		}
	}
	s.mu.Lock()
	s.synced = true
	s.mu.Unlock()
	ticker := time.NewTicker(batchInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			return nil
		case <-ticker.C:
			s.flush()
		}
	}
}

// Handler serves the page and its API. Every path but /login needs the
// session cookie that the login link sets.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	assets, _ := fs.Sub(static, "static")
	mux.Handle("GET /", http.FileServerFS(assets))
	mux.HandleFunc("GET /api/stream", s.serveStream)
	mux.HandleFunc("GET /api/flow", s.serveFlow)
	mux.HandleFunc("GET /api/explain", s.serveExplain)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/login" {
			s.login(w, r)
			return
		}
		if !s.authenticated(r) {
			http.Error(w, "Unauthorized: open the login link that minik printed", http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// login trades the one-time token for a session cookie.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	ok := s.token != "" && subtle.ConstantTimeCompare([]byte(r.URL.Query().Get("token")), []byte(s.token)) == 1
	var session string
	if ok {
		s.token = ""
		session = randomToken()
		s.sessions[session] = true
	}
	s.mu.Unlock()
	if !ok {
		http.Error(w, "Unauthorized: the login link was used already or is wrong", http.StatusUnauthorized)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: session, Path: "/", HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (s *Server) authenticated(r *http.Request) bool {
	c, err := r.Cookie(cookieName)
	if err != nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[c.Value]
}

// message is one change pushed to browsers.
type message struct {
	Kind    string       `json:"kind"` // pod, node, event, service, slice, claim, volume, class
	Type    string       `json:"type"` // ADDED, MODIFIED, DELETED
	Pod     *podView     `json:"pod,omitempty"`
	Node    *nodeView    `json:"node,omitempty"`
	Event   *eventView   `json:"event,omitempty"`
	Service *serviceView `json:"service,omitempty"`
	Slice   *sliceView   `json:"slice,omitempty"`
	Claim   *claimView   `json:"claim,omitempty"`
	Volume  *volumeView  `json:"volume,omitempty"`
	Class   *classView   `json:"class,omitempty"`
}

// subscriber is one browser's stream: changes wait in pending until the
// next batch.
type subscriber struct {
	pending []message
	out     chan []byte
}

// broadcast queues m for every subscriber; s.mu is held.
func (s *Server) broadcast(m message) {
	for sub := range s.subs {
		sub.pending = append(sub.pending, m)
	}
}

// flush sends each subscriber its batch; one that is too slow to take
// it is dropped (its browser reconnects and starts from a snapshot).
func (s *Server) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for sub := range s.subs {
		if len(sub.pending) == 0 {
			continue
		}
		data, err := json.Marshal(map[string]any{"batch": sub.pending})
		sub.pending = sub.pending[:0]
		if err != nil {
			continue
		}
		select {
		case sub.out <- data:
		default:
			delete(s.subs, sub)
			close(sub.out)
		}
	}
}

// snapshot is the state a new browser starts from; s.mu is held.
func (s *Server) snapshot() ([]byte, error) {
	snap := struct {
		Pods     []podView     `json:"pods"`
		Nodes    []nodeView    `json:"nodes"`
		Events   []eventView   `json:"events"`
		Services []serviceView `json:"services"`
		Slices   []sliceView   `json:"slices"`
		Claims   []claimView   `json:"claims"`
		Volumes  []volumeView  `json:"volumes"`
		Classes  []classView   `json:"classes"`
	}{Pods: views(s.pods, viewPod), Nodes: views(s.nodes, viewNode), Events: s.recent,
		Services: views(s.services, viewService), Slices: views(s.slices, viewSlice),
		Claims: views(s.claims, viewClaim), Volumes: views(s.volumes, viewVolume), Classes: views(s.classes, viewClass)}
	return json.Marshal(map[string]any{"snapshot": snap})
}

// views is the view of every object in inf's cache.
func views[T, V any](inf *informer.Informer[T], view func(*T) V) []V {
	objs := inf.Store().List()
	out := make([]V, 0, len(objs))
	for _, o := range objs {
		out = append(out, view(o))
	}
	return out
}

// serveStream is the Server-Sent Events stream: a snapshot, then batches.
func (s *Server) serveStream(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	sub := &subscriber{out: make(chan []byte, 64)}
	s.mu.Lock()
	snap, err := s.snapshot()
	if err == nil {
		s.subs[sub] = struct{}{}
	}
	s.mu.Unlock()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer func() {
		s.mu.Lock()
		if _, ok := s.subs[sub]; ok {
			delete(s.subs, sub)
		}
		s.mu.Unlock()
	}()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	write := func(data []byte) bool {
		if _, err := w.Write([]byte("data: ")); err != nil {
			return false
		}
		if _, err := w.Write(data); err != nil {
			return false
		}
		if _, err := w.Write([]byte("\n\n")); err != nil {
			return false
		}
		flusher.Flush()
		return true
	}
	if !write(snap) {
		return
	}
	keepalive := time.NewTicker(15 * time.Second)
	defer keepalive.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case data, ok := <-sub.out:
			if !ok || !write(data) {
				return
			}
		case <-keepalive.C:
			if _, err := w.Write([]byte(": keepalive\n\n")); err != nil {
				return
			}
			flusher.Flush()
		}
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// serveFlow answers a pod's path, from the model (no API request).
func (s *Server) serveFlow(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.mu.Lock()
	f, ok := s.model.Flow(q.Get("ns"), q.Get("name"))
	s.mu.Unlock()
	if !ok {
		http.Error(w, "no such pod", http.StatusNotFound)
		return
	}
	writeJSON(w, f)
}

// serveExplain answers the scheduler's verdicts for a pod, computed from
// the informers' caches as `minik explain` computes them from a list.
func (s *Server) serveExplain(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	pod, ok := s.pods.Store().Get(q.Get("ns"), q.Get("name"))
	if !ok {
		http.Error(w, "no such pod", http.StatusNotFound)
		return
	}
	e := scheduler.ExplainObjects(pod, scheduler.Objects{Nodes: s.nodes.Store().List(), Pods: s.pods.Store().List(),
		Namespaces: s.namespaces.Store().List(), PDBs: s.pdbs.Store().List(), Services: s.services.Store().List(),
		Storage: framework.NewStaticStorage(s.claims.Store().List(), s.volumes.Store().List(), s.classes.Store().List())})
	writeJSON(w, viewExplanation(e))
}
