package containerd

import (
	"context"
	"errors"
	"fmt"
	"time"

	eventstypes "github.com/containerd/containerd/api/events"
	"github.com/containerd/containerd/events"
	"github.com/containerd/typeurl/v2"

	"minik/kubelet/runtime"
	"minik/proto/cri"
)

// eventTopics are the containerd topics that change a container's CRI
// state. /tasks/oom is not one: an OOM kill of the container's own
// process is followed by its /tasks/exit (watchOOM records the reason),
// and a killed child leaves the container running. /tasks/delete is not
// either: a task is deleted after its exit, which was sent already.
var eventTopics = map[string]cri.ContainerEventType{
	"/containers/create": cri.ContainerEventType_CONTAINER_CREATED_EVENT,
	"/tasks/start":       cri.ContainerEventType_CONTAINER_STARTED_EVENT,
	"/tasks/exit":        cri.ContainerEventType_CONTAINER_STOPPED_EVENT,
	"/containers/delete": cri.ContainerEventType_CONTAINER_DELETED_EVENT,
}

// subscribedTopic carries the marker GetContainerEvents publishes to
// learn that its subscription is live.
const subscribedTopic = "/minik/subscribed"

// subscribeTimeout bounds the wait for the marker.
const subscribeTimeout = 10 * time.Second

// GetContainerEvents subscribes to containerd's container events of this
// runtime's namespace (subscribeLive): from its return on, no event is
// missed.
func (r *Runtime) GetContainerEvents(ctx context.Context) (runtime.ContainerEventStream, error) {
	ctx, cancel := context.WithCancel(r.ctx(ctx))
	var filters []string
	for topic := range eventTopics {
		filters = append(filters, fmt.Sprintf(`namespace==%s,topic==%q`, r.cfg.Namespace, topic))
	}
	ch, errs, err := r.subscribeLive(ctx, filters...)
	if err != nil {
		cancel()
		return nil, err
	}
	return &containerEvents{r: r, ctx: ctx, cancel: cancel, ch: ch, errs: errs, sandboxOf: map[string]string{}}, nil
}

// subscribeLive subscribes to the events of this runtime's namespace that
// filters select. containerd's Subscribe returns before the daemon has
// registered the subscription, so this publishes a marker (every 100ms
// until one comes back) and returns once it arrives through the
// subscription: from then on no event is missed. Events before the
// marker are dropped (they happened before this returns). The
// subscription lasts until ctx ends.
func (r *Runtime) subscribeLive(ctx context.Context, filters ...string) (<-chan *events.Envelope, <-chan error, error) {
	filters = append(filters, fmt.Sprintf(`namespace==%s,topic==%q`, r.cfg.Namespace, subscribedTopic))
	ch, errs := r.client.Subscribe(ctx, filters...)
	token := newID()
	publish := time.NewTicker(100 * time.Millisecond)
	defer publish.Stop()
	timeout := time.After(subscribeTimeout)
	for {
		if err := r.client.EventService().Publish(ctx, subscribedTopic, &eventstypes.ContainerUpdate{ID: token}); err != nil {
			return nil, nil, fmt.Errorf("publishing the subscription marker: %w", err)
		}
	wait:
		for {
			select {
			case env := <-ch:
				if env.Topic != subscribedTopic {
					continue
				}
				if v, err := typeurl.UnmarshalAny(env.Event); err == nil {
					if m, ok := v.(*eventstypes.ContainerUpdate); ok && m.ID == token {
						return ch, errs, nil
					}
				}
			case err := <-errs:
				return nil, nil, fmt.Errorf("subscribing to containerd's events: %w", streamEnd(err))
			case <-timeout:
				return nil, nil, errors.New("subscribing to containerd's events: the subscription did not become live")
			case <-publish.C:
				break wait
			}
		}
	}
}

// followEvents hands each event of a subscription to handle, decoded,
// until the stream or ctx ends.
func followEvents(ctx context.Context, ch <-chan *events.Envelope, errs <-chan error, handle func(any)) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-errs:
			return
		case env := <-ch:
			if env == nil || env.Event == nil {
				continue
			}
			if v, err := typeurl.UnmarshalAny(env.Event); err == nil {
				handle(v)
			}
		}
	}
}

func streamEnd(err error) error {
	if err == nil {
		return errors.New("containerd ended the event stream")
	}
	return err
}

// containerEvents turns containerd's envelopes into container events.
type containerEvents struct {
	r      *Runtime
	ctx    context.Context
	cancel context.CancelFunc
	ch     <-chan *events.Envelope
	errs   <-chan error
	// sandboxOf maps the containers seen to their sandbox, for their
	// delete event (the container record is gone by then).
	sandboxOf map[string]string
}

func (e *containerEvents) Recv() (*cri.ContainerEventResponse, error) {
	for {
		select {
		case env := <-e.ch:
			if ev := e.translate(env); ev != nil {
				return ev, nil
			}
		case err := <-e.errs:
			e.cancel()
			return nil, streamEnd(err)
		case <-e.ctx.Done():
			return nil, e.ctx.Err()
		}
	}
}

// translate returns the container event of env, or nil when it is none
// (a marker, an exec's exit, another kind of container).
func (e *containerEvents) translate(env *events.Envelope) *cri.ContainerEventResponse {
	typ, ok := eventTopics[env.Topic]
	if !ok {
		return nil
	}
	v, err := typeurl.UnmarshalAny(env.Event)
	if err != nil {
		return nil
	}
	var id string
	switch ev := v.(type) {
	case *eventstypes.ContainerCreate:
		id = ev.ID
	case *eventstypes.TaskStart:
		id = ev.ContainerID
	case *eventstypes.TaskExit:
		if ev.ID != ev.ContainerID {
			return nil // an exec's process
		}
		id = ev.ContainerID
	case *eventstypes.ContainerDelete:
		id = ev.ID
	default:
		return nil
	}
	sandboxID, known := e.sandboxOf[id]
	if typ == cri.ContainerEventType_CONTAINER_DELETED_EVENT {
		delete(e.sandboxOf, id)
	} else if !known {
		if sb, ok := e.r.containers.sandbox(id); ok {
			sandboxID = sb // the runtime's own: no need to read its labels
		} else {
			info, err := e.r.client.ContainerService().Get(e.ctx, id)
			if err != nil {
				return nil // already gone: its delete event follows
			}
			if info.Labels[labelKind] != "container" {
				return nil
			}
			sandboxID = info.Labels[labelSandbox]
		}
		e.sandboxOf[id] = sandboxID
	}
	out := &cri.ContainerEventResponse{ContainerId: id, ContainerEventType: typ, CreatedAt: env.Timestamp.UnixNano(), PodSandboxId: sandboxID}
	if rec, err := e.r.sandbox(sandboxID); err == nil {
		out.PodSandboxMetadata = &cri.PodSandboxMetadata{Name: rec.Name, Namespace: rec.Namespace, Uid: rec.UID, Attempt: rec.Attempt}
	}
	return out
}
