// Package apiserver serves the Kubernetes REST API over etcd. It is the
// only etcd client: requests are authenticated, authorized, decoded,
// admitted (defaults, policy, validation) and then stored.
package apiserver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"minik/apiserver/fieldmanager"
	"minik/apiserver/openapi"
	"minik/apiserver/registry"
	"minik/apiserver/storage"
	"minik/apiserver/webhook"
	"minik/internal/resourcemetrics"
)

// Config configures the apiserver.
type Config struct {
	Etcd *clientv3.Client
	// Listen is the HTTPS address, e.g. "127.0.0.1:6443".
	Listen string
	// Listener, if set, is used instead of Listen (tests pass :0 listeners).
	Listener net.Listener
	// TLSCertFile and TLSKeyFile are the serving certificate and key.
	TLSCertFile, TLSKeyFile string
	// ClientCAFile verifies client certificates (the users' identities).
	ClientCAFile string
	// KubeletClientCertFile and KubeletClientKeyFile authenticate the
	// apiserver to kubelets (for pods/log).
	KubeletClientCertFile, KubeletClientKeyFile string
	// ServiceAccountSigningKeyFile is the private key (EC or RSA PEM) that
	// signs service-account tokens; empty disables tokens.
	ServiceAccountSigningKeyFile string
	// ServiceAccountIssuer is the tokens' iss claim (default
	// https://kubernetes.default.svc.cluster.local, as kubeadm sets it).
	ServiceAccountIssuer string
	// APIAudiences are the audiences a token must name to authenticate
	// here (default: the issuer).
	APIAudiences []string
	// TokenAuthFile is a static token file in Kubernetes' CSV format
	// (token,user,uid,"group1,group2"); empty for none.
	TokenAuthFile string
	// MaxRequestsInflight and MaxMutatingRequestsInflight bound the
	// read-only and mutating requests served at once (default 400 and
	// 200, as kube-apiserver); beyond them a request waits for a slot
	// (up to RequestTimeout/4, as many as there are slots), then gets 429.
	MaxRequestsInflight, MaxMutatingRequestsInflight int
	// RequestTimeout bounds each request that is not long-running, and
	// the reading of any request body (default 60s).
	RequestTimeout time.Duration
	// MaxWatchesPerUser bounds the watches one user holds open at once
	// (default 1000); more get 429.
	MaxWatchesPerUser int
	// WatchCacheSize is how many recent events per resource a watch can
	// resume from (default 10000); older resourceVersions answer 410 Gone.
	WatchCacheSize int
	// ExtraMetrics, if set, is served at /metrics beside the registry's
	// (minik up: its embedded etcd's, metrics.EmbeddedEtcd).
	ExtraMetrics prometheus.Gatherer
	// CompactionInterval is how often etcd history is compacted
	// (default 5m, 0 keeps the default, negative disables).
	CompactionInterval time.Duration
	// EventTTL is how long an Event is kept after its last write
	// (default 1h, kube-apiserver's --event-ttl): etcd deletes it then.
	EventTTL time.Duration
	// BookmarkInterval is how often watchers that allow bookmarks get one
	// (default 1m, kube-apiserver's frequency: each bookmark wakes every
	// watcher and its client, most of an idle cluster's work).
	BookmarkInterval time.Duration

	// ServiceClusterIPRange is the CIDR that Service cluster IPs come from
	// (default 10.96.0.0/12). Its first address is the `kubernetes`
	// Service's.
	ServiceClusterIPRange string
	// ServiceNodePortRange is the range of node ports, "FROM-TO"
	// (default 30000-32767).
	ServiceNodePortRange string
	// AdvertiseAddress is the IP address the `kubernetes` Service's
	// endpoints give for this apiserver (default: the host's first
	// non-loopback IPv4 address). Pods reach the API through it.
	AdvertiseAddress string
	// EndpointLeaseTTL is how long this apiserver stays among the
	// `kubernetes` endpoints without renewing its lease (default 15s);
	// it renews every two thirds of it.
	EndpointLeaseTTL time.Duration
	// ServiceRepairInterval is how often allocations are compared with
	// the Services holding them (default 3m; negative: at start-up only).
	ServiceRepairInterval time.Duration
	// DisableAdmissionPlugins names admission plugins to leave out, as
	// kube-apiserver's --disable-admission-plugins (minik can leave out
	// only ServiceAccount; default none).
	DisableAdmissionPlugins []string
}

