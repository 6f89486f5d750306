package proxy

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/knftables"
)

// Options configure a Proxier.
type Options struct {
	Config
	// NFT is the table's interface. Default: the real `nft` on table
	// ip minik-proxy. Tests pass knftables.NewFake.
	NFT knftables.Interface
	// MinSyncPeriod is the shortest time between two syncs: the first
	// change after a quiet period is synced at once, the ones arriving
	// meanwhile are coalesced into the next sync. Default 10ms.
	MinSyncPeriod time.Duration
	// ChainDeleteDelay is how long a chain no longer used stays (flushed)
	// before it is deleted. Kernels before 6.2 refuse to delete a chain in
	// the transaction that removes the last verdict-map element pointing
	// at it, so there New makes it 1s, as kube-proxy waits; 0 deletes it in
	// the same transaction. Default: from the running kernel when NFT is
	// nil, else 0.
	ChainDeleteDelay time.Duration
	// FullSyncPeriod is how often the whole table is rewritten even
	// without a failure, in case something else changed it (kube-proxy's
	// nftables mode does the same, hourly). Default 1h.
	FullSyncPeriod time.Duration
	// RetryPeriod is the wait before a failed sync is tried again (as a
	// full rewrite). Default 1s.
	RetryPeriod time.Duration
	// Conntrack deletes stale UDP flows. Default: the `conntrack` tool
	// (Debian's conntrack package); nil from NewConntrack when it is
	// missing, then UDP flows are left to time out.
	Conntrack Conntrack
	// ObserveProgramming, if set, is called after each successful sync with
	// the network programming latency of every EndpointSlice change it
	// carried: from the change (the slice's
	// endpoints.kubernetes.io/last-change-trigger-time annotation, else
	// when the proxy saw it) until the nft transaction returned. Changes
	// from before the proxy started are not measured.
	ObserveProgramming func(svc types.NamespacedName, latency time.Duration)
	// ObserveSync, if set, is called after each successful sync that ran a
	// transaction, with what it did and how long it took.
	ObserveSync func(res SyncResult, elapsed time.Duration)
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Now defaults to time.Now.
	Now func() time.Time
}

// Proxier keeps the node's nftables table in line with the Services and
// EndpointSlices it is told about. Its On* methods record changes (they
// are informer handlers); Sync programs them; Loop calls Sync as changes
// come, coalescing bursts.
type Proxier struct {
	opts Options
	nft  knftables.Interface
	log  *slog.Logger
	kick chan struct{}

	mu          sync.Mutex
	services    map[types.NamespacedName]*corev1.Service
	slices      map[types.NamespacedName]map[string]*discoveryv1.EndpointSlice
	dirty       map[types.NamespacedName]bool
	triggers    map[types.NamespacedName][]time.Time
	initialized bool      // both caches have their first list
	started     time.Time // changes from before are not measured

	// Owned by Sync (one at a time, under syncMu).
	syncMu   sync.Mutex
	applied  map[types.NamespacedName]*ServiceRules // what the kernel has
	shared   sharedElements                         // holders of each shared element the kernel has
	stale    map[string]time.Time                   // flushed chains to delete, and since when
	needFull bool
	lastSync time.Time
}

