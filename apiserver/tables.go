package apiserver

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"minik/apiserver/printers"
)

// tableRequested reports whether the client (kubectl get) asked for the
// server-side Table form.
func tableRequested(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		if strings.Contains(part, "as=Table") {
			return true
		}
		if strings.TrimSpace(part) == "application/json" || strings.HasPrefix(strings.TrimSpace(part), "application/json;") && !strings.Contains(part, "as=") {
			return false // a plain JSON preference came first
		}
	}
	return false
}

// onlyConversions reports whether every media type the client accepts
// asks for a conversion (as=Table, as=PartialObjectMetadata): a
// resource that has no Table form, such as an access review, can then
// answer nothing the client takes.
func onlyConversions(r *http.Request) bool {
	accept := strings.TrimSpace(r.Header.Get("Accept"))
	if accept == "" {
		return false
	}
	for _, part := range strings.Split(accept, ",") {
		if !strings.Contains(part, "as=") {
			return false
		}
	}
	return true
}

// errNoTableForm is kube-apiserver's answer when Accept names only
// conversions that a resource without a Table form cannot make: its
// negotiation finds no media type to answer with.
var errNoTableForm = &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure,
	Code: http.StatusNotAcceptable, Reason: metav1.StatusReasonNotAcceptable,
	Message: "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"}}

func includeObject(r *http.Request) string {
	if v := r.URL.Query().Get("includeObject"); v != "" {
		return v
	}
	return "Metadata"
}

// buildTable renders objects as a Table.
func buildTable(r *http.Request, h *resourceHandler, listMeta metav1.ListMeta, objs []runtime.Object) (*metav1.Table, error) {
	var t *metav1.Table
	var err error
	if v := h.res.Custom; v != nil {
		t, err = printers.CustomTable(v.TableColumns(), func(obj runtime.Object, now time.Time) []any {
			u, _ := obj.(*unstructured.Unstructured)
			if u == nil {
				return nil
			}
			return v.Cells(u.Object, now, printers.Age)
		}, objs, includeObject(r), time.Now())
	} else {
		t, err = printers.ToTable(h.res.Kind, objs, includeObject(r), time.Now())
	}
	if errors.Is(err, printers.ErrUnknownIncludeObject) {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if err != nil {
		return nil, err
	}
	t.ListMeta = listMeta
	return t, nil
}

func (s *Server) writeTable(w http.ResponseWriter, r *http.Request, h *resourceHandler, listMeta metav1.ListMeta, objs []runtime.Object) {
	t, err := buildTable(r, h, listMeta, objs)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSONBody(w, r, http.StatusOK, t)
}

// writeMaybeTable answers with one object, as a one-row Table or as its
// metadata only if asked.
func (s *Server) writeMaybeTable(w http.ResponseWriter, r *http.Request, h *resourceHandler, code int, obj runtime.Object) {
	if f, ok := metadataRequested(r, false); ok {
		if _, isStatus := obj.(*metav1.Status); !isStatus {
			f.write(w, r, code, f.partialOf(obj))
			return
		}
	}
	if !tableRequested(r) {
		writeObject(w, r, code, obj)
		return
	}
	m := metaOf(obj)
	t, err := buildTable(r, h, metav1.ListMeta{ResourceVersion: m.GetResourceVersion()}, []runtime.Object{obj})
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSONBody(w, r, code, t)
}

// tableJSON renders one object as a one-row Table (for watch frames).
func tableJSON(r *http.Request, h *resourceHandler, obj runtime.Object) ([]byte, error) {
	t, err := buildTable(r, h, metav1.ListMeta{ResourceVersion: metaOf(obj).GetResourceVersion()}, []runtime.Object{obj})
	if err != nil {
		return nil, err
	}
	return json.Marshal(t)
}