// optionalAdmissionPlugins are the plugins DisableAdmissionPlugins may name.
var optionalAdmissionPlugins = []string{ServiceAccountPlugin}

// Server is a running apiserver.
type Server struct {
	cfg      Config
	handlers map[string]*resourceHandler // by "group/version/resource"
	// versions are the built-in handlers of each resource, one a version.
	versions map[schema.GroupResource][]*resourceHandler
	groups   []groupVersions
	router   *mux.Router
	ready    chan struct{}

	namespaces      *storage.Store
	priorityClasses *storage.Store
	serviceAccounts *storage.Store
	pods            *storage.Store
	nodes           *storage.Store
	pdbs            *storage.Store
	serviceStore    *storage.Store
	events          *storage.Store
	stores          []*storage.Store

	// services allocates cluster IPs and node ports (services.go).
	services *serviceAllocators

	// namespaceCache and priorityClassCache serve admission's reads on
	// the create path (see objectCache).
	namespaceCache      *objectCache
	priorityClassCache  *objectCache
	serviceAccountCache *objectCache

	disabledAdmission map[string]bool // by plugin name

	// authorizers run in order for every request (authz.go); nodeGraph
	// is what the node authorizer knows of each node's pods.
	limiter      *limiter
	tokens       *tokenIssuer     // nil without a signing key
	staticTokens map[string]*User // from TokenAuthFile

	authorizers []authorizer
	nodeGraph   *nodeGraph
	volumeGraph *volumeGraph
	rbac        *rbacAuthorizer

	kubeletOnce sync.Once
	// metricsSampler keeps the last CPU reading of each node and
	// container for metrics.k8s.io's rates (metrics.go).
	metricsSampler resourcemetrics.Sampler
	kubeletHTTP    *http.Client
	kubeletErr     error

	// policy is what LimitRanger and ResourceQuota admission read.
	policy *policyReads

	// mutatingHooks and validatingHooks are the admission webhooks
	// (admission_webhooks.go), called through webhooks.
	mutatingHooks, validatingHooks *webhookConfigs
	webhooks                       *webhook.Caller

	// crds serves the custom resources of CustomResourceDefinitions.
	crds *crdManager
	// fields keeps managedFields and serves server-side apply.
	fields  *fieldmanager.Manager
	metrics *serverMetrics // metrics.go
}

