package apiserver

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"minik/apiserver/storage"
)

// The default roles and bindings Kubernetes creates at start, for what
// minik serves: the user-facing cluster-admin, admin, edit and view (the
// last three aggregated from system:aggregate-to-*), discovery and
// self-review for everyone, and one role per component, each bound to
// that component's identity. They are created when missing and, like
// kube-apiserver's, given any permission they lack at each start unless
// annotated rbac.authorization.kubernetes.io/autoupdate: "false".

const (
	verbsRead      = "get,list,watch"
	verbsWrite     = "create,delete,deletecollection,patch,update"
	verbsReadWrite = verbsRead + "," + verbsWrite
	autoupdate     = "rbac.authorization.kubernetes.io/autoupdate"
)

func urlRule(verbs string, urls ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: strings.Split(verbs, ","), NonResourceURLs: urls}
}

func named(r rbacv1.PolicyRule, names ...string) rbacv1.PolicyRule {
	r.ResourceNames = names
	return r
}

func aggregated(name, label string) rbacv1.ClusterRole {
	return rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
		AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
			{MatchLabels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-" + label: "true"}}}}}
}

func withLabel(r rbacv1.ClusterRole, keys ...string) rbacv1.ClusterRole {
	r.Labels = map[string]string{}
	for _, key := range keys {
		r.Labels[key] = "true"
	}
	return r
}

// bootstrapClusterRoles returns the default ClusterRoles.
func bootstrapClusterRoles() []rbacv1.ClusterRole {
	role := func(name string, rules ...rbacv1.PolicyRule) rbacv1.ClusterRole {
		return rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
	}
	return []rbacv1.ClusterRole{
		role("cluster-admin", rule("*", "*", "*"), urlRule("*", "*")),
		role("system:discovery", urlRule("get", "/livez", "/readyz", "/healthz", "/version", "/version/",
			"/openapi", "/openapi/*", "/api", "/api/*", "/apis", "/apis/*")),
		role("system:public-info-viewer", urlRule("get", "/livez", "/readyz", "/healthz", "/version", "/version/")),
		role("system:basic-user",
			rule("create", "authorization.k8s.io", "selfsubjectaccessreviews", "selfsubjectrulesreviews"),
			rule("create", "authentication.k8s.io", "selfsubjectreviews")),
		role("system:monitoring", urlRule("get", "/metrics", "/metrics/slis", "/livez", "/readyz", "/healthz", "/livez/*", "/readyz/*", "/healthz/*")),
		aggregated("admin", "admin"),
		withLabel(aggregated("edit", "edit"), "rbac.authorization.k8s.io/aggregate-to-admin"),
		withLabel(aggregated("view", "view"), "rbac.authorization.k8s.io/aggregate-to-edit"),
		withLabel(role("system:aggregate-to-admin",
			rule("create", "authorization.k8s.io", "localsubjectaccessreviews"),
			rule(verbsReadWrite, rbacv1.GroupName, "roles", "rolebindings"),
		), "rbac.authorization.k8s.io/aggregate-to-admin"),
		withLabel(role("system:aggregate-to-edit",
			rule(verbsRead, "", "pods/attach", "pods/proxy", "pods/exec", "pods/portforward", "secrets", "services/proxy"),
			rule("impersonate", "", "serviceaccounts"),
			rule(verbsWrite, "", "pods", "pods/attach", "pods/proxy", "pods/exec", "pods/portforward"),
			rule("create", "", "pods/eviction", "serviceaccounts/token"),
			rule(verbsWrite, "", "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
				"services", "services/proxy", "endpoints", "persistentvolumeclaims", "configmaps", "secrets"),
			rule(verbsWrite, "apps", "statefulsets", "statefulsets/scale", "daemonsets", "deployments", "deployments/scale",
				"deployments/rollback", "replicasets", "replicasets/scale"),
			rule(verbsWrite, "autoscaling", "horizontalpodautoscalers"),
			rule(verbsWrite, "batch", "jobs", "cronjobs"),
			rule(verbsWrite, "policy", "poddisruptionbudgets"),
			rule(verbsWrite, "networking.k8s.io", "networkpolicies", "ingresses"),
			rule(verbsWrite, "discovery.k8s.io", "endpointslices"),
			rule("create,delete,deletecollection,get,list,patch,update,watch", "coordination.k8s.io", "leases"),
			rule(verbsWrite, "resource.k8s.io", "resourceclaims", "resourceclaimtemplates"),
		), "rbac.authorization.k8s.io/aggregate-to-edit"),
		withLabel(role("system:aggregate-to-view",
			rule(verbsRead, "", "pods", "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
				"services", "services/status", "endpoints", "persistentvolumeclaims", "persistentvolumeclaims/status", "configmaps"),
			rule(verbsRead, "", "limitranges", "resourcequotas", "bindings", "events", "pods/status", "resourcequotas/status",
				"namespaces/status", "replicationcontrollers/status", "pods/log"),
			rule(verbsRead, "", "namespaces"),
			rule(verbsRead, "discovery.k8s.io", "endpointslices"),
			rule(verbsRead, "apps", "controllerrevisions", "statefulsets", "statefulsets/status", "statefulsets/scale",
				"daemonsets", "daemonsets/status", "deployments", "deployments/status", "deployments/scale",
				"replicasets", "replicasets/status", "replicasets/scale"),
			rule(verbsRead, "autoscaling", "horizontalpodautoscalers", "horizontalpodautoscalers/status"),
			rule(verbsRead, "batch", "jobs", "cronjobs", "cronjobs/status", "jobs/status"),
			rule(verbsRead, "policy", "poddisruptionbudgets", "poddisruptionbudgets/status"),
			rule(verbsRead, "networking.k8s.io", "networkpolicies", "ingresses", "ingresses/status"),
			rule(verbsRead, "resource.k8s.io", "resourceclaims", "resourceclaims/status", "resourceclaimtemplates"),
		), "rbac.authorization.k8s.io/aggregate-to-view"),
		// What metrics-server's manifest installs: reading usage is part
		// of view, edit and admin.
		withLabel(role("system:aggregated-metrics-reader", rule("get,list,watch", "metrics.k8s.io", "pods", "nodes")),
			"rbac.authorization.k8s.io/aggregate-to-view", "rbac.authorization.k8s.io/aggregate-to-edit",
			"rbac.authorization.k8s.io/aggregate-to-admin"),
		role("system:kube-scheduler",
			rule("create,patch,update", "", "events"),
			rule("create,patch,update", "events.k8s.io", "events"),
			rule("create", "coordination.k8s.io", "leases"),
			named(rule("get,update,patch", "coordination.k8s.io", "leases"), "kube-scheduler"),
			rule(verbsRead, "", "nodes", "namespaces"),
			rule("get,list,watch,delete", "", "pods"),
			rule("create", "", "pods/binding", "bindings"),
			rule("patch,update", "", "pods/status"),
			rule(verbsRead, "", "replicationcontrollers", "services", "persistentvolumeclaims", "persistentvolumes"),
			rule("patch,update", "", "persistentvolumeclaims"), // volume.kubernetes.io/selected-node
			rule(verbsRead, "apps", "replicasets", "statefulsets"),
			rule(verbsRead, "policy", "poddisruptionbudgets"),
			rule(verbsRead, "storage.k8s.io", "storageclasses", "csinodes", "csidrivers", "csistoragecapacities", "volumeattachments"),
			rule("create", "authentication.k8s.io", "tokenreviews"),
			rule("create", "authorization.k8s.io", "subjectaccessreviews"),
			// Dynamic resource allocation, as upstream's role with the DRA
			// features of v1.37 (extended resources as claims, device taint
			// rules, the granular claim status authorization).
			rule(verbsRead, "resource.k8s.io", "deviceclasses", "resourceslices", "devicetaintrules"),
			rule(verbsRead+",update,patch", "resource.k8s.io", "resourceclaims", "resourceclaims/status"),
			rule("create,delete", "resource.k8s.io", "resourceclaims"),
			rule("update,patch", "resource.k8s.io", "resourceclaims/binding"),
			rule("update", "", "pods/finalizers"),
		),
		role("system:kube-controller-manager", controllerManagerRules()...),
		role("system:node-proxier",
			rule("list,watch", "", "endpoints", "services"),
			rule(verbsRead, "", "nodes"),
			rule("create,patch,update", "", "events"),
			rule("create,patch,update", "events.k8s.io", "events"),
			rule("list,watch", "discovery.k8s.io", "endpointslices"),
		),
		// CoreDNS's system:coredns role; minik dns also publishes itself
		// as kube-system/kube-dns (the Role below).
		role("system:kube-dns",
			rule("list,watch", "", "endpoints", "services", "pods", "namespaces"),
			rule("list,watch", "discovery.k8s.io", "endpointslices"),
		),
		// What the node authorizer grants every kubelet beyond its own
		// objects, listed for reference as Kubernetes lists it (not bound).
		role("system:node", nodeRules...),
	}
}

func subject(kind, name string) rbacv1.Subject {
	s := rbacv1.Subject{Kind: kind, Name: name}
	if kind != rbacv1.ServiceAccountKind {
		s.APIGroup = rbacv1.GroupName
	}
	return s
}

// bootstrapClusterRoleBindings returns the default ClusterRoleBindings.
func bootstrapClusterRoleBindings() []rbacv1.ClusterRoleBinding {
	bind := func(role string, subjects ...rbacv1.Subject) rbacv1.ClusterRoleBinding {
		return rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}, Subjects: subjects}
	}
	return []rbacv1.ClusterRoleBinding{
		bind("cluster-admin", subject(rbacv1.GroupKind, "system:masters")),
		bind("system:discovery", subject(rbacv1.GroupKind, "system:authenticated")),
		bind("system:basic-user", subject(rbacv1.GroupKind, "system:authenticated")),
		bind("system:public-info-viewer", subject(rbacv1.GroupKind, "system:authenticated"), subject(rbacv1.GroupKind, "system:unauthenticated")),
		bind("system:monitoring", subject(rbacv1.GroupKind, "system:monitoring")),
		bind("system:kube-scheduler", subject(rbacv1.UserKind, "system:kube-scheduler")),
		bind("system:kube-controller-manager", subject(rbacv1.UserKind, "system:kube-controller-manager")),
		bind("system:node-proxier", subject(rbacv1.UserKind, "system:kube-proxy")),
		bind("system:kube-dns", subject(rbacv1.UserKind, "system:kube-dns")),
	}
}

