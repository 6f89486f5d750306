package openapi

import (
	"encoding/json"
	"fmt"

	"k8s.io/kube-openapi/pkg/validation/spec"
)

// Models returns the definitions of the v2 document as kube-openapi
// schemas, keyed by definition name, each served kind carrying its
// x-kubernetes-group-version-kind: the input of server-side apply's type
// converter (k8s.io/apimachinery/pkg/util/managedfields.NewTypeConverter).
func Models(resources []Resource) (map[string]*spec.Schema, error) {
	defs := build(false, resources, resources).defs
	out := make(map[string]*spec.Schema, len(defs))
	for name, def := range defs {
		data, err := json.Marshal(def)
		if err != nil {
			return nil, err
		}
		s := &spec.Schema{}
		if err := json.Unmarshal(data, s); err != nil {
			return nil, fmt.Errorf("definition %s: %w", name, err)
		}
		out[name] = s
	}
	return out, nil
}