// New builds the server; Run starts it.
func New(cfg Config) (*Server, error) {
	if cfg.Etcd == nil {
		return nil, errors.New("apiserver: no etcd client")
	}
	if cfg.WatchCacheSize == 0 {
		cfg.WatchCacheSize = 10000
	}
	if cfg.CompactionInterval == 0 {
		cfg.CompactionInterval = 5 * time.Minute
	}
	if cfg.BookmarkInterval == 0 {
		cfg.BookmarkInterval = time.Minute
	}
	if cfg.ServiceClusterIPRange == "" {
		cfg.ServiceClusterIPRange = DefaultServiceClusterIPRange
	}
	if cfg.ServiceNodePortRange == "" {
		cfg.ServiceNodePortRange = DefaultServiceNodePortRange
	}
	if cfg.AdvertiseAddress == "" {
		cfg.AdvertiseAddress = DefaultAdvertiseAddress()
	}
	if cfg.EndpointLeaseTTL == 0 {
		cfg.EndpointLeaseTTL = 15 * time.Second
	}
	if cfg.ServiceRepairInterval == 0 {
		cfg.ServiceRepairInterval = 3 * time.Minute
	}
	if cfg.EventTTL <= 0 {
		cfg.EventTTL = DefaultEventTTL
	}
	services, err := newServiceAllocators(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.MaxRequestsInflight <= 0 {
		cfg.MaxRequestsInflight = defaultMaxRequestsInflight
	}
	if cfg.MaxMutatingRequestsInflight <= 0 {
		cfg.MaxMutatingRequestsInflight = defaultMaxMutatingRequestsInflight
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = defaultRequestTimeout
	}
	if cfg.MaxWatchesPerUser <= 0 {
		cfg.MaxWatchesPerUser = defaultMaxWatchesPerUser
	}
	s := &Server{cfg: cfg, handlers: map[string]*resourceHandler{}, ready: make(chan struct{}),
		limiter:           newLimiter(cfg.MaxRequestsInflight, cfg.MaxMutatingRequestsInflight, cfg.RequestTimeout, cfg.MaxWatchesPerUser),
		metricsSampler:    resourcemetrics.Sampler{MinWindow: metricsWindow},
		disabledAdmission: map[string]bool{}}
	for _, name := range cfg.DisableAdmissionPlugins {
		if !slices.Contains(optionalAdmissionPlugins, name) {
			return nil, fmt.Errorf("apiserver: admission plugin %q cannot be disabled (minik can disable: %s)", name, strings.Join(optionalAdmissionPlugins, ", "))
		}
		s.disabledAdmission[name] = true
	}
	if cfg.ServiceAccountSigningKeyFile != "" {
		if cfg.ServiceAccountIssuer == "" {
			cfg.ServiceAccountIssuer = "https://kubernetes.default.svc.cluster.local"
		}
		t, err := newTokenIssuer(cfg.ServiceAccountSigningKeyFile, cfg.ServiceAccountIssuer, cfg.APIAudiences)
		if err != nil {
			return nil, err
		}
		s.tokens = t
	}
	if cfg.TokenAuthFile != "" {
		tokens, err := loadTokenFile(cfg.TokenAuthFile)
		if err != nil {
			return nil, err
		}
		s.staticTokens = tokens
	}
	s.services = services
	byID := map[string]*storage.Store{}
	var openapiResources []openapi.Resource
	var fieldKinds []*registry.Resource // the kinds that keep managedFields
	all := registry.All()
	for _, res := range all {
		h := &resourceHandler{res: res, srv: s}
		if res.Virtual || res.Computed {
			// Computed on create or on read, never stored.
		} else if res.StorageOf != "" {
			h.store = byID[res.StorageOf]
			h.conv = conversionFor(res)
			for _, other := range all {
				// The resource that owns the store: another version of
				// the same resource (autoscaling/v1 of v2) shares its ID.
				if other.ID() == res.StorageOf && other.StorageOf == "" {
					h.storedRes = other
				}
			}
		} else {
			h.store = storage.NewStore(cfg.Etcd, res.KeyPrefix(), res.GroupResource(), res.GroupVersion().WithKind(res.Kind), res.New, cfg.WatchCacheSize)
			byID[res.ID()] = h.store
			s.stores = append(s.stores, h.store)
		}
		if !res.Virtual {
			fieldKinds = append(fieldKinds, res)
		}
		s.handlers[res.Group+"/"+res.Version+"/"+res.Resource] = h
		if s.versions == nil {
			s.versions = map[schema.GroupResource][]*resourceHandler{}
		}
		s.versions[res.GroupResource()] = append(s.versions[res.GroupResource()], h)
		s.addGroupVersion(res)
		verbs := res.ServedVerbs()
		openapiResources = append(openapiResources, openapi.Resource{Group: res.Group, Version: res.Version, Kind: res.Kind,
			Resource: res.Resource, Namespaced: res.Namespaced, Object: res.New(), List: newList(res),
			Verbs: verbs, Subresources: res.Subresources})
	}
	s.namespaces = byID["namespaces"]
	s.priorityClasses = byID["priorityclasses.scheduling.k8s.io"]
	s.serviceAccounts = byID["serviceaccounts"]
	s.pods = byID["pods"]
	s.nodes = byID["nodes"]
	s.pdbs = byID["poddisruptionbudgets.policy"]
	s.nodeGraph = newNodeGraph()
	s.volumeGraph = newVolumeGraph()
	rbacCache := func(id string) *objectCache { return newObjectCache(id, byID[id]) }
	s.rbac = &rbacAuthorizer{roles: rbacCache("roles.rbac.authorization.k8s.io"),
		clusterRoles:        rbacCache("clusterroles.rbac.authorization.k8s.io"),
		roleBindings:        rbacCache("rolebindings.rbac.authorization.k8s.io"),
		clusterRoleBindings: rbacCache("clusterrolebindings.rbac.authorization.k8s.io")}
	// In kube-apiserver's order: --authorization-mode=Node,RBAC behind the
	// system:masters short cut.
	s.authorizers = []authorizer{
		privilegedGroups{},
		&nodeAuthorizer{graph: s.nodeGraph, volumes: s.volumeGraph, podsRev: s.pods.Cache().LatestRevision},
		s.rbac,
	}
	s.events = byID["events"]
	s.events.SetTTL(cfg.EventTTL)
	s.serviceStore = byID["services"]
	s.serviceStore.SetCompanions(services.companions)
	s.namespaceCache = newObjectCache("namespaces", s.namespaces)
	s.priorityClassCache = newObjectCache("priorityclasses", s.priorityClasses)
	s.policy = newPolicyReads(byID)
	s.serviceAccountCache = newObjectCache("serviceaccounts", s.serviceAccounts)
	s.fields = newFieldManager(openapiResources, fieldKinds)
	s.mutatingHooks, s.validatingHooks = newWebhookConfigs(true), newWebhookConfigs(false)
	s.webhooks = webhook.NewCaller(s.resolveWebhookService)
	s.crds = newCRDManager(s, byID["customresourcedefinitions.apiextensions.k8s.io"], openapiResources,
		openapi.NewHandler(openapiResources))
	s.metrics = newServerMetrics(s)
	s.router = s.routes(http.HandlerFunc(s.crds.serveOpenAPI))
	return s, nil
}

// Handler returns the HTTP handler (protection and authentication
// included).
func (s *Server) Handler() http.Handler { return s.protect(s.router) }

// Ready is closed once the server accepts requests.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Run starts the watch caches, creates the built-in objects and serves
// HTTPS until ctx ends.
func (s *Server) Run(ctx context.Context) error {
	for _, st := range s.stores {
		if err := st.Start(ctx); err != nil {
			return fmt.Errorf("starting watch cache: %w", err)
		}
	}
	for _, c := range []*objectCache{s.namespaceCache, s.priorityClassCache, s.serviceAccountCache,
		s.rbac.roles, s.rbac.clusterRoles, s.rbac.roleBindings, s.rbac.clusterRoleBindings} {
		if err := c.start(ctx); err != nil {
			return fmt.Errorf("starting admission cache: %w", err)
		}
	}
	if err := s.policy.start(ctx); err != nil {
		return fmt.Errorf("starting admission cache: %w", err)
	}
	if err := follow(ctx, "node authorizer graph", s.pods, s.nodeGraph); err != nil {
		return fmt.Errorf("starting the node authorizer: %w", err)
	}
	if err := follow(ctx, "node authorizer volumes", byIDOf(s, "persistentvolumes"), s.volumeGraph); err != nil {
		return fmt.Errorf("starting the node authorizer: %w", err)
	}
	for name, v := range map[string]*webhookConfigs{"mutatingwebhookconfigurations": s.mutatingHooks,
		"validatingwebhookconfigurations": s.validatingHooks} {
		if err := follow(ctx, name, s.handlers["admissionregistration.k8s.io/v1/"+name].store, v); err != nil {
			return fmt.Errorf("starting admission webhooks: %w", err)
		}
	}
	if err := s.crds.start(ctx); err != nil {
		return fmt.Errorf("serving custom resources: %w", err)
	}
	if err := s.bootstrap(ctx); err != nil {
		return fmt.Errorf("creating built-in objects: %w", err)
	}
	if err := s.repairServiceAllocations(ctx); err != nil {
		return fmt.Errorf("checking service IP and node port allocations: %w", err)
	}
	go s.expireOldEvents(ctx)
	go s.bookmarkLoop(ctx)
	go s.compactLoop(ctx)
	go s.repairLoop(ctx)

	tlsCfg, err := s.tlsConfig()
	if err != nil {
		return err
	}
	ln := s.cfg.Listener
	if ln == nil {
		if ln, err = net.Listen("tcp", s.cfg.Listen); err != nil {
			return fmt.Errorf("apiserver listen: %w", err)
		}
	}
	port := 443
	if a, ok := ln.Addr().(*net.TCPAddr); ok {
		port = a.Port
		if !a.IP.IsUnspecified() && a.IP.String() != s.cfg.AdvertiseAddress {
			slog.Warn("the apiserver does not listen on its advertise address: pods cannot reach it through the kubernetes service",
				"listen", ln.Addr().String(), "advertiseAddress", s.cfg.AdvertiseAddress)
		}
	}
	if err := s.ensureKubernetesService(ctx, port); err != nil {
		return fmt.Errorf("creating the kubernetes service: %w", err)
	}
	endpointsDone := make(chan struct{})
	go func() {
		defer close(endpointsDone)
		s.runKubernetesEndpoints(ctx, port)
	}()
	srv := &http.Server{Handler: s.Handler(), TLSConfig: tlsCfg, ReadHeaderTimeout: 30 * time.Second,
		ErrorLog: slogErrorLog()}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(tls.NewListener(ln, tlsCfg)) }()
	slog.Info("apiserver serving", "address", "https://"+ln.Addr().String())
	close(s.ready)
	select {
	case <-ctx.Done():
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx)
		<-endpointsDone // this apiserver's lease is gone from the endpoints
		return nil
	case err := <-errc:
		return err
	}
}

