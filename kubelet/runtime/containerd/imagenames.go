package containerd

import (
	"context"
	"fmt"
	"sync"
	"time"

	containerd "github.com/containerd/containerd"
	eventstypes "github.com/containerd/containerd/api/events"
	"github.com/containerd/containerd/events"
)

// imageNames caches which image each name points to, as containerd's CRI
// plugin keeps its image store: filled by reads, emptied of a name by
// containerd's event for it. Every pod start asked containerd twice (the
// kubelet's image check, then the container's creation): 0.6 ms of CPU
// each, between the two processes.
//
//	image(name) ─▶ cached? ─yes─▶ the image
//	                  │no
//	                  ▼
//	            GetImage ─▶ kept, unless an event came meanwhile (gen moved)
//	watchImages: /images/create|update|delete of the namespace ─▶ forget the name, gen++
//	             subscription not live (starting, lost) ─▶ nothing cached, nothing kept
type imageNames struct {
	mu     sync.Mutex
	live   bool // the subscription delivers every event
	gen    uint64
	byName map[string]containerd.Image
}

// get returns the cached image of name, and the generation a read that
// misses must hand to put.
func (c *imageNames) get(name string) (containerd.Image, uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	img, ok := c.byName[name]
	return img, c.gen, ok && c.live
}

// put keeps img for name if nothing changed since get returned gen.
func (c *imageNames) put(name string, img containerd.Image, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.live && c.gen == gen {
		c.byName[name] = img
	}
}

// forget drops name (an event, or the runtime's own delete).
func (c *imageNames) forget(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.byName, name)
	c.gen++
}

// setLive starts or stops caching; either way it starts empty.
func (c *imageNames) setLive(live bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.live = live
	c.byName = map[string]containerd.Image{}
	c.gen++
}

// imageTopics are the events that change what a name points to.
var imageTopics = []string{"/images/create", "/images/update", "/images/delete"}

// watchImages keeps r.imageNames true to containerd's images until ctx
// ends, subscribing again (after a second) when the stream breaks.
func (r *Runtime) watchImages(ctx context.Context) {
	var filters []string
	for _, topic := range imageTopics {
		filters = append(filters, fmt.Sprintf(`namespace==%s,topic==%q`, r.cfg.Namespace, topic))
	}
	for ctx.Err() == nil {
		sctx, cancel := context.WithCancel(r.ctx(ctx))
		ch, errs, err := r.subscribeLive(sctx, filters...)
		if err == nil {
			r.imageNames.setLive(true)
			r.followImageEvents(sctx, ch, errs)
			r.imageNames.setLive(false)
		}
		cancel()
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// followImageEvents forgets each name an event names, until the stream
// or ctx ends.
func (r *Runtime) followImageEvents(ctx context.Context, ch <-chan *events.Envelope, errs <-chan error) {
	followEvents(ctx, ch, errs, func(v any) {
		switch ev := v.(type) {
		case *eventstypes.ImageCreate:
			r.imageNames.forget(ev.Name)
		case *eventstypes.ImageUpdate:
			r.imageNames.forget(ev.Name)
		case *eventstypes.ImageDelete:
			r.imageNames.forget(ev.Name)
		}
	})
}
