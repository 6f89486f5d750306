package kubelet

import (
	"context"
	"runtime/debug"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"minik/internal/procmem"
	"minik/kubelet/runtime"
	"minik/proto/cri"
)

// The pod lifecycle event generator (PLEG), as Kubernetes' Evented PLEG:
//
//	runtime.GetContainerEvents ──▶ watchEvents ──event──▶ ┐
//	                                           ──up/down─▶ │ plegLoop ──wake──▶ the pod's worker
//	relist (ListContainers) every RelistPeriod (30s) ────▶ ┘    (container or sandbox → pod UID)
//	       or FallbackRelistPeriod (1s) while no stream is up;
//	       once at each (re)subscription and at each break
//
// An event wakes the owning pod's worker at once. The relist is a safety
// net for an event the runtime lost; while no stream is up it is the
// only source of changes, as before events existed.

// memoryReleaseQuiet is how long the runtime must show no container
// change before the kubelet hands the garbage of the last burst back to
// the OS (releaseMemory).
const memoryReleaseQuiet = 5 * time.Second

// Resubscription back-off: the first retry after a second, doubling to
// half a minute (a runtime without events is asked again, in case it was
// restarted with them).
const (
	resubscribeFirst = time.Second
	resubscribeMax   = 30 * time.Second
)

// streamUpdate is what watchEvents tells plegLoop: an event, or that the
// stream came up or went down.
type streamUpdate struct {
	event *cri.ContainerEventResponse
	up    bool
}

// plegLoop wakes the workers of pods whose containers changed: at once on
// a runtime event, and at each relist.
func (k *Kubelet) plegLoop(ctx context.Context) error {
	updates := make(chan streamUpdate, 64)
	go k.watchEvents(ctx, updates)
	var (
		last      map[string]cri.ContainerState // the last relist's containers
		owners    = map[string]types.UID{}      // container ID → pod UID
		streaming bool
		burst     burstEnd
		quiet     <-chan time.Time // when the burst may be over
		counts    = runtimeCounts{containers: map[string]int{}}
	)
	defer counts.publish(runtimeCounts{}) // this kubelet's share leaves the gauges
	changed := func() {
		if !k.cfg.ReleaseIdleMemory {
			return
		}
		burst.quiet(k.cfg.Clock.Now(), true)
		if quiet == nil {
			quiet = k.cfg.Clock.After(memoryReleaseQuiet)
		}
	}
	wake := func(uid types.UID) {
		k.mu.Lock()
		if w := k.workers[uid]; w != nil {
			w.runtimeChanged()
		}
		k.mu.Unlock()
	}
	relist := func() {
		cur, uids, err := k.relist(ctx, last, owners, &counts)
		if err != nil {
			k.log.Warn("relist", "err", err)
			return
		}
		if len(uids) > 0 || len(cur) != len(last) {
			changed()
		}
		last = cur
		for uid := range uids {
			wake(uid)
		}
	}
	relistAt := k.cfg.Clock.After(k.cfg.FallbackRelistPeriod)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-relistAt:
			relist()
		case u := <-updates:
			if ev := u.event; ev != nil {
				uid := types.UID(ev.PodSandboxMetadata.GetUid())
				if uid == "" {
					uid = owners[ev.ContainerId]
				}
				if ev.ContainerEventType == cri.ContainerEventType_CONTAINER_DELETED_EVENT {
					delete(owners, ev.ContainerId)
				} else if uid != "" {
					owners[ev.ContainerId] = uid
				}
				if uid != "" {
					wake(uid)
				}
				changed()
				continue
			}
			// Subscribed: relist once, for what happened before. Broken:
			// relist at once, for what the stream may have lost, then
			// often until it is back.
			streaming = u.up
			relist()
		case <-quiet:
			quiet = nil
			if burst.quiet(k.cfg.Clock.Now(), false) {
				k.releaseMemory()
			} else if !burst.last.IsZero() {
				quiet = k.cfg.Clock.After(memoryReleaseQuiet - k.cfg.Clock.Now().Sub(burst.last))
			}
			continue
		}
		period := k.cfg.FallbackRelistPeriod
		if streaming {
			period = k.cfg.RelistPeriod
		}
		relistAt = k.cfg.Clock.After(period)
	}
}