func (s *Server) tlsConfig() (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(s.cfg.TLSCertFile, s.cfg.TLSKeyFile)
	if err != nil {
		return nil, fmt.Errorf("loading serving certificate: %w", err)
	}
	caPEM, err := os.ReadFile(s.cfg.ClientCAFile)
	if err != nil {
		return nil, fmt.Errorf("reading client CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("no certificates in %s", s.cfg.ClientCAFile)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientCAs:    pool,
		// Unauthenticated clients may still reach /healthz and /version.
		ClientAuth: tls.VerifyClientCertIfGiven,
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"h2", "http/1.1"},
	}, nil
}

// bookmarkLoop asks etcd for progress (so caches learn the latest
// revision when their resource is idle) and sends watch bookmarks.
// DefaultEventTTL is how long Events are kept unless Config says otherwise.
const DefaultEventTTL = time.Hour

// expireOldEvents gives the Events an earlier minik kept without a TTL
// one now, in the background: they go EventTTL after this start.
func (s *Server) expireOldEvents(ctx context.Context) {
	n, err := s.events.ExpireUnleased(ctx)
	switch {
	case err != nil && ctx.Err() == nil:
		slog.Warn("giving older events their TTL", "attached", n, "err", err)
	case n > 0:
		slog.Info("older events kept without a TTL now expire", "events", n, "ttl", s.cfg.EventTTL)
	}
}

