// Package registry lists every resource the apiserver serves: its names,
// scope, Go types and the few per-resource rules (status split, field
// selectors) that the generic REST handlers need.
package registry

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"minik/apiserver/crd"
)

// Resource describes one served resource type.
type Resource struct {
	Group      string // "" for the core group
	Version    string
	Kind       string
	Resource   string // plural, lower case: "pods"
	Singular   string
	Namespaced bool
	ShortNames []string
	Categories []string

	// New and NewList return empty typed objects (e.g. &corev1.Pod{}).
	New     func() runtime.Object
	NewList func() runtime.Object

	// Subresources served besides the main resource: "status", "scale",
	// "binding", "eviction", "log", "exec", "portforward".
	Subresources []string

	// HasStatus means spec and status are split: a main update keeps the
	// stored status and a /status update keeps everything but status.
	HasStatus bool

	// Warning, if set, goes to every request for this resource as a
	// "299" Warning header (upstream's deprecation warnings).
	Warning string

	// NoGeneration means the kind keeps no metadata.generation although
	// its status is split (upstream's Service strategy sets none).
	NoGeneration bool

	// SpecGeneration means the kind keeps metadata.generation although
	// its status is not split (upstream's DeviceClass and ResourceSlice
	// strategies): 1 on create, one more at each change of the spec.
	SpecGeneration bool

	// Fields returns the values of the field selector keys this resource
	// supports besides metadata.name and metadata.namespace.
	Fields func(obj runtime.Object) map[string]string

	// Verbs are the verbs served; nil means every CRUD verb (Verbs()).
	Verbs []string

	// Virtual resources are not stored: a create is answered by computing
	// the object's status (the access and identity reviews).
	Virtual bool

	// Computed resources are not stored either: get and list compute
	// them on each request (the metrics.k8s.io usage, from the kubelets).
	Computed bool

	// StorageOf names the resource whose storage this one shares (the
	// events.k8s.io Event view of core Events, autoscaling/v1 of v2
	// HorizontalPodAutoscalers); empty for the usual case.
	StorageOf string

	// Custom, for a resource that a CustomResourceDefinition defines, is
	// that CRD version's rules (schema, subresources, printer columns);
	// its objects are *unstructured.Unstructured. Nil for built-in kinds.
	Custom *crd.Version
}

// GroupVersion returns the resource's API group and version.
func (r *Resource) GroupVersion() schema.GroupVersion {
	return schema.GroupVersion{Group: r.Group, Version: r.Version}
}

// GroupResource returns the group and plural name, used in error messages.
func (r *Resource) GroupResource() schema.GroupResource {
	return schema.GroupResource{Group: r.Group, Resource: r.Resource}
}

// APIVersion is the apiVersion string objects of this resource carry.
func (r *Resource) APIVersion() string {
	return r.GroupVersion().String()
}

// KeyPrefix is the etcd prefix under which the objects live, following
// Kubernetes' layout: /registry/<group>/<resource>/ (no group for core).
func (r *Resource) KeyPrefix() string {
	if r.Group == "" || r.Group == "apps" || r.Group == "batch" {
		// Kubernetes keeps core and the old extension groups without a group segment.
		return "/registry/" + r.Resource + "/"
	}
	return "/registry/" + r.Group + "/" + r.Resource + "/"
}

// KeepsGeneration reports whether metadata.generation counts the changes
// of the object's spec.
func (r *Resource) KeepsGeneration() bool {
	return r.HasStatus && !r.NoGeneration || r.SpecGeneration
}

// ServedVerbs returns the verbs this resource answers.
func (r *Resource) ServedVerbs() []string {
	if r.Verbs != nil {
		return r.Verbs
	}
	return Verbs()
}

// HasSubresource reports whether sub is served for this resource.
func (r *Resource) HasSubresource(sub string) bool {
	for _, s := range r.Subresources {
		if s == sub {
			return true
		}
	}
	return false
}

// ID is "resource.group" (or just "resource" for core), a unique key.
func (r *Resource) ID() string {
	if r.Group == "" {
		return r.Resource
	}
	return r.Resource + "." + r.Group
}

// ParseID splits an ID back into resource and group.
func ParseID(id string) (resource, group string) {
	resource, group, _ = strings.Cut(id, ".")
	return resource, group
}