// New returns a Proxier. Nothing is written to the kernel until the first
// Sync after SetInitialized.
func New(opts Options) (*Proxier, error) {
	if opts.MinSyncPeriod <= 0 {
		opts.MinSyncPeriod = 10 * time.Millisecond
	}
	if opts.RetryPeriod <= 0 {
		opts.RetryPeriod = time.Second
	}
	if opts.FullSyncPeriod <= 0 {
		opts.FullSyncPeriod = time.Hour
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.NFT == nil {
		nft, err := knftables.New(knftables.IPv4Family, TableName)
		if err != nil {
			return nil, fmt.Errorf("nftables: %w", err)
		}
		opts.NFT = nft
		if opts.ChainDeleteDelay == 0 && !kernelAtLeast(6, 2) {
			opts.ChainDeleteDelay = time.Second
		}
	}
	return &Proxier{
		opts: opts, nft: opts.NFT, log: opts.Logger.With("component", "proxy"),
		kick:     make(chan struct{}, 1),
		services: map[types.NamespacedName]*corev1.Service{},
		slices:   map[types.NamespacedName]map[string]*discoveryv1.EndpointSlice{},
		dirty:    map[types.NamespacedName]bool{},
		triggers: map[types.NamespacedName][]time.Time{},
		applied:  map[types.NamespacedName]*ServiceRules{},
		shared:   sharedElements{},
		stale:    map[string]time.Time{},
		needFull: true,
		started:  opts.Now(),
	}, nil
}

// OnServiceAdd, OnServiceUpdate and OnServiceDelete record a Service
// change.
func (p *Proxier) OnServiceAdd(svc *corev1.Service) { p.OnServiceUpdate(nil, svc) }

func (p *Proxier) OnServiceUpdate(old, svc *corev1.Service) {
	if old == svc {
		return // a resync: nothing changed
	}
	k := types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
	p.mu.Lock()
	p.services[k] = svc
	p.markLocked(k)
	p.mu.Unlock()
}

func (p *Proxier) OnServiceDelete(svc *corev1.Service) {
	k := types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
	p.mu.Lock()
	delete(p.services, k)
	p.markLocked(k)
	p.mu.Unlock()
}

// OnEndpointSliceAdd, OnEndpointSliceUpdate and OnEndpointSliceDelete
// record an EndpointSlice change, and when it happened.
func (p *Proxier) OnEndpointSliceAdd(s *discoveryv1.EndpointSlice) {
	p.OnEndpointSliceUpdate(nil, s)
}

func (p *Proxier) OnEndpointSliceUpdate(old, s *discoveryv1.EndpointSlice) {
	if old == s {
		return
	}
	p.sliceChanged(s, false)
}

func (p *Proxier) OnEndpointSliceDelete(s *discoveryv1.EndpointSlice) { p.sliceChanged(s, true) }

func (p *Proxier) sliceChanged(s *discoveryv1.EndpointSlice, deleted bool) {
	name := s.Labels[ServiceNameLabel]
	if name == "" {
		return
	}
	k := types.NamespacedName{Namespace: s.Namespace, Name: name}
	p.mu.Lock()
	defer p.mu.Unlock()
	// The change's time, as kube-proxy takes it: the trigger time the
	// EndpointSlice controller stamped, unless it is older than this
	// proxy (the first list replays history, not changes). Without one,
	// when the proxy saw a change after its first list.
	var at time.Time
	if v, ok := s.Annotations[corev1.EndpointsLastChangeTriggerTime]; ok {
		if t, err := time.Parse(time.RFC3339Nano, v); err == nil && !t.Before(p.started) {
			at = t
		}
	} else if p.initialized {
		at = p.opts.Now()
	}
	m := p.slices[k]
	if deleted {
		delete(m, s.Name)
		if len(m) == 0 {
			delete(p.slices, k)
		}
	} else {
		if m == nil {
			m = map[string]*discoveryv1.EndpointSlice{}
			p.slices[k] = m
		}
		m[s.Name] = s
	}
	if !at.IsZero() {
		p.triggers[k] = append(p.triggers[k], at)
	}
	p.markLocked(k)
}

func (p *Proxier) markLocked(k types.NamespacedName) {
	p.dirty[k] = true
	if p.initialized {
		p.wake()
	}
}

func (p *Proxier) wake() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// SetInitialized says that the Services and EndpointSlices seen so far are
// the whole cluster's (both informers listed): syncs may start.
func (p *Proxier) SetInitialized() {
	p.mu.Lock()
	p.initialized = true
	p.mu.Unlock()
	p.wake()
}

// Loop calls Sync whenever something changed, at most once per
// MinSyncPeriod, again after RetryPeriod when a sync failed, when unused
// chains are due for deletion, and every FullSyncPeriod as a full
// rewrite. It returns when ctx ends.
func (p *Proxier) Loop(ctx context.Context) {
	var retry, staleC <-chan time.Time
	full := time.NewTicker(p.opts.FullSyncPeriod)
	defer full.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.kick:
		case <-retry:
			retry = nil
		case <-staleC:
			staleC = nil
		case <-full.C:
			p.syncMu.Lock()
			p.needFull = true
			p.syncMu.Unlock()
		}
		p.syncMu.Lock()
		last := p.lastSync
		p.syncMu.Unlock()
		if wait := last.Add(p.opts.MinSyncPeriod).Sub(p.opts.Now()); wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
		if _, err := p.Sync(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			p.log.Error("sync failed; retrying with a full rewrite", "err", err, "retry_in", p.opts.RetryPeriod)
			retry = time.After(p.opts.RetryPeriod)
		}
		p.syncMu.Lock()
		if len(p.stale) > 0 && staleC == nil {
			staleC = time.After(p.opts.ChainDeleteDelay)
		}
		p.syncMu.Unlock()
	}
}

// SyncResult says what one Sync did.
type SyncResult struct {
	Full       bool // the whole table was rewritten
	Services   int  // Services whose rules were recomputed
	Operations int  // nft operations in the transaction
	// Transaction is the nft script that ran ("" if none).
	Transaction string
}