func (s *Server) bookmarkLoop(ctx context.Context) {
	t := time.NewTicker(s.cfg.BookmarkInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_ = s.cfg.Etcd.RequestProgress(clientv3.WithRequireLeader(ctx)) // the watch caches' streams are keyed by this metadata
			// Give the progress notifications a moment to land.
			time.AfterFunc(100*time.Millisecond, func() {
				for _, st := range append(slices.Clone(s.stores), s.customStores()...) {
					st.Cache().Bookmark()
				}
			})
		}
	}
}

// compactLoop compacts etcd history as Kubernetes does: each interval it
// compacts up to the revision seen one interval earlier.
func (s *Server) compactLoop(ctx context.Context) {
	if s.cfg.CompactionInterval < 0 {
		return
	}
	t := time.NewTicker(s.cfg.CompactionInterval)
	defer t.Stop()
	var last int64
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rev, err := s.namespaces.CurrentRevision(ctx)
		if err != nil {
			continue
		}
		if last > 0 {
			if _, err := s.cfg.Etcd.Compact(ctx, last); err != nil {
				slog.Warn("etcd compaction failed", "revision", last, "err", err)
			} else {
				slog.Debug("compacted etcd", "revision", last)
			}
		}
		last = rev
	}
}

// bootstrap creates the namespaces and priority classes every cluster
// has, and the `default` service account of each of those namespaces, so
// that pods can be created there before the serviceaccount controller
// runs (or in a cluster without it).
func (s *Server) bootstrap(ctx context.Context) error {
	nsHandler := s.handlers["/v1/namespaces"]
	saHandler := s.handlers["/v1/serviceaccounts"]
	for _, name := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
		ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: name}}
		if _, err := nsHandler.createObject(ctx, &requestInfo{}, ns, false); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		sa := &corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta: metav1.ObjectMeta{Name: defaultServiceAccountName, Namespace: name}}
		if _, err := saHandler.createObject(ctx, &requestInfo{namespace: name}, sa, false); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	pcHandler := s.handlers["scheduling.k8s.io/v1/priorityclasses"]
	for name, value := range map[string]int32{"system-node-critical": 2000001000, "system-cluster-critical": 2000000000} {
		pc := &schedulingv1.PriorityClass{TypeMeta: metav1.TypeMeta{APIVersion: "scheduling.k8s.io/v1", Kind: "PriorityClass"},
			ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value,
			Description: "Used for system critical pods that must not be moved from their current node."}
		if _, err := pcHandler.createObject(ctx, &requestInfo{}, pc, false); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	if err := s.bootstrapStorage(ctx); err != nil {
		return err
	}
	return s.bootstrapRBAC(ctx)
}

