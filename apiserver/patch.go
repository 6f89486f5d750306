package apiserver

import (
	"encoding/json"
	"fmt"

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
// current (a typed object, whose struct tags drive strategic merge).
func applyPatch(patchType string, current runtime.Object, patch []byte) (out []byte, err error) {
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
