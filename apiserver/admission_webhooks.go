package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"minik/apiserver/defaults"
	"minik/apiserver/storage"
	"minik/apiserver/webhook"
)

// Admission webhooks (MutatingAdmissionWebhook, ValidatingAdmissionWebhook):
//
//	write ─▶ built-in mutating plugins ─▶ mutating webhooks (configurations by name, webhooks as listed;
//	         each JSON patch applied and defaulted; IfNeeded ones once more if a later one changed the object)
//	      ─▶ validation ─▶ PodSecurity ─▶ validating webhooks (all at once) ─▶ ResourceQuota ─▶ storage
//
// The configurations come from an in-process view of their watch caches
// (webhookConfigs), so a request reads nothing from etcd to find its
// webhooks. auditAnnotations in a response are ignored: minik keeps no
// audit log.

// webhookRefusal is a webhook's answer (or the failure to get one): the
// create fast path does not decide it again on fresh reads, which would
// call the webhooks twice.
type webhookRefusal struct{ err error }

func (e *webhookRefusal) Error() string { return e.err.Error() }
func (e *webhookRefusal) Unwrap() error { return e.err }

func refusal(err error) error {
	if err == nil {
		return nil
	}
	return &webhookRefusal{err}
}

// webhookConfigs follows one kind of configuration and keeps the
// compiled webhooks of all of them, swapped atomically on each change.
type webhookConfigs struct {
	compile func([]runtime.Object) (*webhook.Set, error)

	mu   sync.Mutex
	objs map[string]runtime.Object
	set  atomic.Pointer[webhook.Set]
}

func newWebhookConfigs(mutating bool) *webhookConfigs {
	c := &webhookConfigs{objs: map[string]runtime.Object{}, compile: compileAs(webhook.Validating)}
	if mutating {
		c.compile = compileAs(webhook.Mutating)
	}
	return c
}

// compileAs adapts a compiler of one kind of configuration to the
// stored objects.
func compileAs[C runtime.Object](compile func([]C) (*webhook.Set, error)) func([]runtime.Object) (*webhook.Set, error) {
	return func(objs []runtime.Object) (*webhook.Set, error) {
		list := make([]C, len(objs))
		for i, o := range objs {
			list[i] = o.(C)
		}
		return compile(list)
	}
}

func (c *webhookConfigs) reset(items []runtime.Object, _ int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.objs = map[string]runtime.Object{}
	for _, o := range items {
		m, _ := meta.Accessor(o)
		c.objs[m.GetName()] = o
	}
	c.rebuild()
}

func (c *webhookConfigs) apply(ev *storage.Event) {
	m, err := meta.Accessor(ev.Object)
	if err != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if ev.Type == watch.Deleted {
		delete(c.objs, m.GetName())
	} else {
		c.objs[m.GetName()] = ev.Object
	}
	c.rebuild()
}

// unsync keeps the last known webhooks until the next list, as an
// informer's lister does.
func (c *webhookConfigs) unsync() {}

// rebuild compiles the configurations (mu held).
func (c *webhookConfigs) rebuild() {
	objs := make([]runtime.Object, 0, len(c.objs))
	for _, o := range c.objs {
		objs = append(objs, o)
	}
	set, err := c.compile(objs)
	if err != nil {
		// Validation refuses bad selectors; such a webhook matches nothing.
		slog.Warn("admission webhook configuration", "err", err)
	}
	c.set.Store(set)
}

// current returns the compiled webhooks (nil before the first list).
func (c *webhookConfigs) current() *webhook.Set { return c.set.Load() }

// resolveWebhookService is kube-apiserver's default service resolver
// (the ClusterIP one, --enable-aggregator-routing=false): a ClusterIP,
// NodePort or LoadBalancer Service is reached at its cluster IP and the
// service port that has the webhook's port; an ExternalName at its name.
func (s *Server) resolveWebhookService(ctx context.Context, namespace, name string, port int32) (string, error) {
	obj, err := s.serviceStore.ServeGet(ctx, namespace, name, "0") // the watch cache, as upstream's lister
	if err != nil {
		return "", err
	}
	svc := obj.(*corev1.Service)
	switch svc.Spec.Type {
	case corev1.ServiceTypeExternalName:
		return net.JoinHostPort(svc.Spec.ExternalName, strconv.Itoa(int(port))), nil
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer, "":
		if svc.Spec.ClusterIP == corev1.ClusterIPNone {
			return "", fmt.Errorf(`cannot route to service with ClusterIP "None"`)
		}
		for _, p := range svc.Spec.Ports {
			if p.Port == port {
				return net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(int(p.Port))), nil
			}
		}
		return "", apierrors.NewServiceUnavailable(fmt.Sprintf("no service port %d found for service %q", port, svc.Name))
	default:
		return "", fmt.Errorf("unsupported service type %q", svc.Spec.Type)
	}
}

