package apiserver

import (
	"encoding/json"
	"log/slog"
	"mime"
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// Metadata-only answers, for client-go's metadata client (the metadata
// informers of controller-runtime's OnlyMetadata and of
// kube-controller-manager's garbage collector and quota): a client whose
// Accept asks for `as=PartialObjectMetadata;g=meta.k8s.io;v=v1` (a LIST:
// `as=PartialObjectMetadataList`) gets each object's metadata only, in
// JSON or protobuf, as kube-apiserver answers. A watch's events and its
// bookmarks carry PartialObjectMetadata too: the client's decoder knows
// no other kind.
//
//	Accept, in order ─▶ first media type minik serves
//	   as=PartialObjectMetadata[List];g=meta.k8s.io;v=v1|v1beta1 ─▶ metadataForm{gv, protobuf?}
//	   as=Table, or plain JSON/YAML/protobuf ─▶ not metadata
//	object ─▶ meta.AsPartialObjectMetadata ─▶ kind PartialObjectMetadata, apiVersion meta.k8s.io/VERSION

// metadataForm is how a metadata-only answer is written.
type metadataForm struct {
	groupVersion string // meta.k8s.io/v1 or meta.k8s.io/v1beta1, as asked
	protobuf     bool
}

// metadataRequested reports whether the first media type in Accept that
// minik serves asks for metadata only: PartialObjectMetadataList for a
// list, PartialObjectMetadata for anything else.
func metadataRequested(r *http.Request, list bool) (metadataForm, bool) {
	want := "PartialObjectMetadata"
	if list {
		want = "PartialObjectMetadataList"
	}
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		as, isConversion := params["as"]
		switch {
		case !isConversion:
			if mt == "application/json" || mt == "application/yaml" || mt == protobufMediaType || mt == "*/*" || mt == "application/*" {
				return metadataForm{}, false // a plain form came first
			}
		case as == "Table":
			return metadataForm{}, false
		case as == want && params["g"] == metav1.GroupName && (params["v"] == "v1" || params["v"] == "v1beta1"):
			if mt == "application/json" || mt == protobufMediaType {
				return metadataForm{groupVersion: metav1.GroupName + "/" + params["v"], protobuf: mt == protobufMediaType}, true
			}
		}
	}
	return metadataForm{}, false
}

// partialOf is obj's metadata, as a PartialObjectMetadata of f's version.
func (f metadataForm) partialOf(obj runtime.Object) *metav1.PartialObjectMetadata {
	p := meta.AsPartialObjectMetadata(metaOf(obj))
	p.APIVersion, p.Kind = f.groupVersion, "PartialObjectMetadata"
	return p
}

// write answers with v (a PartialObjectMetadata or its list).
func (f metadataForm) write(w http.ResponseWriter, r *http.Request, code int, v runtime.Object) {
	if f.protobuf {
		data, _, err := encodeProtobuf(v)
		if err != nil {
			slog.Error("encoding protobuf response", "path", r.URL.Path, "err", err)
			writeError(w, r, err)
			return
		}
		writeBody(w, r, code, protobufMediaType, data)
		return
	}
	writeJSONBody(w, r, code, v)
}

// writeList answers a LIST with the metadata of each item: JSON is
// streamed an item at a time (each keeps its kind, as upstream's); the
// protobuf list is built first, its items' bodies left out.
func (f metadataForm) writeList(w http.ResponseWriter, r *http.Request, lm metav1.ListMeta, each func(func(runtime.Object) error) error) {
	partials := func(yield func(runtime.Object) error) error {
		return each(func(obj runtime.Object) error { return yield(f.partialOf(obj)) })
	}
	if !f.protobuf {
		bw := newBodyWriter(w, r, http.StatusOK, "application/json")
		err := streamJSONList(bw, "PartialObjectMetadataList", f.groupVersion, lm, nil, partials)
		if err == nil {
			err = bw.Close()
		}
		finishStream(w, r, bw, err)
		return
	}
	list := &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{APIVersion: f.groupVersion, Kind: "PartialObjectMetadataList"}, ListMeta: lm}
	if err := partials(func(obj runtime.Object) error {
		list.Items = append(list.Items, *obj.(*metav1.PartialObjectMetadata))
		return nil
	}); err != nil {
		writeError(w, r, err)
		return
	}
	f.write(w, r, http.StatusOK, list)
}

// frame is one watch event carrying obj's metadata.
func (f metadataForm) frame(typ watch.EventType, obj runtime.Object) []byte {
	p := f.partialOf(obj)
	if f.protobuf {
		return protobufFrame(typ, p)
	}
	data, err := json.Marshal(p)
	if err != nil {
		st, _ := json.Marshal(toStatus(err))
		return []byte(`{"type":"ERROR","object":` + string(st) + "}\n")
	}
	return []byte(`{"type":"` + string(typ) + `","object":` + string(data) + "}\n")
}

// format names the frames of this form in the watch cache's shared
// frames (one encoding per event for all such watchers).
func (f metadataForm) format() string {
	if f.protobuf {
		return f.groupVersion + "/metadata/protobuf"
	}
	return f.groupVersion + "/metadata/json"
}
