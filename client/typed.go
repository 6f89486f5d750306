package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Object is what *T must implement for a Typed[T]: every type in k8s.io/api
// does, through its embedded TypeMeta and ObjectMeta.
type Object interface {
	metav1.Object
	runtime.Object
}

// List is a page of a list answer: list metadata (resourceVersion,
// continue) and the items.
type List[T any] struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []T `json:"items"`
}

// fillItemKinds gives each item without a kind the list's apiVersion and
// its kind without "List": kube-apiserver leaves them out of a list's
// items (JSON and protobuf alike), and callers may read an item's kind.
func (l *List[T]) fillItemKinds() {
	gv, err := schema.ParseGroupVersion(l.APIVersion)
	if err != nil || !strings.HasSuffix(l.Kind, "List") {
		return
	}
	itemKind := gv.WithKind(strings.TrimSuffix(l.Kind, "List"))
	for i := range l.Items {
		if o, ok := any(&l.Items[i]).(runtime.Object); ok && o.GetObjectKind().GroupVersionKind().Empty() {
			o.GetObjectKind().SetGroupVersionKind(itemKind)
		}
	}
}

// Typed is a client for one resource whose objects are of type T, such as
// For[corev1.Pod](c, Pods). Objects it returns are new, and the caller's.
type Typed[T any] struct {
	c    *Client
	res  Resource
	kind string
	// metadataOnly: T is PartialObjectMetadata, so reads ask the server
	// for the objects' metadata only, not their whole bodies.
	metadataOnly bool
}

// For returns a client for res with objects of type T. It panics if *T is
// not a Kubernetes object, which is a programming error.
func For[T any](c *Client, res Resource) *Typed[T] {
	if _, ok := any(new(T)).(Object); !ok {
		panic(fmt.Sprintf("client.For: *%T is not a Kubernetes object", *new(T)))
	}
	// In k8s.io/api the Go type name is the kind: corev1.Pod is "Pod".
	_, metadataOnly := any(new(T)).(*metav1.PartialObjectMetadata)
	return &Typed[T]{c: c, res: res, kind: reflect.TypeFor[T]().Name(), metadataOnly: metadataOnly}
}

// Resource returns the resource this client works on.
func (t *Typed[T]) Resource() Resource { return t.res }

// Kind returns the kind of T, e.g. "Pod".
func (t *Typed[T]) Kind() string { return t.kind }

// Client returns the underlying client.
func (t *Typed[T]) Client() *Client { return t.c }

// Get reads object name in namespace ns ("" for cluster-scoped resources).
func (t *Typed[T]) Get(ctx context.Context, ns, name string, opts metav1.GetOptions) (*T, error) {
	q, err := encodeOptions(&opts)
	if err != nil {
		return nil, err
	}
	return t.one(ctx, t.call(http.MethodGet, ns, name, q, nil))
}

// List reads one page of the collection in ns ("" for all namespaces).
// opts carries label and field selectors, limit and continue, and
// resourceVersion with resourceVersionMatch.
func (t *Typed[T]) List(ctx context.Context, ns string, opts metav1.ListOptions) (*List[T], error) {
	opts.Watch = false
	q, err := encodeOptions(&opts)
	if err != nil {
		return nil, err
	}
	out := new(List[T])
	if err := t.c.do(ctx, t.call(http.MethodGet, ns, "", q, nil), out); err != nil {
		return nil, err
	}
	out.fillItemKinds()
	return out, nil
}

// Create creates obj in its own namespace and returns what the server stored.
func (t *Typed[T]) Create(ctx context.Context, obj *T, opts metav1.CreateOptions) (*T, error) {
	q, err := encodeOptions(&opts)
	if err != nil {
		return nil, err
	}
	ns, err := t.namespaceOf(obj)
	if err != nil {
		return nil, err
	}
	return t.one(ctx, t.call(http.MethodPost, ns, "", q, t.withKind(obj)))
}

// Update replaces obj. The server rejects it with a Conflict
// (apierrors.IsConflict) when obj's resourceVersion is not the latest.
func (t *Typed[T]) Update(ctx context.Context, obj *T, opts metav1.UpdateOptions) (*T, error) {
	return t.update(ctx, obj, opts, "")
}

// UpdateStatus replaces obj's status through the status subresource; the
// server ignores changes to anything else.
func (t *Typed[T]) UpdateStatus(ctx context.Context, obj *T, opts metav1.UpdateOptions) (*T, error) {
	return t.update(ctx, obj, opts, "status")
}