// gvr is the handler's resource as webhook rules name it.
func (h *resourceHandler) gvr() schema.GroupVersionResource {
	return h.res.GroupVersion().WithResource(h.res.Resource)
}

// otherVersions are the handlers of h's resource in the other versions
// the apiserver serves: upstream's equivalent resources (same group and
// resource; minik serves none of upstream's cross-group equivalences).
func (s *Server) otherVersions(h *resourceHandler) []*resourceHandler {
	var all []*resourceHandler
	if h.crd == nil {
		all = s.versions[h.res.GroupResource()]
	} else if s.crds != nil {
		for _, o := range s.crds.current.Load().handlers {
			if o.crd == h.crd {
				all = append(all, o)
			}
		}
	}
	var out []*resourceHandler
	for _, o := range all {
		if o.res.Version != h.res.Version {
			out = append(out, o)
		}
	}
	return out
}

// otherVersionsOf returns, for Set.MayCall, what finds the resources of
// otherVersions(h).
func (s *Server) otherVersionsOf(h *resourceHandler) func() []schema.GroupVersionResource {
	return func() []schema.GroupVersionResource {
		hs := s.otherVersions(h)
		out := make([]schema.GroupVersionResource, len(hs))
		for i, o := range hs {
			out[i] = o.gvr()
		}
		return out
	}
}

// kindOf is the kind of h's object, or of its subresource sub, as
// webhooks are told it.
func (h *resourceHandler) kindOf(sub string) schema.GroupVersionKind {
	if sub == "scale" {
		return autoscalingv1.SchemeGroupVersion.WithKind("Scale")
	}
	return h.res.GroupVersion().WithKind(h.res.Kind)
}

// view is obj (stored) as h serves it, a copy with apiVersion and kind
// set; for /scale, its Scale.
func (h *resourceHandler) view(obj runtime.Object, sub string) (runtime.Object, error) {
	if obj == nil {
		return nil, nil
	}
	if sub == "scale" {
		return h.scaleOf(obj)
	}
	v, err := h.out(obj.DeepCopyObject()) // a copy or a conversion of one: obj stays as it is
	if err != nil {
		return nil, err
	}
	v.GetObjectKind().SetGroupVersionKind(h.kindOf(""))
	return v, nil
}

// webhookRequest describes a write of obj (old: the stored object) for
// the webhooks, in the version the client asked for; ok is false for the
// apiserver's own writes, which no request carries (upstream's loopback
// writes are admitted, minik's own go to storage as they are).
func (s *Server) webhookRequest(ctx context.Context, h *resourceHandler, op admissionv1.Operation, sub string,
	obj, old, options runtime.Object) (*webhook.Request, bool, error) {
	ri, ok := ctx.Value(requestInfoKey{}).(*requestInfo)
	if !ok {
		return nil, false, nil
	}
	others := s.otherVersions(h)
	byKind := map[schema.GroupVersionKind]*resourceHandler{h.kindOf(""): h}
	for _, o := range others {
		byKind[o.kindOf("")] = o
	}
	view := func(o runtime.Object) (runtime.Object, error) { return h.view(o, sub) }
	req := s.newWebhookRequest(ctx, ri, webhook.Attributes{Operation: op, SubResource: sub, Options: options,
		Resource: h.gvr(), Kind: h.kindOf(sub)})
	for _, o := range others {
		req.Equivalents = append(req.Equivalents, webhook.Equivalent{Resource: o.gvr(), Kind: o.kindOf(sub)})
	}
	// Between versions through the storage's type, as the handlers serve them.
	req.Convert = func(obj runtime.Object, kind schema.GroupVersionKind) (runtime.Object, error) {
		from, to := byKind[obj.GetObjectKind().GroupVersionKind()], byKind[kind]
		if from == nil || to == nil {
			return nil, fmt.Errorf("%s is not a version of %s", kind, h.res.GroupResource())
		}
		stored, err := from.in(obj.DeepCopyObject())
		if err != nil {
			return nil, err
		}
		return to.view(stored, "")
	}
	var err error
	if req.Object, err = view(obj); err != nil {
		return nil, false, err
	}
	if req.OldObject, err = view(old); err != nil {
		return nil, false, err
	}
	subject := obj
	if subject == nil {
		subject = old
	}
	m, err := meta.Accessor(subject)
	if err != nil {
		return nil, false, err
	}
	req.Name, req.Namespace = m.GetName(), m.GetNamespace()
	if h.res.Group == "" && h.res.Resource == "namespaces" {
		req.Namespace = m.GetName() // as upstream: a namespace is its own namespace
	}
	req.Decode = func(data []byte, kind schema.GroupVersionKind) (runtime.Object, error) {
		if sub == "scale" {
			scale := &autoscalingv1.Scale{}
			if err := json.Unmarshal(data, scale); err != nil {
				return nil, err
			}
			scale.GetObjectKind().SetGroupVersionKind(req.Kind)
			return scale, nil
		}
		in := byKind[kind]
		if in == nil {
			return nil, fmt.Errorf("%s is not a version of %s", kind, h.res.GroupResource())
		}
		o, err := decodeInto(in.res, data, "application/json", fieldValidationIgnore, nil)
		if err != nil {
			return nil, err
		}
		defaults.Object(o) // as upstream defaults a webhook's patched object
		return o, nil
	}
	return req, true, nil
}