// requestInfo is what the URL of a resource request says.
type requestInfo struct {
	handler     *resourceHandler
	namespace   string
	name        string
	subresource string
	verb        string // get list watch create update patch delete deletecollection
	// proxyPath is what follows pods/NAME/proxy in the path ("/read").
	proxyPath string

	// fieldManager names the writer (managedfields.go): the fieldManager
	// option or the User-Agent; empty for the apiserver's own writes.
	fieldManager string
	force        bool // a server-side apply takes over conflicting fields
	dryRun       bool // dryRun=All: admitted, not stored
	applied      bool // a server-side apply already set managedFields
}

// parseResourcePath splits /api/v1/... and /apis/G/V/... paths.
func (s *Server) parseResourcePath(r *http.Request) (*requestInfo, error) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	var group, version string
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		version, parts = parts[1], parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		group, version, parts = parts[1], parts[2], parts[3:]
	default:
		return nil, apierrors.NewNotFound(corev1.Resource(""), "")
	}
	gv := group + "/" + version + "/"
	ri := &requestInfo{}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		if h, ok := s.handlerFor(gv + parts[2]); ok && h.res.Namespaced {
			ri.namespace = parts[1]
			parts = parts[2:]
		}
	}
	h, ok := s.handlerFor(gv + parts[0])
	if !ok {
		return nil, notFoundPath(r)
	}
	ri.handler = h
	if len(parts) > 1 {
		ri.name = parts[1]
	}
	if len(parts) > 2 {
		ri.subresource = parts[2]
		if ri.subresource == "proxy" && h.res.HasSubresource("proxy") {
			// The rest of the path is the proxied one (its trailing slash kept).
			ri.proxyPath = "/" + strings.Join(parts[3:], "/")
			if len(parts) > 3 && strings.HasSuffix(r.URL.Path, "/") {
				ri.proxyPath += "/"
			}
		} else if !h.res.HasSubresource(ri.subresource) || len(parts) > 3 {
			return nil, notFoundPath(r)
		}
	}
	if h.res.Namespaced && ri.namespace == "" && ri.name != "" {
		return nil, notFoundPath(r)
	}
	q := r.URL.Query()
	switch r.Method {
	case http.MethodGet:
		switch {
		case ri.name != "":
			ri.verb = "get"
		case q.Get("watch") == "1" || q.Get("watch") == "true":
			ri.verb = "watch"
		default:
			ri.verb = "list"
		}
	case http.MethodPost:
		ri.verb = "create"
		if ri.name != "" && ri.subresource == "" {
			return nil, methodNotAllowed(r)
		}
		if h.res.Namespaced && ri.namespace == "" && !h.res.Virtual {
			// /api/v1/pods lists across namespaces; creates go to
			// /api/v1/namespaces/NS/pods.
			return nil, methodNotAllowed(r)
		}
	case http.MethodPut:
		ri.verb = "update"
	case http.MethodPatch:
		ri.verb = "patch"
	case http.MethodDelete:
		ri.verb = "delete"
		if ri.name == "" {
			ri.verb = "deletecollection"
		}
	default:
		return nil, methodNotAllowed(r)
	}
	if ri.name == "" && (ri.verb == "update" || ri.verb == "patch") {
		return nil, methodNotAllowed(r)
	}
	if ri.subresource == "exec" || ri.subresource == "portforward" || ri.subresource == "attach" {
		// Kubernetes authorizes these connections as create, the
		// WebSocket's GET too.
		ri.verb = "create"
	}
	return ri, nil
}

