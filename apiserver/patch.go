package apiserver

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// The patch media types, as Kubernetes names them.
const (
	jsonPatchType           = "application/json-patch+json"
	mergePatchType          = "application/merge-patch+json"
	strategicMergePatchType = "application/strategic-merge-patch+json"
	applyPatchType          = "application/apply-patch+yaml"
)

var patchTypes = []string{jsonPatchType, mergePatchType, strategicMergePatchType}

// The JSON patch limits kube-apiserver sets against patches that grow a
// document without bound (the CVE-2019-1002100 class: each "copy" may
// double the document): at most maxJSONPatchOperations operations, and
// at most jsonPatchMaxCopyBytes copied in all.
const (
	maxJSONPatchOperations = 10000
	jsonPatchMaxCopyBytes  = 3 << 20
)

func init() {
	// The library keeps this limit in a package variable; minik is its
	// only user in the process.
	jsonpatch.AccumulatedCopySizeLimit = jsonPatchMaxCopyBytes
}

// applyPatch applies a patch of the given media type to the JSON of
// current (a typed value, whose struct tags drive strategic merge).
func applyPatch(patchType string, current any, patch []byte) (out []byte, err error) {
	defer func() {
		// The patch libraries panic on some malformed directives (e.g.
		// "$retainKeys": [{}]); that is the client's error, not ours.
		if r := recover(); r != nil {
			out, err = nil, apierrors.NewBadRequest(fmt.Sprintf("invalid %s: %v", patchType, r))
		}
	}()
	original, err := json.Marshal(current)
	if err != nil {
		return nil, err
	}
	switch patchType {
	case jsonPatchType:
		p, err := jsonpatch.DecodePatch(patch)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid JSON patch: %v", err))
		}
		if len(p) > maxJSONPatchOperations {
			return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf(
				"The allowed maximum operations in a JSON patch is %d, got %d", maxJSONPatchOperations, len(p)))
		}
		out, err = p.Apply(original)
		if err != nil {
			return nil, statusError(422, "Invalid", fmt.Sprintf("the JSON patch could not be applied: %v", err))
		}
	case mergePatchType:
		if !json.Valid(patch) {
			return nil, apierrors.NewBadRequest("invalid JSON merge patch: body is not valid JSON")
		}
		out, err = jsonpatch.MergePatch(original, patch)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid JSON merge patch: %v", err))
		}
	case strategicMergePatchType:
		var m map[string]any
		if err := json.Unmarshal(patch, &m); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid strategic merge patch: %v", err))
		}
		out, err = strategicpatch.StrategicMergePatch(original, patch, current)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid strategic merge patch: %v", err))
		}
	default:
		return nil, statusError(415, "UnsupportedMediaType", "unsupported patch type "+patchType)
	}
	return out, nil
}

// statusPatch is a merge or strategic merge patch whose only field is
// status, on a kind whose status is a struct: such a patch reaches
// nothing else, so it is applied to the status alone, as the whole
// object's patch would apply it. The spec (most of a pod) is then neither
// encoded, nor merged, nor decoded again: this is the patch the scheduler
// sends for every pod it cannot place, and for every victim it preempts.
type statusPatch struct {
	status reflect.Value // the object's Status field
	patch  []byte        // the patch's status
}

// asStatusPatch returns the statusPatch of patch on obj (a pointer to a
// typed object), or false when patch is not of that shape.
func asStatusPatch(patchType string, obj runtime.Object, patch []byte) (statusPatch, bool) {
	if patchType != mergePatchType && patchType != strategicMergePatchType {
		return statusPatch{}, false
	}
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return statusPatch{}, false
	}
	field, ok := v.Elem().Type().FieldByName("Status")
	if !ok || field.Type.Kind() != reflect.Struct || strings.Split(field.Tag.Get("json"), ",")[0] != "status" {
		return statusPatch{}, false
	}
	status := v.Elem().FieldByIndex(field.Index)
	var fields map[string]json.RawMessage
	if json.Unmarshal(patch, &fields) != nil || len(fields) != 1 {
		return statusPatch{}, false
	}
	raw, ok := fields["status"]
	if !ok || len(raw) == 0 || raw[0] != '{' {
		return statusPatch{}, false // null or not an object: the whole path
	}
	return statusPatch{status: status, patch: raw}, true
}

// patchedDocument is the patched status as the JSON of an object that
// holds only it, to be decoded (strictly, with the same field paths) as
// the whole patched object would be.
func (sp statusPatch) patchedDocument(patchType string) ([]byte, error) {
	out, err := applyPatch(patchType, sp.status.Interface(), sp.patch)
	if err != nil {
		return nil, err
	}
	return append(append([]byte(`{"status":`), out...), '}'), nil
}

// set puts the status of decoded (an object of the same kind, decoded
// from patchedDocument) into the object the patch was taken on.
func (sp statusPatch) set(decoded runtime.Object) {
	sp.status.Set(reflect.ValueOf(decoded).Elem().FieldByName("Status"))
}