// newWebhookRequest completes a's attributes with what every request
// carries: the user, the dry run, the namespace's labels (read only if a
// webhook selects on them) and a sink for warnings.
func (s *Server) newWebhookRequest(ctx context.Context, ri *requestInfo, a webhook.Attributes) *webhook.Request {
	req := &webhook.Request{Attributes: a}
	req.DryRun = ri.dryRun
	if u := UserFrom(ctx); u != nil {
		req.UserInfo = authenticationv1.UserInfo{Username: u.Name, UID: u.UID, Groups: u.Groups}
		for k, v := range u.Extra {
			if req.UserInfo.Extra == nil {
				req.UserInfo.Extra = map[string]authenticationv1.ExtraValue{}
			}
			req.UserInfo.Extra[k] = v
		}
	}
	req.NamespaceLabels = func() (map[string]string, error) { return s.namespaceLabels(ctx, req.Namespace) }
	req.Warn = func(w string) { addWarning(ctx, w) }
	return req
}

// namespaceLabels reads a namespace's labels for a namespace selector:
// from the admission cache, else etcd (the cache may lag a new namespace).
func (s *Server) namespaceLabels(ctx context.Context, name string) (map[string]string, error) {
	if obj, _, ok := s.namespaceCache.get("", name); ok {
		return obj.(*corev1.Namespace).Labels, nil
	}
	obj, err := s.namespaces.Get(ctx, "", name)
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Namespace).Labels, nil
}

// writeOptionsFor is the options object a write's AdmissionReview
// carries: CreateOptions, UpdateOptions or (a patch) PatchOptions.
func writeOptionsFor(ctx context.Context, op admissionv1.Operation) runtime.Object {
	ri, _ := ctx.Value(requestInfoKey{}).(*requestInfo)
	var dryRun []string
	if ri != nil && ri.dryRun {
		dryRun = []string{metav1.DryRunAll}
	}
	manager := ""
	if ri != nil {
		manager = ri.fieldManager
	}
	tm := func(kind string) metav1.TypeMeta { return metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: kind} }
	switch {
	case op == admissionv1.Create:
		return &metav1.CreateOptions{TypeMeta: tm("CreateOptions"), DryRun: dryRun, FieldManager: manager}
	case ri != nil && ri.verb == "patch":
		var force *bool
		if ri.force {
			force = &ri.force
		}
		return &metav1.PatchOptions{TypeMeta: tm("PatchOptions"), DryRun: dryRun, FieldManager: manager, Force: force}
	default:
		return &metav1.UpdateOptions{TypeMeta: tm("UpdateOptions"), DryRun: dryRun, FieldManager: manager}
	}
}

// mutatingWebhooks calls the mutating webhooks on a create or update of
// obj and writes their changes into obj (for /scale, into its replicas);
// changed says whether any webhook patched it.
func (s *Server) mutatingWebhooks(ctx context.Context, h *resourceHandler, op admissionv1.Operation, sub string, obj, old runtime.Object) (changed bool, err error) {
	set := s.mutatingHooks.current()
	if !set.MayCall(op, h.gvr(), sub, s.otherVersionsOf(h)) {
		return false, nil
	}
	req, ok, err := s.webhookRequest(ctx, h, op, sub, obj, old, writeOptionsFor(ctx, op))
	if err != nil || !ok {
		return false, err
	}
	out, err := s.webhooks.Mutate(ctx, set, req)
	if err != nil || out == req.Object {
		return false, refusal(err)
	}
	if sub == "scale" {
		h.setReplicas(obj, out.(*autoscalingv1.Scale).Spec.Replicas)
		return true, nil
	}
	stored, err := h.in(out)
	if err != nil {
		return false, err
	}
	// What a webhook may not change: the object's identity.
	m, _ := meta.Accessor(obj)
	sm, _ := meta.Accessor(stored)
	sm.SetName(m.GetName())
	sm.SetNamespace(m.GetNamespace())
	sm.SetUID(m.GetUID())
	sm.SetCreationTimestamp(m.GetCreationTimestamp())
	copyInto(obj, stored)
	return true, nil
}