// Sync programs the kernel: the first time (and after a failure) it
// rewrites the whole table in one transaction; otherwise it recomputes
// the rules of the Services that changed and applies only the
// difference. It does nothing before SetInitialized.
func (p *Proxier) Sync(ctx context.Context) (SyncResult, error) {
	p.syncMu.Lock()
	defer p.syncMu.Unlock()
	start := p.opts.Now()
	p.lastSync = start

	p.mu.Lock()
	if !p.initialized {
		p.mu.Unlock()
		return SyncResult{}, nil
	}
	full := p.needFull
	dirty, triggers := p.dirty, p.triggers
	p.dirty, p.triggers = map[types.NamespacedName]bool{}, map[types.NamespacedName][]time.Time{}
	if full {
		for k := range p.services {
			dirty[k] = true
		}
		for k := range p.applied {
			dirty[k] = true
		}
	}
	planned := make(map[types.NamespacedName]*ServiceRules, len(dirty))
	for k := range dirty {
		if svc := p.services[k]; svc != nil {
			planned[k] = PlanService(p.opts.Config, svc, p.slicesOfLocked(k))
		} else {
			planned[k] = nil
		}
	}
	p.mu.Unlock()

	tx := p.nft.NewTransaction()
	var changes map[types.NamespacedName]change
	if full {
		rs := &Ruleset{Services: map[types.NamespacedName]*ServiceRules{}}
		for k, r := range planned {
			if r != nil {
				rs.Services[k] = r
			}
		}
		writeFull(tx, p.opts.Config, rs)
		clear(p.stale) // the table is rewritten without them
	} else {
		changes = map[types.NamespacedName]change{}
		for k, r := range planned {
			changes[k] = change{old: p.applied[k], new: r}
			for _, c := range chainsOf(r) {
				delete(p.stale, c.Name) // wanted again: writeDiff adds it back
			}
		}
		for name, since := range p.stale {
			if start.Sub(since) >= p.opts.ChainDeleteDelay {
				tx.Delete(&knftables.Chain{Name: name})
				delete(p.stale, name)
			}
		}
		gone := writeDiff(tx, changes, p.shared, p.opts.ChainDeleteDelay == 0)
		if p.opts.ChainDeleteDelay > 0 {
			for _, name := range gone {
				p.stale[name] = start
			}
		}
	}
	res := SyncResult{Full: full, Services: len(planned), Operations: tx.NumOperations()}
	if tx.NumOperations() > 0 {
		res.Transaction = tx.String()
		if err := p.nft.Run(ctx, tx); err != nil {
			p.mu.Lock()
			for k := range dirty {
				p.dirty[k] = true
			}
			for k, ts := range triggers {
				p.triggers[k] = append(ts, p.triggers[k]...)
			}
			p.mu.Unlock()
			p.needFull = true
			return res, fmt.Errorf("nft transaction of %d operations: %w", tx.NumOperations(), err)
		}
	}
	done := p.opts.Now()
	p.needFull = false
	if full {
		clear(p.shared)
		for _, r := range planned {
			for _, e := range elementsOf(r) {
				if isShared(e) {
					p.shared.add(e.id())
				}
			}
		}
	} else {
		p.shared.apply(sharedDelta(changes))
	}

	var stale []ConntrackFilter
	for k, r := range planned {
		stale = append(stale, staleConntrack(p.applied[k], r)...)
		if r == nil {
			delete(p.applied, k)
		} else {
			p.applied[k] = r
		}
	}
	for k, ts := range triggers {
		for _, t := range ts {
			if p.opts.ObserveProgramming != nil {
				p.opts.ObserveProgramming(k, done.Sub(t))
			}
			p.log.Debug("network programming", "service", k.String(), "latency", done.Sub(t))
		}
	}
	if p.opts.ObserveSync != nil && res.Operations > 0 {
		p.opts.ObserveSync(res, done.Sub(start))
	}
	p.log.Debug("synced nftables", "full", full, "services", len(planned), "operations", res.Operations, "elapsed", done.Sub(start))
	if len(stale) > 0 && p.opts.Conntrack != nil {
		for _, f := range stale {
			if err := p.opts.Conntrack.Delete(ctx, f); err != nil {
				p.log.Warn("could not delete stale UDP conntrack entries", "filter", f.String(), "err", err)
			}
		}
	}
	return res, nil
}

// slicesOfLocked returns the slices of Service k, sorted by name.
func (p *Proxier) slicesOfLocked(k types.NamespacedName) []*discoveryv1.EndpointSlice {
	m := p.slices[k]
	names := slices.Sorted(maps.Keys(m))
	out := make([]*discoveryv1.EndpointSlice, 0, len(names))
	for _, n := range names {
		out = append(out, m[n])
	}
	return out
}

// Cleanup deletes the proxy's table, if there is one (for `minik reset`
// and tests).
func Cleanup(ctx context.Context, nft knftables.Interface) error {
	tx := nft.NewTransaction()
	tx.Add(&knftables.Table{})
	tx.Delete(&knftables.Table{})
	if err := nft.Run(ctx, tx); err != nil && !knftables.IsNotFound(err) {
		return err
	}
	return nil
}

// kernelAtLeast says whether the running kernel is at least major.minor
// (unknown: no).
func kernelAtLeast(major, minor int) bool {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return false
	}
	return releaseAtLeast(unix.ByteSliceToString(u.Release[:]), major, minor)
}

// releaseAtLeast compares a kernel release ("6.1.0-18-amd64") with
// major.minor.
func releaseAtLeast(release string, major, minor int) bool {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	digits := parts[1]
	if i := strings.IndexFunc(digits, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		digits = digits[:i]
	}
	mi, err2 := strconv.Atoi(digits)
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}