// bootstrapRoles returns the default namespaced Roles and RoleBindings.
func bootstrapRoles() ([]rbacv1.Role, []rbacv1.RoleBinding) {
	roles := []rbacv1.Role{{ObjectMeta: metav1.ObjectMeta{Name: "system:minik-dns", Namespace: "kube-system"}, Rules: []rbacv1.PolicyRule{
		named(rule("get,update,patch,delete", "", "services"), "kube-dns"),
		rule("create", "", "services"),
		rule("get,create,update,patch,delete", "discovery.k8s.io", "endpointslices"),
	}}}
	bindings := []rbacv1.RoleBinding{{ObjectMeta: metav1.ObjectMeta{Name: "system:minik-dns", Namespace: "kube-system"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "system:minik-dns"},
		Subjects: []rbacv1.Subject{subject(rbacv1.UserKind, "system:kube-dns")}}}
	tokens, tokensBinding := controllerTokenRole()
	return append(roles, tokens), append(bindings, tokensBinding)
}

// bootstrapRBAC creates the default roles and bindings, or adds what an
// existing one lacks (unless its autoupdate annotation is "false").
func (s *Server) bootstrapRBAC(ctx context.Context) error {
	var objs []runtime.Object
	for _, r := range bootstrapClusterRoles() {
		objs = append(objs, &r)
	}
	for _, b := range bootstrapClusterRoleBindings() {
		objs = append(objs, &b)
	}
	controllerRoles, controllerBindings := controllerClusterRoles()
	for _, r := range controllerRoles {
		objs = append(objs, &r)
	}
	for _, b := range controllerBindings {
		objs = append(objs, &b)
	}
	roles, bindings := bootstrapRoles()
	for _, r := range roles {
		objs = append(objs, &r)
	}
	for _, b := range bindings {
		objs = append(objs, &b)
	}
	for _, obj := range objs {
		if err := s.reconcileDefault(ctx, obj); err != nil {
			return err
		}
	}
	// The server is ready only once the authorizer sees the defaults
	// (kube-apiserver's rbac/bootstrap-roles readiness check): a
	// component's first request must not meet an empty cache.
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, obj := range objs {
		m := obj.(metav1.Object)
		cache := map[string]*objectCache{"ClusterRole": s.rbac.clusterRoles, "ClusterRoleBinding": s.rbac.clusterRoleBindings,
			"Role": s.rbac.roles, "RoleBinding": s.rbac.roleBindings}[obj.GetObjectKind().GroupVersionKind().Kind]
		if err := cache.waitUntil(ctx, m.GetNamespace(), m.GetName()); err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) reconcileDefault(ctx context.Context, obj runtime.Object) error {
	var h *resourceHandler
	var m *metav1.ObjectMeta
	switch o := obj.(type) {
	case *rbacv1.ClusterRole:
		h, m = s.handlers["rbac.authorization.k8s.io/v1/clusterroles"], &o.ObjectMeta
		o.TypeMeta = metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"}
	case *rbacv1.ClusterRoleBinding:
		h, m = s.handlers["rbac.authorization.k8s.io/v1/clusterrolebindings"], &o.ObjectMeta
		o.TypeMeta = metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"}
	case *rbacv1.Role:
		h, m = s.handlers["rbac.authorization.k8s.io/v1/roles"], &o.ObjectMeta
		o.TypeMeta = metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"}
	case *rbacv1.RoleBinding:
		h, m = s.handlers["rbac.authorization.k8s.io/v1/rolebindings"], &o.ObjectMeta
		o.TypeMeta = metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"}
	}
	if m.Labels == nil {
		m.Labels = map[string]string{}
	}
	m.Labels["kubernetes.io/bootstrapping"] = "rbac-defaults"
	m.Annotations = map[string]string{autoupdate: "true"}
	ri := &requestInfo{handler: h, namespace: m.Namespace, name: m.Name}
	_, err := h.createObject(ctx, ri, obj, false)
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	_, err = h.updateObject(ctx, ri, false, func(current runtime.Object) (runtime.Object, error) {
		cm := current.(metav1.Object)
		if cm.GetAnnotations()[autoupdate] == "false" {
			return nil, storage.ErrNoChange
		}
		next := current.DeepCopyObject()
		if !addMissing(next, obj) {
			return nil, storage.ErrNoChange
		}
		return next, nil
	})
	if err != nil {
		return fmt.Errorf("reconciling %s %s: %w", h.res.Kind, m.Name, err)
	}
	return nil
}

// addMissing adds to cur the rules or subjects of want it lacks and
// reports whether it changed anything.
func addMissing(cur, want runtime.Object) bool {
	addRules := func(have *[]rbacv1.PolicyRule, want []rbacv1.PolicyRule) bool {
		missing := uncovered(*have, want)
		if len(missing) == 0 {
			return false
		}
		for _, r := range want {
			if len(uncovered(*have, []rbacv1.PolicyRule{r})) > 0 {
				*have = append(*have, r)
			}
		}
		return true
	}
	addSubjects := func(have *[]rbacv1.Subject, want []rbacv1.Subject) bool {
		changed := false
		for _, w := range want {
			found := false
			for _, h := range *have {
				found = found || reflect.DeepEqual(h, w)
			}
			if !found {
				*have = append(*have, w)
				changed = true
			}
		}
		return changed
	}
	switch c := cur.(type) {
	case *rbacv1.ClusterRole:
		if c.AggregationRule != nil {
			return false // the aggregation controller owns its rules
		}
		return addRules(&c.Rules, want.(*rbacv1.ClusterRole).Rules)
	case *rbacv1.Role:
		return addRules(&c.Rules, want.(*rbacv1.Role).Rules)
	case *rbacv1.ClusterRoleBinding:
		return addSubjects(&c.Subjects, want.(*rbacv1.ClusterRoleBinding).Subjects)
	case *rbacv1.RoleBinding:
		return addSubjects(&c.Subjects, want.(*rbacv1.RoleBinding).Subjects)
	}
	return false
}
