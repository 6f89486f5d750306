package apiserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"minik/apiserver/storage"
)

// A list is written while its items are read (from the watch cache's
// stored bytes, or etcd's batches), one item decoded and encoded at a
// time, so a list of 40,000 pods never exists whole in memory, neither as
// objects nor as a body:
//
//	JSON      {"kind":"PodList","apiVersion":"v1","metadata":{…},"items":[ item, item, … ]}
//	protobuf  "k8s\0" + runtime.Unknown{typeMeta, raw: PodList{1: metadata, 2: item, 2: item, …}}
//	          (raw's length comes first: the cache knows each item's size)
//	Table     {"kind":"Table",…,"columnDefinitions":[…],"rows":[ rows of 500 items at a time ]}
//	YAML      the JSON list converted whole, so its items carry no kind either
//	          (rarely asked for a large list)
//
// bodyWriter gzips the body when it is large and the client accepts it.

// writeList answers a LIST with page.
func (h *resourceHandler) writeList(w http.ResponseWriter, r *http.Request, page *storage.Page) {
	lm := metav1.ListMeta{ResourceVersion: strconv.FormatInt(page.ResourceVersion, 10),
		Continue: page.Continue, RemainingItemCount: page.RemainingItemCount}
	each := page.Each
	if h.conv != nil {
		each = func(yield func(runtime.Object) error) error {
			return page.Each(func(obj runtime.Object) error {
				out, err := h.out(obj)
				if err != nil {
					return err
				}
				return yield(out)
			})
		}
	}
	if f, ok := metadataRequested(r, true); ok {
		f.writeList(w, r, lm, each)
		return
	}
	var bw *bodyWriter
	var err error
	switch {
	case tableRequested(r):
		bw = newBodyWriter(w, r, http.StatusOK, "application/json")
		err = h.writeTableList(bw, r, lm, each)
	case wantsProtobuf(r) && h.protobufList():
		bw = newBodyWriter(w, r, http.StatusOK, protobufMediaType)
		size, sized := page.ProtobufSize()
		eachProtobuf := page.EachProtobuf()
		if h.conv != nil {
			sized, eachProtobuf = false, nil
		}
		err = h.writeProtobufList(bw, lm, each, eachProtobuf, size, sized)
	case wantsYAML(r):
		// The JSON list, in YAML (as kube-apiserver: its items without
		// kind); YAML is for people, so the list is small enough to hold.
		var buf bytes.Buffer
		err := h.writeJSONList(&buf, lm, each)
		var data []byte
		if err == nil {
			data, err = yaml.JSONToYAML(buf.Bytes())
		}
		if err != nil {
			writeError(w, r, err)
			return
		}
		writeBody(w, r, http.StatusOK, "application/yaml", data)
		return
	default:
		bw = newBodyWriter(w, r, http.StatusOK, "application/json")
		err = h.writeJSONList(bw, lm, each)
	}
	if err == nil {
		err = bw.Close()
	}
	finishStream(w, r, bw, err)
}

// finishStream ends a streamed list that failed with err (nil: done).
func finishStream(w http.ResponseWriter, r *http.Request, bw *bodyWriter, err error) {
	if err == nil {
		return
	}
	if !bw.Started() {
		writeError(w, r, err)
		return
	}
	// Half a body is out: as kube-apiserver, drop the connection so the
	// client sees an error, never a short list.
	slog.Error("list failed while streaming", "path", r.URL.Path, "err", err)
	panic(http.ErrAbortHandler)
}

// writeJSONList writes the list's JSON, one item at a time.
func (h *resourceHandler) writeJSONList(bw io.Writer, lm metav1.ListMeta, each func(func(runtime.Object) error) error) error {
	// Items of a built-in kind go without their kind and apiVersion, as
	// kube-apiserver writes them (the list says them once; clients fill
	// them in). Custom resources keep theirs, as upstream: their JSON
	// starts with apiVersion, so the prefix never matches.
	typeMeta := []byte(fmt.Sprintf(`{"kind":%q,"apiVersion":%q,`, h.res.Kind, h.res.APIVersion()))
	return streamJSONList(bw, h.res.Kind+"List", h.res.APIVersion(), lm, typeMeta, each)
}

// streamJSONList writes a list of kind listKind whose items each yields,
// encoding one item at a time; an item's JSON that starts with
// stripTypeMeta (nil: none) goes without it.
func streamJSONList(bw io.Writer, listKind, apiVersion string, lm metav1.ListMeta, stripTypeMeta []byte, each func(func(runtime.Object) error) error) error {
	head, err := json.Marshal(lm)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(bw, `{"kind":%q,"apiVersion":%q,"metadata":%s,"items":[`, listKind, apiVersion, head); err != nil {
		return err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf) // a newline after each item, which JSON allows
	var sep []byte
	if err := each(func(obj runtime.Object) error {
		buf.Reset()
		if err := enc.Encode(obj); err != nil {
			return err
		}
		item := buf.Bytes()
		if rest, ok := bytes.CutPrefix(item, stripTypeMeta); ok && stripTypeMeta != nil {
			item = rest
			sep = append(sep, '{')
		}
		if _, err := bw.Write(sep); err != nil {
			return err
		}
		sep = append(sep[:0], ',')
		_, err := bw.Write(item)
		return err
	}); err != nil {
		return err
	}
	_, err = bw.Write([]byte("]}"))
	return err
}

