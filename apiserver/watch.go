package apiserver

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"minik/apiserver/storage"
)

// initialEventsEndAnnotation marks the bookmark that ends the initial
// events of a watch with sendInitialEvents=true.
const initialEventsEndAnnotation = "k8s.io/initial-events-end"

// watch streams events as chunked JSON, one {"type","object"} per line, or
// as length-prefixed protobuf WatchEvents when the client prefers protobuf.
//
//	resourceVersion ""/"0": synthetic ADDED events for the current state,
//	                        then changes after it;
//	resourceVersion N:      changes after N, or 410 Gone if N is older
//	                        than the watch cache's window.
func (h *resourceHandler) watch(w http.ResponseWriter, r *http.Request, ri *requestInfo) {
	closeWatch, err := h.srv.limiter.openWatch(UserFrom(r.Context()))
	if err != nil {
		writeError(w, r, err)
		return
	}
	defer closeWatch()
	q := r.URL.Query()
	pred, err := newPredicate(h.res, ri.namespace, q.Get("labelSelector"), q.Get("fieldSelector"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	if ri.name != "" {
		// A watch on one object: kubectl get NAME -w uses a field selector instead.
		pred.fields = fieldsAnd(pred.fields, "metadata.name", ri.name)
	}
	rv, err := storage.ParseRV(q.Get("resourceVersion"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	bookmarks := q.Get("allowWatchBookmarks") == "true"
	sendInitial := q.Get("sendInitialEvents")
	if sendInitial == "true" && rv != 0 && q.Get("resourceVersionMatch") != "NotOlderThan" {
		writeError(w, r, apierrors.NewBadRequest("sendInitialEvents requires resourceVersionMatch=NotOlderThan"))
		return
	}
	timeout := time.Duration(1800+rand.IntN(1800)) * time.Second
	if t := q.Get("timeoutSeconds"); t != "" {
		n, err := strconv.ParseInt(t, 10, 64)
		if err != nil || n < 0 {
			writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("invalid timeoutSeconds %q", t)))
			return
		}
		if n > 0 {
			timeout = time.Duration(n) * time.Second
		}
	}

	// The initial state, when the client asked for it.
	var initial []runtime.Object
	from := rv
	wantInitial := sendInitial == "true" || (sendInitial == "" && rv == 0)
	if wantInitial || rv == 0 {
		// From the watch cache, as upstream: unset is a consistent read,
		// 0 any state, N not older than N.
		opts := storage.ListOptions{Namespace: ri.namespace, ResourceVersion: q.Get("resourceVersion")}
		if rv != 0 {
			opts.ResourceVersionMatch = metav1.ResourceVersionMatchNotOlderThan
		}
		if !pred.labels.Empty() || !pred.fields.Empty() {
			opts.Match = pred.Matches
		}
		page, err := h.store.ServeList(r.Context(), opts)
		if err == nil && wantInitial {
			err = page.Each(func(obj runtime.Object) error { initial = append(initial, obj); return nil })
		}
		if err != nil {
			writeError(w, r, err)
			return
		}
		from = page.ResourceVersion
	}
	watcher, err := h.store.Cache().Watch(from, pred.watchFilter(), bookmarks)
	if err != nil {
		writeError(w, r, err)
		return
	}
	defer watcher.Stop()

	asMetadata, metadataOnly := metadataRequested(r, false)
	asTable := !metadataOnly && tableRequested(r)
	// Custom objects have no protobuf form: JSON, as upstream answers.
	asProtobuf := !asTable && wantsProtobuf(r) && h.res.Custom == nil
	if metadataOnly {
		asProtobuf = asMetadata.protobuf // PartialObjectMetadata has one, for every kind
	}
	// Frames are shared by every watcher of the store: the views that
	// share it (events.k8s.io Events, a CRD's versions) each have a key.
	view := h.res.APIVersion()
	format := view + "/json"
	switch {
	case metadataOnly:
		format = asMetadata.format()
	case asTable:
		format = view + "/table/" + includeObject(r)
	case asProtobuf:
		format = view + "/protobuf"
	}
	encodeObj := func(obj runtime.Object) ([]byte, error) {
		obj, err := h.out(obj)
		if err != nil {
			return nil, err
		}
		if asTable {
			return tableJSON(r, h, obj)
		}
		return json.Marshal(obj)
	}
	frame := func(typ watch.EventType, obj runtime.Object) []byte {
		if metadataOnly {
			return asMetadata.frame(typ, obj)
		}
		if asProtobuf {
			obj, err := h.out(obj)
			if err != nil {
				return protobufErrorFrame(err)
			}
			return protobufFrame(typ, obj)
		}
		data, err := encodeObj(obj)
		if err != nil {
			st, _ := json.Marshal(toStatus(err))
			return []byte(`{"type":"ERROR","object":` + string(st) + "}\n")
		}
		return []byte(`{"type":"` + string(typ) + `","object":` + string(data) + "}\n")
	}

	bookmark := func(rev int64, initialEnd bool) []byte {
		if metadataOnly {
			return asMetadata.frame(watch.Bookmark, h.bookmarkObject(rev, initialEnd))
		}
		return h.bookmarkFrame(rev, initialEnd, asProtobuf)
	}

	flusher, _ := w.(http.Flusher)
	contentType := "application/json"
	if asProtobuf {
		contentType = protobufWatchStream
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Transfer-Encoding", "chunked")
	w.WriteHeader(http.StatusOK)
	write := func(b []byte) bool {
		_, err := w.Write(b)
		return err == nil
	}
	for _, obj := range initial {
		if !write(frame(watch.Added, obj)) {
			return
		}
		h.watchEvents.Inc()
	}
	if sendInitial == "true" && bookmarks {
		if !write(bookmark(from, true)) {
			return
		}
	}
	filter := watcher.Filter()
	for _, ev := range watcher.Initial() {
		typ, ok := filter(ev)
		if !ok {
			continue
		}
		if !write(ev.Frame(format+string(typ), func() []byte { return frame(typ, ev.Object) })) {
			return
		}
		h.watchEvents.Inc()
	}
	if flusher != nil {
		flusher.Flush()
	}

	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	var batch []storage.Delivery
	for {
		select {
		case <-r.Context().Done():
			return
		case <-deadline.C:
			return
		case <-watcher.Ready():
			var open bool
			batch, open = watcher.Take(batch)
			for _, d := range batch {
				var b []byte
				if d.Event == nil {
					b = bookmark(d.Rev, false)
				} else {
					ev, typ := d.Event, d.Type
					b = ev.Frame(format+string(typ), func() []byte { return frame(typ, ev.Object) })
				}
				if !write(b) {
					return
				}
				if d.Event != nil {
					h.watchEvents.Inc()
				}
			}
			if !open {
				return // overflow or shutdown: the client re-watches
			}
			// One flush per batch: batches under load.
			if flusher != nil {
				flusher.Flush()
			}
		}
	}
}

// bookmarkFrame is a BOOKMARK event: an empty object of the resource's
// kind carrying only the resourceVersion.
func (h *resourceHandler) bookmarkFrame(rev int64, initialEnd, asProtobuf bool) []byte {
	obj := h.bookmarkObject(rev, initialEnd)
	if asProtobuf {
		return protobufFrame(watch.Bookmark, obj)
	}
	data, _ := json.Marshal(obj)
	return []byte(`{"type":"BOOKMARK","object":` + string(data) + "}\n")
}

// bookmarkObject is an empty object of the resource's kind at rev.
func (h *resourceHandler) bookmarkObject(rev int64, initialEnd bool) runtime.Object {
	obj := h.res.New()
	ta, _ := meta.TypeAccessor(obj)
	ta.SetAPIVersion(h.res.APIVersion())
	ta.SetKind(h.res.Kind)
	m, _ := meta.Accessor(obj)
	m.SetResourceVersion(strconv.FormatInt(rev, 10))
	if initialEnd {
		m.SetAnnotations(map[string]string{initialEventsEndAnnotation: "true"})
	}
	return obj
}

// protobufFrame is one frame of a protobuf watch; an object that fails to
// encode becomes an ERROR event carrying the Status.
func protobufFrame(typ watch.EventType, obj runtime.Object) []byte {
	frame, err := protobufWatchFrame(string(typ), obj)
	if err != nil {
		return protobufErrorFrame(err)
	}
	return frame
}

func protobufErrorFrame(err error) []byte {
	frame, _ := protobufWatchFrame(string(watch.Error), toStatus(err))
	return frame
}

func metaOf(obj runtime.Object) metav1.Object {
	m, err := meta.Accessor(obj)
	if err != nil {
		return &metav1.ObjectMeta{}
	}
	return m
}
