package client

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	sigsjson "sigs.k8s.io/json"
)

// Event is one change seen by a watch.
//
// For Added, Modified and Deleted, Object is the object after the change
// (for Deleted, its last state). For Bookmark, Object carries only
// metadata.resourceVersion: the point the stream has reached. For Error,
// Object is nil and Status says what went wrong; code 410 means the
// resourceVersion is too old and the watcher must list again.
type Event[T any] struct {
	Type   watch.EventType
	Object *T
	Status *metav1.Status
}

// Watcher is an open watch stream. Its Events channel closes when the
// stream ends; Err then says why.
type Watcher[T any] struct {
	events chan Event[T]
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// Events returns the channel of events, in the order the server sent them.
func (w *Watcher[T]) Events() <-chan Event[T] { return w.events }

// Stop closes the stream and waits until the Events channel is closed.
// It is safe to call more than once.
func (w *Watcher[T]) Stop() {
	w.cancel()
	<-w.done
}

// Err waits until the stream has ended, then returns nil if the server
// ended it cleanly (for example when timeoutSeconds ran out) or Stop was
// called, and otherwise the error that broke it: a dropped connection, or a
// frame that did not decode.
func (w *Watcher[T]) Err() error {
	<-w.done
	return w.err
}

// Watch opens a watch on the collection in ns ("" for all namespaces),
// starting after opts.ResourceVersion. Set opts.AllowWatchBookmarks to get
// Bookmark events. An error answer before the stream starts, such as 410
// Gone for a too old resourceVersion, is returned as *apierrors.StatusError.
func (t *Typed[T]) Watch(ctx context.Context, ns string, opts metav1.ListOptions) (*Watcher[T], error) {
	opts.Watch = true
	q, err := encodeOptions(&opts)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	cl := t.call(http.MethodGet, ns, "", q, nil)
	resp, err := t.c.send(ctx, cl)
	if err != nil {
		cancel()
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer cancel()
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return nil, decodeError(resp, data, cl)
	}
	w := &Watcher[T]{events: make(chan Event[T]), cancel: cancel, done: make(chan struct{})}
	next := jsonFrames(resp.Body)
	if isProtobuf(resp) {
		next = protobufFrames(resp.Body)
	}
	go w.receive(ctx, resp.Body, next)
	return w, nil
}

// frame is one event of the watch stream, its object still encoded.
type frame struct {
	Type     watch.EventType `json:"type"`
	Object   json.RawMessage `json:"object"`
	protobuf bool            // Object is a protobuf envelope, not JSON
}

// jsonFrames reads a JSON watch stream: {"type":"ADDED","object":{...}}
// values. json.Decoder reads one value at a time, so it does not matter how
// the server splits the stream into chunks or lines.
func jsonFrames(body io.Reader) func() (frame, error) {
	dec := json.NewDecoder(body)
	return func() (frame, error) {
		var f frame
		err := dec.Decode(&f)
		return f, err
	}
}

// protobufFrames reads a protobuf watch stream: a 4-byte big-endian length,
// then a metav1.WatchEvent of that length.
func protobufFrames(body io.Reader) func() (frame, error) {
	// A small buffer: each watch holds it for its whole life, and a
	// frame larger than it is read straight into buf.
	r := bufio.NewReaderSize(body, 4<<10)
	var header [4]byte
	var buf []byte
	return func() (frame, error) {
		if _, err := io.ReadFull(r, header[:]); err != nil {
			return frame{}, err
		}
		n := binary.BigEndian.Uint32(header[:])
		if n > maxProtobufFrame {
			return frame{}, fmt.Errorf("watch frame of %d bytes is over the %d limit", n, maxProtobufFrame)
		}
		if cap(buf) < int(n) {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := io.ReadFull(r, buf); err != nil {
			return frame{}, io.ErrUnexpectedEOF
		}
		var ev metav1.WatchEvent
		if err := ev.Unmarshal(buf); err != nil {
			return frame{}, err
		}
		return frame{Type: watch.EventType(ev.Type), Object: ev.Object.Raw, protobuf: true}, nil
	}
}

// receive decodes frames until the stream ends.
func (w *Watcher[T]) receive(ctx context.Context, body io.ReadCloser, next func() (frame, error)) {
	defer close(w.done)
	defer close(w.events)
	defer body.Close()
	defer w.cancel()
	for {
		f, err := next()
		if err != nil {
			if !errors.Is(err, io.EOF) && ctx.Err() == nil {
				w.err = fmt.Errorf("client: watch stream: %w", err)
			}
			return
		}
		ev, err := decodeEvent[T](f)
		if err != nil {
			w.err = err
			return
		}
		select {
		case w.events <- ev:
		case <-ctx.Done():
			return
		}
	}
}

func decodeEvent[T any](f frame) (Event[T], error) {
	ev := Event[T]{Type: f.Type}
	decode := func(out any) error {
		if f.protobuf {
			return decodeProtobuf(f.Object, out)
		}
		return sigsjson.UnmarshalCaseSensitivePreserveInts(f.Object, out)
	}
	switch f.Type {
	case watch.Added, watch.Modified, watch.Deleted, watch.Bookmark:
		ev.Object = new(T)
		if err := decode(ev.Object); err != nil {
			return ev, fmt.Errorf("client: watch %s event: %w", f.Type, err)
		}
	case watch.Error:
		ev.Status = new(metav1.Status)
		if err := decode(ev.Status); err != nil {
			return ev, fmt.Errorf("client: watch ERROR event: %w", err)
		}
	default:
		return ev, fmt.Errorf("client: watch event of unknown type %q", f.Type)
	}
	return ev, nil
}

// Err returns the Status of an Error event as *apierrors.StatusError, so
// that apierrors.IsGone, IsResourceExpired and client.IsGone work on it. It
// returns nil for other events.
func (e Event[T]) Err() error {
	if e.Type != watch.Error || e.Status == nil {
		return nil
	}
	return &apierrors.StatusError{ErrStatus: *e.Status}
}