// validatingWebhooks calls the validating webhooks on a write; obj is nil
// for a delete (options are then its DeleteOptions).
func (s *Server) validatingWebhooks(ctx context.Context, h *resourceHandler, op admissionv1.Operation, sub string, obj, old, options runtime.Object) error {
	set := s.validatingHooks.current()
	if !set.MayCall(op, h.gvr(), sub, s.otherVersionsOf(h)) {
		return nil
	}
	if options == nil {
		options = writeOptionsFor(ctx, op)
	}
	req, ok, err := s.webhookRequest(ctx, h, op, sub, obj, old, options)
	if err != nil || !ok {
		return err
	}
	return refusal(s.webhooks.Validate(ctx, set, req))
}

// deleteWebhooks calls both kinds of webhook on a delete, as upstream's
// admission chain does (a mutating webhook's patch has nothing to apply to).
func (s *Server) deleteWebhooks(ctx context.Context, h *resourceHandler, old runtime.Object, opts *metav1.DeleteOptions) error {
	var options runtime.Object
	if opts != nil {
		o := opts.DeepCopy()
		o.TypeMeta = metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "DeleteOptions"}
		options = o
	}
	if set := s.mutatingHooks.current(); set.MayCall(admissionv1.Delete, h.gvr(), "", s.otherVersionsOf(h)) {
		req, ok, err := s.webhookRequest(ctx, h, admissionv1.Delete, "", nil, old, options)
		if err != nil {
			return err
		}
		if ok {
			if _, err := s.webhooks.Mutate(ctx, set, req); err != nil {
				return refusal(err)
			}
		}
	}
	return s.validatingWebhooks(ctx, h, admissionv1.Delete, "", nil, old, options)
}

// objectWebhooks admits a request whose object is not the resource
// itself: the Binding or Eviction posted to pods/binding or
// pods/eviction (CREATE, with CreateOptions), or a connection's options
// (CONNECT, no options). As upstream's handlers, the mutating webhooks
// run first and their patches are decoded back into obj's type (upstream
// hands the patched connect options to the connection too), then the
// validating ones see the result. obj is returned as they left it.
func (s *Server) objectWebhooks(ctx context.Context, h *resourceHandler, op admissionv1.Operation, kind schema.GroupVersionKind,
	obj runtime.Object) (runtime.Object, error) {
	ri, ok := ctx.Value(requestInfoKey{}).(*requestInfo)
	if !ok {
		return obj, nil
	}
	mutating, validating := s.mutatingHooks.current(), s.validatingHooks.current()
	callMutating := mutating.MayCall(op, h.gvr(), ri.subresource, nil)
	callValidating := validating.MayCall(op, h.gvr(), ri.subresource, nil)
	if !callMutating && !callValidating {
		return obj, nil
	}
	obj = obj.DeepCopyObject()
	obj.GetObjectKind().SetGroupVersionKind(kind)
	var options runtime.Object
	if op == admissionv1.Create {
		options = writeOptionsFor(ctx, op)
	}
	req := s.newWebhookRequest(ctx, ri, webhook.Attributes{Operation: op, Kind: kind, Resource: h.gvr(), SubResource: ri.subresource,
		Name: ri.name, Namespace: ri.namespace, Object: obj, Options: options})
	req.Decode = func(data []byte, _ schema.GroupVersionKind) (runtime.Object, error) {
		out := reflect.New(reflect.TypeOf(obj).Elem()).Interface().(runtime.Object)
		if err := json.Unmarshal(data, out); err != nil {
			return nil, err
		}
		out.GetObjectKind().SetGroupVersionKind(kind)
		return out, nil
	}
	if callMutating {
		out, err := s.webhooks.Mutate(ctx, mutating, req)
		if err != nil {
			return nil, refusal(err)
		}
		req.Object = out
	}
	if callValidating {
		if err := s.webhooks.Validate(ctx, validating, req); err != nil {
			return nil, refusal(err)
		}
	}
	return req.Object, nil
}