// protobufList reports whether the resource's list has a protobuf form
// (custom resources answer JSON, as upstream).
func (h *resourceHandler) protobufList() bool {
	_, ok := h.res.NewList().(protoObject)
	return ok
}

// writeProtobufList writes the list in Kubernetes' protobuf envelope. The
// envelope's raw field is length-prefixed, so the items' size must be
// known first: the cache gives it for a whole list (sized); otherwise (a
// page, a selection: small) the items are encoded first. A whole list
// from the cache comes with eachProtobuf: its items' protobuf made from
// the stored bytes, never decoded.
func (h *resourceHandler) writeProtobufList(bw *bodyWriter, lm metav1.ListMeta, each func(func(runtime.Object) error) error, eachProtobuf func(func([]byte) error) error, itemsSize int, sized bool) error {
	var encoded [][]byte
	if !sized {
		itemsSize = 0
		if err := each(func(obj runtime.Object) error {
			data, err := marshalProtobuf(obj)
			encoded = append(encoded, data)
			itemsSize += protowire.SizeTag(2) + protowire.SizeBytes(len(data))
			return err
		}); err != nil {
			return err
		}
	}
	metaBytes, err := lm.Marshal()
	if err != nil {
		return err
	}
	typeMeta, err := (&runtime.TypeMeta{APIVersion: h.res.APIVersion(), Kind: h.res.Kind + "List"}).Marshal()
	if err != nil {
		return err
	}
	// runtime.Unknown: 1 typeMeta, 2 raw (the list: 1 metadata, 2 each
	// item), 3 contentEncoding, 4 contentType (empty, written as upstream).
	listHead := protowire.AppendTag(nil, 1, protowire.BytesType)
	listHead = protowire.AppendBytes(listHead, metaBytes)
	head := append([]byte(nil), protobufMagic...)
	head = protowire.AppendTag(head, 1, protowire.BytesType)
	head = protowire.AppendBytes(head, typeMeta)
	head = protowire.AppendTag(head, 2, protowire.BytesType)
	head = protowire.AppendVarint(head, uint64(len(listHead)+itemsSize))
	head = append(head, listHead...)
	if _, err := bw.Write(head); err != nil {
		return err
	}
	written := 0
	writeItem := func(data []byte) error {
		frame := protowire.AppendTag(make([]byte, 0, 8), 2, protowire.BytesType)
		frame = protowire.AppendVarint(frame, uint64(len(data)))
		written += len(frame) + len(data)
		if _, err := bw.Write(frame); err != nil {
			return err
		}
		_, err := bw.Write(data)
		return err
	}
	if sized && eachProtobuf != nil {
		err = eachProtobuf(writeItem)
	} else if sized {
		err = each(func(obj runtime.Object) error {
			data, err := marshalProtobuf(obj)
			if err != nil {
				return err
			}
			return writeItem(data)
		})
	} else {
		for _, data := range encoded {
			if err = writeItem(data); err != nil {
				break
			}
		}
	}
	if err != nil {
		return err
	}
	if written != itemsSize {
		return fmt.Errorf("protobuf list items took %d bytes, %d announced", written, itemsSize)
	}
	tail := protowire.AppendTag(nil, 3, protowire.BytesType)
	tail = protowire.AppendBytes(tail, nil)
	tail = protowire.AppendTag(tail, 4, protowire.BytesType)
	tail = protowire.AppendBytes(tail, nil)
	_, err = bw.Write(tail)
	return err
}

// marshalProtobuf encodes one item of a list.
func marshalProtobuf(obj runtime.Object) ([]byte, error) {
	po, ok := obj.(protoObject)
	if !ok {
		return nil, fmt.Errorf("%T has no protobuf form", obj)
	}
	return po.Marshal()
}

// tableChunk is how many objects become Table rows at a time.
var tableChunk = 500

// writeTableList writes a Table (kubectl get) whose rows are made from
// tableChunk objects at a time, so that neither the objects nor the rows
// are held whole.
func (h *resourceHandler) writeTableList(bw *bodyWriter, r *http.Request, lm metav1.ListMeta, each func(func(runtime.Object) error) error) error {
	chunk := make([]runtime.Object, 0, tableChunk)
	started, rows := false, 0
	flush := func() error {
		t, err := buildTable(r, h, lm, chunk)
		if err != nil {
			return err
		}
		chunk = chunk[:0]
		if !started {
			started = true
			head, err := json.Marshal(lm)
			if err != nil {
				return err
			}
			cols, err := json.Marshal(t.ColumnDefinitions)
			if err != nil {
				return err
			}
			if _, err := fmt.Fprintf(bw, `{"kind":%q,"apiVersion":%q,"metadata":%s,"columnDefinitions":%s,"rows":[`, t.Kind, t.APIVersion, head, cols); err != nil {
				return err
			}
		}
		for _, row := range t.Rows {
			data, err := json.Marshal(row)
			if err != nil {
				return err
			}
			if rows > 0 {
				data = append([]byte{','}, data...)
			}
			rows++
			if _, err := bw.Write(data); err != nil {
				return err
			}
		}
		return nil
	}
	if err := each(func(obj runtime.Object) error {
		chunk = append(chunk, obj)
		if len(chunk) < tableChunk {
			return nil
		}
		return flush()
	}); err != nil {
		return err
	}
	if !started || len(chunk) > 0 {
		if err := flush(); err != nil {
			return err
		}
	}
	_, err := bw.Write([]byte("]}"))
	return err
}