// relist lists the runtime's containers and returns their states and the
// pods whose containers changed since last (appeared, changed state or
// went). It refreshes owners and the running gauges.
func (k *Kubelet) relist(ctx context.Context, last map[string]cri.ContainerState, owners map[string]types.UID, counts *runtimeCounts) (map[string]cri.ContainerState, map[types.UID]bool, error) {
	start := time.Now()
	cs, err := k.rt.ListContainers(ctx, "")
	if err != nil {
		return nil, nil, err
	}
	counts.publish(countRuntime(cs))
	cur := make(map[string]cri.ContainerState, len(cs))
	changed := map[types.UID]bool{}
	for _, c := range cs {
		uid := types.UID(c.Labels[runtime.LabelPodUID])
		cur[c.Id] = c.State
		owners[c.Id] = uid
		if old, ok := last[c.Id]; !ok || old != c.State {
			changed[uid] = true
		}
	}
	for id := range last {
		if _, ok := cur[id]; !ok {
			if uid := owners[id]; uid != "" {
				changed[uid] = true
			}
			delete(owners, id)
		}
	}
	relistDuration.Observe(time.Since(start).Seconds())
	return cur, changed, nil
}

// watchEvents keeps a subscription to the runtime's container events and
// passes them, and the stream's coming up and going down, to plegLoop.
func (k *Kubelet) watchEvents(ctx context.Context, updates chan<- streamUpdate) {
	send := func(u streamUpdate) bool {
		select {
		case updates <- u:
			return true
		case <-ctx.Done():
			return false
		}
	}
	backoff := resubscribeFirst
	for ctx.Err() == nil {
		stream, err := k.rt.GetContainerEvents(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			eventedConnErrors.Inc()
			k.log.Debug("subscribing to container events; relisting every "+k.cfg.FallbackRelistPeriod.String(), "err", err, "retry", backoff)
			select {
			case <-ctx.Done():
				return
			case <-k.cfg.Clock.After(backoff):
			}
			backoff = min(2*backoff, resubscribeMax)
			continue
		}
		eventedConnSuccess.Inc()
		backoff = resubscribeFirst
		if !send(streamUpdate{up: true}) {
			return
		}
		for {
			ev, err := stream.Recv()
			if err != nil {
				if ctx.Err() == nil {
					k.log.Warn("the container event stream broke; relisting every "+k.cfg.FallbackRelistPeriod.String()+" until it is back", "err", err)
				}
				break
			}
			if ev.CreatedAt > 0 {
				eventedLatency.Observe(time.Since(time.Unix(0, ev.CreatedAt)).Seconds())
			}
			if !send(streamUpdate{event: ev}) {
				return
			}
		}
		if !send(streamUpdate{up: false}) {
			return
		}
	}
}

// burstEnd tells when a burst of container changes has ended: quiet is
// true once, at the first look memoryReleaseQuiet after the last change.
type burstEnd struct{ last time.Time } // zero: no change since the last end

func (b *burstEnd) quiet(now time.Time, changed bool) bool {
	switch {
	case changed:
		b.last = now
	case !b.last.IsZero() && now.Sub(b.last) >= memoryReleaseQuiet:
		b.last = time.Time{}
		return true
	}
	return false
}

// releaseMemory collects the garbage of a burst of pod starts and stops
// and returns the freed memory to the OS. An idle kubelet allocates
// little, so without this its heap keeps the burst's garbage until Go's
// forced GC (every 2 minutes), and gives the pages back at the
// scavenger's pace: on an edge node that memory belongs to the pods.
// It also unmaps the binary's code the burst ran (image unpack, sandbox
// and container set-up), which an idle kubelet does not run; what it
// goes on running comes back from the page cache.
func (k *Kubelet) releaseMemory() {
	debug.FreeOSMemory()
	if _, err := procmem.UnmapBinary(); err != nil {
		k.log.Debug("could not unmap the binary's pages", "err", err)
	}
}
