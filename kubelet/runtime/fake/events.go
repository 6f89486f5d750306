package fake

import (
	"context"
	"fmt"

	"minik/kubelet/runtime"
	"minik/proto/cri"
)

// eventBuffer is how many events a subscriber may fall behind before its
// stream ends with runtime.ErrEventsLost.
const eventBuffer = 1024

// subscription is one GetContainerEvents stream.
type subscription struct {
	ch   chan *cri.ContainerEventResponse
	lost chan struct{} // closed when events were dropped for it, or the streams ended
	why  string        // what ended it
	ctx  context.Context
}

func (s *subscription) Recv() (*cri.ContainerEventResponse, error) {
	// An event already queued comes before the end of the stream.
	select {
	case ev := <-s.ch:
		return ev, nil
	default:
	}
	select {
	case ev := <-s.ch:
		return ev, nil
	case <-s.lost:
		return nil, fmt.Errorf("%w: %s", runtime.ErrEventsLost, s.why)
	case <-s.ctx.Done():
		return nil, s.ctx.Err()
	}
}

// GetContainerEvents subscribes at once; the stream ends when ctx does,
// or with runtime.ErrEventsLost when the reader falls eventBuffer behind.
func (r *Runtime) GetContainerEvents(ctx context.Context) (runtime.ContainerEventStream, error) {
	r.mu.Lock()
	err := r.eventsErr
	r.mu.Unlock()
	if err != nil {
		return nil, err
	}
	s := &subscription{ch: make(chan *cri.ContainerEventResponse, eventBuffer), lost: make(chan struct{}), ctx: ctx}
	r.mu.Lock()
	r.subscribers[s] = struct{}{}
	r.mu.Unlock()
	go func() {
		<-ctx.Done()
		r.mu.Lock()
		delete(r.subscribers, s)
		r.mu.Unlock()
	}()
	return s, nil
}

// DropEvents makes the runtime lose its next n container events, for
// every subscriber, without ending their streams: what a runtime that
// misses an event looks like to the kubelet.
func (r *Runtime) DropEvents(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dropEvents += n
}

// FailEvents makes GetContainerEvents fail with err (nil: succeed
// again), as a runtime without events would.
func (r *Runtime) FailEvents(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.eventsErr = err
}

// EndEventStreams ends every subscriber's stream with
// runtime.ErrEventsLost, as a runtime restart would.
func (r *Runtime) EndEventStreams() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for s := range r.subscribers {
		s.why = "the runtime ended the streams"
		close(s.lost)
		delete(r.subscribers, s)
	}
}

// emit sends a container event to the subscribers; r.mu is held.
func (r *Runtime) emit(c *container, typ cri.ContainerEventType) {
	if r.dropEvents > 0 {
		r.dropEvents--
		return
	}
	ev := &cri.ContainerEventResponse{ContainerId: c.c.Id, ContainerEventType: typ, CreatedAt: r.cfg.Now().UnixNano(),
		PodSandboxId: c.c.PodSandboxId}
	if sb := r.sandboxes[c.c.PodSandboxId]; sb != nil {
		ev.PodSandboxMetadata = sb.Metadata
	}
	for s := range r.subscribers {
		select {
		case s.ch <- ev:
		default:
			s.why = "the subscriber fell behind"
			close(s.lost)
			delete(r.subscribers, s)
		}
	}
}