// handlerFor finds the handler of "group/version/resource": a built-in
// resource, or a custom one.
func (s *Server) handlerFor(key string) (*resourceHandler, bool) {
	if h, ok := s.handlers[key]; ok {
		return h, true
	}
	return s.customHandler(key)
}

func notFoundPath(r *http.Request) error {
	return statusError(http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource")
}

func methodNotAllowed(r *http.Request) error {
	return apierrors.NewMethodNotSupported(corev1.Resource(strings.Trim(r.URL.Path, "/")), r.Method)
}

// serveResource dispatches a resource request to its verb.
func (s *Server) serveResource(w http.ResponseWriter, r *http.Request) {
	ri, err := s.parseResourcePath(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	ri.dryRun = isDryRun(r)
	r = withRequestInfo(r, ri)
	noteRequest(w, r, ri)
	if err := s.authorize(r, ri); err != nil {
		writeError(w, r, err)
		return
	}
	if kind, ok := optionsKind[ri.verb]; ok {
		if err := validateDryRun(r.URL.Query()["dryRun"], kind); err != nil {
			writeError(w, r, err)
			return
		}
	}
	h := ri.handler
	if h.res.Warning != "" {
		w.Header().Add("Warning", fmt.Sprintf("299 - %q", h.res.Warning))
	}
	if h.res.Computed {
		s.serveMetrics(w, r, ri)
		return
	}
	if h.res.Virtual {
		if ri.verb != "create" || ri.name != "" {
			writeError(w, r, methodNotAllowed(r))
			return
		}
		if onlyConversions(r) {
			writeError(w, r, errNoTableForm)
			return
		}
		s.serveReview(w, r, ri)
		return
	}
	if ri.subresource != "" {
		h.serveSubresource(w, r, ri)
		return
	}
	switch ri.verb {
	case "get":
		h.get(w, r, ri)
	case "list", "watch":
		h.list(w, r, ri)
	case "create":
		h.create(w, r, ri)
	case "update":
		h.update(w, r, ri)
	case "patch":
		h.patch(w, r, ri)
	case "delete":
		h.delete(w, r, ri)
	case "deletecollection":
		h.deleteCollection(w, r, ri)
	}
}

func reflectZero(v reflect.Value) reflect.Value { return reflect.Zero(v.Type()) }

func metaCause(typ, field string) metav1.StatusCause {
	return metav1.StatusCause{Type: metav1.CauseType(typ), Field: field}
}

func storageListAll() storage.ListOptions { return storage.ListOptions{} }

func newList(res *registry.Resource) runtime.Object {
	if res.NewList == nil {
		return nil
	}
	return res.NewList()
}
