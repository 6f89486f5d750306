// Package dns is minik's cluster DNS: a DNS server for the cluster zone
// (cluster.local) built on github.com/miekg/dns, the library CoreDNS is
// built on. It answers the records of the Kubernetes DNS specification
// from an in-memory store that list-watches of Services and EndpointSlices
// keep current, forwards every other name to the host's resolvers, and
// registers itself as an endpoint of the kube-dns Service so that the node
// proxy sends the ClusterIP's queries to it. See README.md.
package dns

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"minik/client"
	"minik/client/informer"
)

// GCPercent is the GOGC of a process that runs only the DNS (`minik
// dns`). Its heap is almost all long-lived records, and Go's default of
// 100 lets garbage grow to as much again before collecting. Under load a
// query's garbage is short-lived, so a collection costs about the
// marking of the records: 25 kept `minik dns` with 5,000 Services at
// 49 MB after the load instead of 55 (50), with no loss of QPS that the
// bench could tell from noise (test/bench/dns -minik, side by side).
// An explicit GOGC wins.
const GCPercent = 25

// Config configures a DNS.
type Config struct {
	// Client reaches the apiserver; it must be allowed to list and watch
	// Services and EndpointSlices, and (with Register) to write the
	// kube-dns Service and its own EndpointSlice.
	Client *client.Client
	// Listen is the UDP and TCP address, "IP:PORT". Required.
	Listen string
	// Zone is the cluster domain. Default "cluster.local".
	Zone string
	// TTL of the zone's records, in seconds. Default 30.
	TTL uint32
	// ResolvConf lists the resolvers for names outside the zone. Default
	// /etc/resolv.conf.
	ResolvConf string
	// UpstreamTimeout bounds one forwarded question over every upstream
	// tried. Default 5s (each upstream gets 2s).
	UpstreamTimeout time.Duration
	// ServiceIP is the kube-dns ClusterIP. Default 10.96.0.10.
	ServiceIP net.IP
	// Register creates the kube-dns Service if it is missing and keeps an
	// EndpointSlice for this server in it, removed again on shutdown.
	Register bool
	// AdvertiseAddress is the address in that slice. Default the listen
	// IP, which must then be a specific one.
	AdvertiseAddress net.IP
	// NodeName, if set, is the slice endpoint's nodeName.
	NodeName string
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Ready, if set, is closed once the records are in sync with the
	// cluster (both watches have listed).
	Ready chan struct{}
}

// DNS is a cluster DNS server with its watches and its registration.
type DNS struct {
	cfg    Config
	log    *slog.Logger
	store  *Store
	server *Server
	reg    *registrar
}

// New checks cfg and binds the listen address, so that a port in use
// fails at once. Start it with Run.
func New(cfg Config) (*DNS, error) {
	if cfg.Client == nil {
		return nil, errors.New("dns: no client")
	}
	if cfg.ResolvConf == "" {
		cfg.ResolvConf = "/etc/resolv.conf"
	}
	if cfg.ServiceIP == nil {
		cfg.ServiceIP, _ = ServiceIP(DefaultServiceCIDR)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	host, portStr, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("dns: listen address %q: %w", cfg.Listen, err)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("dns: listen port %q: %w", portStr, err)
	}
	d := &DNS{cfg: cfg, log: cfg.Logger}
	d.store = NewStore(StoreConfig{Zone: cfg.Zone, TTL: cfg.TTL, Nameservers: []net.IP{cfg.ServiceIP}})
	upstreams, err := UpstreamsFromResolvConf(cfg.ResolvConf, cfg.Listen, cfg.ServiceIP.String())
	if err != nil {
		return nil, fmt.Errorf("dns: %w", err)
	}
	if len(upstreams) == 0 {
		d.log.Warn("dns: no upstream resolver; names outside the cluster get SERVFAIL", "resolvConf", cfg.ResolvConf)
	}
	d.server = NewServer(ServerConfig{Listen: cfg.Listen, Store: d.store, Forwarder: NewForwarder(upstreams, 0),
		UpstreamTimeout: cfg.UpstreamTimeout, Logger: cfg.Logger})
	if cfg.Register {
		addr := cfg.AdvertiseAddress
		if addr == nil {
			addr = net.ParseIP(host)
		}
		if addr == nil || addr.IsUnspecified() {
			return nil, fmt.Errorf("dns: listening on %q, an advertise address is needed for the kube-dns endpoint", cfg.Listen)
		}
		d.reg = newRegistrar(cfg.Client, cfg.ServiceIP, addr, int32(port), cfg.NodeName, cfg.Logger)
	}
	if err := d.server.Listen(); err != nil {
		return nil, err
	}
	if cfg.Register && port == 0 { // the slice must name the port actually bound
		_, p, _ := net.SplitHostPort(d.server.Addr())
		n, _ := strconv.Atoi(p)
		d.reg.port = int32(n)
		d.reg.sliceName = SliceName(d.reg.addr, d.reg.port)
	}
	return d, nil
}

// Addr returns the address the server listens on.
func (d *DNS) Addr() string { return d.server.Addr() }

// Store returns the record store.
func (d *DNS) Store() *Store { return d.store }

// Run serves, watches and registers until ctx is done; on the way out it
// withdraws this server's endpoint from kube-dns.
func (d *DNS) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The records are the DNS's state: the informers keep only keys (and
	// resourceVersions), not a second copy of every Service and slice.
	cfg := informer.Config{Logger: d.log, KeysOnly: true}
	services := informer.New(client.For[corev1.Service](d.cfg.Client, ServicesResource), cfg)
	slices := informer.New(client.For[discoveryv1.EndpointSlice](d.cfg.Client, EndpointSlicesResource), cfg)
	services.AddHandler(serviceHandler(d.store))
	slices.AddHandler(sliceHandler(d.store))
	if d.reg != nil {
		services.AddHandler(d.reg.serviceHandler())
		slices.AddHandler(d.reg.sliceHandler())
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { _ = services.Run(ctx) })
	wg.Go(func() { _ = slices.Run(ctx) })
	wg.Go(func() {
		for _, ch := range []<-chan struct{}{services.Synced(), slices.Synced()} {
			select {
			case <-ch:
			case <-ctx.Done():
				return
			}
		}
		d.store.SetSynced(true)
		n, m := d.store.Len()
		d.log.Info("dns: records in sync with the cluster", "services", n, "endpointSlices", m)
		if d.cfg.Ready != nil {
			close(d.cfg.Ready)
		}
	})
	// On the way out the endpoint is withdrawn first, and the server
	// answers until then, so that no query is sent to a closed socket.
	serveCtx, stopServing := context.WithCancel(context.WithoutCancel(ctx))
	defer stopServing()
	wg.Go(func() {
		if d.reg != nil {
			d.reg.run(ctx)
		} else {
			<-ctx.Done()
		}
		stopServing()
	})
	err := d.server.Serve(serveCtx)
	cancel()
	return err
}