func (t *Typed[T]) update(ctx context.Context, obj *T, opts metav1.UpdateOptions, sub string) (*T, error) {
	q, err := encodeOptions(&opts)
	if err != nil {
		return nil, err
	}
	ns, err := t.namespaceOf(obj)
	if err != nil {
		return nil, err
	}
	name := any(obj).(Object).GetName()
	if name == "" {
		return nil, errors.New("client: update needs the object's name")
	}
	return t.one(ctx, t.call(http.MethodPut, ns, name, q, t.withKind(obj), sub))
}

// Patch applies a patch of type pt (types.JSONPatchType, MergePatchType or
// StrategicMergePatchType) to object name, or to one of its subresources
// such as "status".
func (t *Typed[T]) Patch(ctx context.Context, ns, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresource ...string) (*T, error) {
	q, err := encodeOptions(&opts)
	if err != nil {
		return nil, err
	}
	cl := t.call(http.MethodPatch, ns, name, q, data, subresource...)
	cl.contentType = string(pt)
	return t.one(ctx, cl)
}

// Delete deletes object name. opts may carry a grace period, preconditions
// (UID, resourceVersion) and a propagation policy.
func (t *Typed[T]) Delete(ctx context.Context, ns, name string, opts metav1.DeleteOptions) error {
	var body any
	if !reflect.ValueOf(opts).IsZero() {
		body = &opts
	}
	return t.c.do(ctx, t.call(http.MethodDelete, ns, name, nil, body), nil)
}

// Post sends body to a subresource of object name, such as "binding" or
// "eviction", and decodes the answer into out unless it is nil.
func (t *Typed[T]) Post(ctx context.Context, ns, name, subresource string, body, out any) error {
	return t.c.do(ctx, t.call(http.MethodPost, ns, name, nil, body, subresource), out)
}

// one performs cl and decodes the single object it answers with.
func (t *Typed[T]) one(ctx context.Context, cl call) (*T, error) {
	out := new(T)
	if err := t.c.do(ctx, cl, out); err != nil {
		return nil, err
	}
	return out, nil
}

func (t *Typed[T]) call(method, ns, name string, q url.Values, body any, subresource ...string) call {
	cl := call{
		method:      method,
		path:        t.res.Path(ns, name, subresource...),
		query:       q,
		body:        body,
		contentType: "application/json",
		gr:          t.res.GroupResource(),
		name:        name,
		typed:       true,
	}
	if t.metadataOnly && method == http.MethodGet && len(subresource) == 0 {
		// JSON, whose items decode into T whatever the kind; the plain
		// form last, for a server that has no metadata-only answers.
		kind := "PartialObjectMetadata"
		if name == "" && q.Get("watch") != "true" {
			kind = "PartialObjectMetadataList"
		}
		cl.accept = jsonMediaType + ";as=" + kind + ";g=meta.k8s.io;v=v1," + jsonMediaType
	}
	return cl
}

func (t *Typed[T]) namespaceOf(obj *T) (string, error) {
	ns := any(obj).(Object).GetNamespace()
	if t.res.Namespaced && ns == "" {
		return "", fmt.Errorf("client: %s is namespaced; set the object's namespace", t.res.Resource)
	}
	return ns, nil
}

// withKind returns a shallow copy of obj with apiVersion and kind set, as
// the API expects them in request bodies; the caller's object is unchanged.
func (t *Typed[T]) withKind(obj *T) *T {
	cp := *obj
	if k := any(&cp).(Object).GetObjectKind(); k.GroupVersionKind().Empty() {
		k.SetGroupVersionKind(t.res.GroupVersion().WithKind(t.kind))
	}
	return &cp
}

// encodeOptions turns List/Get/Create/Update/PatchOptions into query
// parameters with apimachinery's codec, so names match the server's exactly.
func encodeOptions(opts runtime.Object) (url.Values, error) {
	// Most calls pass no options, and converting them by reflection costs
	// more than encoding the call's object: every bind and status write
	// of the scheduler and kubelet passes here.
	if v := reflect.ValueOf(opts); v.Kind() == reflect.Pointer && v.Elem().IsZero() {
		return url.Values{}, nil
	}
	q, err := metav1.ParameterCodec.EncodeParameters(opts, metav1.SchemeGroupVersion)
	if err != nil {
		return nil, fmt.Errorf("client: encode options: %w", err)
	}
	return q, nil
}
