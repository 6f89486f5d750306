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

// applyPatch applies a patch of the given media type to the JSON of
// current (a typed object, whose struct tags drive strategic merge).
func applyPatch(patchType string, current runtime.Object, patch []byte) ([]byte, error) {
	original, err := json.Marshal(current)
	if err != nil {
		return nil, err
	}
	var out []byte
	switch patchType {
	case jsonPatchType:
		p, err := jsonpatch.DecodePatch(patch)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid JSON patch: %v", err))
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
