package openapi

import (
	"reflect"
	"slices"
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// param is one request parameter. Every parameter is inlined into its
// operation, because kubectl looks for fieldValidation in the PATCH
// operation's own list.
type param struct {
	name, in, typ, desc string
}

var (
	pPretty          = param{"pretty", "query", "string", "If 'true', then the output is pretty printed."}
	pDryRun          = param{"dryRun", "query", "string", "When present, indicates that modifications should not be persisted. The only valid value is All."}
	pFieldManager    = param{"fieldManager", "query", "string", "fieldManager is a name associated with the actor or entity that is making these changes."}
	pFieldValidation = param{"fieldValidation", "query", "string", "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: Ignore, Warn and Strict."}
	pForce           = param{"force", "query", "boolean", "Force is going to \"force\" Apply requests. It must not be set for non-apply patch requests."}
	pGrace           = param{"gracePeriodSeconds", "query", "integer", "The duration in seconds before the object should be deleted."}
	pPropagation     = param{"propagationPolicy", "query", "string", "Whether and how garbage collection will be performed: Orphan, Background or Foreground."}
	listParams       = []param{
		{"labelSelector", "query", "string", "A selector to restrict the list of returned objects by their labels."},
		{"fieldSelector", "query", "string", "A selector to restrict the list of returned objects by their fields."},
		{"limit", "query", "integer", "limit is a maximum number of responses to return for a list call."},
		{"continue", "query", "string", "The continue option should be set when retrieving more results from the server."},
		{"resourceVersion", "query", "string", "resourceVersion sets a constraint on what resource versions a request may be served from."},
		{"resourceVersionMatch", "query", "string", "resourceVersionMatch determines how resourceVersion is applied to list calls."},
		{"timeoutSeconds", "query", "integer", "Timeout for the list/watch call."},
		{"watch", "query", "boolean", "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications."},
		{"allowWatchBookmarks", "query", "boolean", "allowWatchBookmarks requests watch events with type \"BOOKMARK\"."},
	}
	writeParams = []param{pDryRun, pFieldManager, pFieldValidation}
)

// patchContentTypes are the bodies that PATCH accepts, as upstream lists them.
var patchContentTypes = []string{
	"application/json-patch+json",
	"application/merge-patch+json",
	"application/strategic-merge-patch+json",
	"application/apply-patch+yaml",
}

// op describes one operation before it is rendered for v2 or v3.
type op struct {
	method string // HTTP method, lower case
	verb   string // operationId prefix: read, list, create, ...
	action string // x-kubernetes-action
	params []param
	body   object   // request body; nil for none
	types  []string // request content types
	codes  []string // success codes
	resp   object
	kind   gvk
}

// addPaths adds every operation of r to paths, with schemas from b.
func (b *builder) addPaths(paths map[string]object, r Resource) {
	k := gvk{r.Group, r.Version, r.Kind}
	obj, list := b.kindRefs(r)
	status := b.ref(reflect.TypeFor[metav1.Status]())
	delOpts := b.ref(reflect.TypeFor[metav1.DeleteOptions]())
	patch := b.patchRef()
	anyType := []string{"*/*"}
	deleteParams := []param{pDryRun, pGrace, pPropagation}
	patchParams := append(slices.Clone(writeParams), pForce)
	patchTypes := patchContentTypes
	if r.Schema != nil {
		// Custom objects have no patch strategies: kubectl apply sends
		// them a JSON merge patch when the operation does not list
		// strategic merge patch.
		patchTypes = slices.DeleteFunc(slices.Clone(patchTypes), func(t string) bool { return strings.Contains(t, "strategic") })
	}

	prefix := "/apis/" + r.Group + "/" + r.Version
	if r.Group == "" {
		prefix = "/api/" + r.Version
	}
	coll := prefix + "/" + r.Resource
	if r.Namespaced {
		coll = prefix + "/namespaces/{namespace}/" + r.Resource
	}
	item := coll + "/{name}"

	var collOps, itemOps []op
	for _, v := range r.Verbs {
		switch v {
		case "list":
			o := op{method: "get", verb: "list", action: "list", params: listParams, codes: []string{"200"}, resp: list, kind: k}
			collOps = append(collOps, o)
			if r.Namespaced {
				b.render(paths, prefix+"/"+r.Resource, r, "ForAllNamespaces", o)
			}
		case "create":
			collOps = append(collOps, op{method: "post", verb: "create", action: "post", params: writeParams, body: obj, types: anyType, codes: []string{"200", "201", "202"}, resp: obj, kind: k})
		case "deletecollection":
			collOps = append(collOps, op{method: "delete", verb: "deleteCollection", action: "deletecollection", params: append(slices.Clone(deleteParams), listParams...), body: delOpts, types: anyType, codes: []string{"200"}, resp: status, kind: k})
		case "get":
			itemOps = append(itemOps, op{method: "get", verb: "read", action: "get", codes: []string{"200"}, resp: obj, kind: k})
		case "update":
			itemOps = append(itemOps, op{method: "put", verb: "replace", action: "put", params: writeParams, body: obj, types: anyType, codes: []string{"200", "201"}, resp: obj, kind: k})
		case "patch":
			itemOps = append(itemOps, op{method: "patch", verb: "patch", action: "patch", params: patchParams, body: patch, types: patchTypes, codes: []string{"200", "201"}, resp: obj, kind: k})
		case "delete":
			itemOps = append(itemOps, op{method: "delete", verb: "delete", action: "delete", params: deleteParams, body: delOpts, types: anyType, codes: []string{"200", "202"}, resp: status, kind: k})
		}
	}
	b.render(paths, coll, r, "", collOps...)
	b.render(paths, item, r, "", itemOps...)

	for _, sub := range r.Subresources {
		subObj, subKind := obj, k
		switch sub {
		case "status":
		case "scale":
			subKind = gvk{"autoscaling", "v1", "Scale"}
			b.addKind(reflect.TypeFor[autoscalingv1.Scale](), subKind)
			subObj = b.ref(reflect.TypeFor[autoscalingv1.Scale]())
		default:
			continue // log, exec, binding...: no schema we can derive
		}
		b.render(paths, item+"/"+sub, r, strings.ToUpper(sub[:1])+sub[1:],
			op{method: "get", verb: "read", action: "get", codes: []string{"200"}, resp: subObj, kind: subKind},
			op{method: "put", verb: "replace", action: "put", params: writeParams, body: subObj, types: anyType, codes: []string{"200", "201"}, resp: subObj, kind: subKind},
			op{method: "patch", verb: "patch", action: "patch", params: patchParams, body: patch, types: patchTypes, codes: []string{"200", "201"}, resp: subObj, kind: subKind},
		)
	}
}

// patchRef returns the Patch body definition, which upstream names but
// leaves free-form.
func (b *builder) patchRef() object {
	name := "io.k8s.apimachinery.pkg.apis.meta.v1.Patch"
	b.defs[name] = object{"type": "object", "description": "Patch is provided to give a concrete name and type to the Kubernetes PATCH request body."}
	return object{"$ref": b.refPrefix() + name}
}

// render writes ops as one path item. The path-level name, namespace and
// pretty parameters are inlined too, which keeps the renderer simple.
func (b *builder) render(paths map[string]object, path string, r Resource, suffix string, ops ...op) {
	if len(ops) == 0 {
		return
	}
	item := object{}
	for _, o := range ops {
		ps := []param{pPretty}
		if strings.Contains(path, "{namespace}") {
			ps = append(ps, param{"namespace", "path", "string", "object name and auth scope, such as for teams and projects"})
		}
		if strings.Contains(path, "{name}") {
			ps = append(ps, param{"name", "path", "string", "name of the " + r.Kind})
		}
		// Upstream's ids: readCoreV1NamespacedPodStatus,
		// deleteAppsV1CollectionNamespacedDeployment, listCoreV1PodForAllNamespaces.
		verb, scope := o.verb, ""
		if verb == "deleteCollection" {
			verb, scope = "delete", "Collection"
		}
		if strings.Contains(path, "{namespace}") {
			scope += "Namespaced"
		}
		id := verb + opGroup(r.Group) + strings.ToUpper(r.Version[:1]) + r.Version[1:] + scope + r.Kind + suffix
		sub := ""
		if suffix != "ForAllNamespaces" {
			sub = strings.ToLower(suffix)
		}
		item[o.method] = b.operation(o, id, describe(o.verb, r.Kind, sub), append(ps, o.params...))
	}
	paths[path] = item
}

// opGroup turns an API group into upstream's operationId fragment:
// "" → Core, "apps" → Apps, "scheduling.k8s.io" → Scheduling.
func opGroup(group string) string {
	if group == "" {
		return "Core"
	}
	var out strings.Builder
	for _, part := range strings.Split(strings.TrimSuffix(group, ".k8s.io"), ".") {
		out.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return out.String()
}

// describe returns upstream's wording for an operation.
func describe(verb, kind, sub string) string {
	what := "the specified " + kind
	if sub != "" {
		what = sub + " of " + what
	}
	switch verb {
	case "list":
		return "list or watch objects of kind " + kind
	case "create":
		return "create a " + kind
	case "deleteCollection":
		return "delete collection of " + kind
	case "delete":
		return "delete a " + kind
	case "patch":
		return "partially update " + what
	}
	return verb + " " + what
}

// operation renders o in the dialect of b.
func (b *builder) operation(o op, id, desc string, ps []param) object {
	tag := strings.ReplaceAll(strings.TrimSuffix(o.kind.Group, ".k8s.io"), ".", "_")
	if tag == "" {
		tag = "core"
	}
	out := object{
		"operationId":                     id,
		"description":                     desc,
		"tags":                            []string{tag + "_" + o.kind.Version},
		"x-kubernetes-action":             o.action,
		"x-kubernetes-group-version-kind": o.kind,
	}
	var params []object
	for _, p := range ps {
		s := object{"name": p.name, "in": p.in, "description": p.desc}
		if p.in == "path" {
			s["required"] = true
		}
		if b.v3 {
			s["schema"] = object{"type": p.typ}
		} else {
			s["type"] = p.typ
		}
		params = append(params, s)
	}
	produces := []string{"application/json", "application/yaml"}
	responses := object{"401": object{"description": "Unauthorized"}}
	for _, c := range o.codes {
		if b.v3 {
			content := object{}
			for _, ct := range produces {
				content[ct] = object{"schema": o.resp}
			}
			responses[c] = object{"description": "OK", "content": content}
		} else {
			responses[c] = object{"description": "OK", "schema": o.resp}
		}
	}
	out["responses"] = responses
	if b.v3 {
		if o.body != nil {
			content := object{}
			for _, ct := range o.types {
				content[ct] = object{"schema": o.body}
			}
			out["requestBody"] = object{"content": content, "required": o.method != "delete"}
		}
	} else {
		if o.body != nil {
			params = append(params, object{"name": "body", "in": "body", "required": o.method != "delete", "schema": o.body})
			out["consumes"] = o.types
		}
		out["produces"] = produces
		out["schemes"] = []string{"https"}
	}
	out["parameters"] = params
	return out
}
