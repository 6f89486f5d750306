package apiserver

import (
	"maps"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The controller manager's rights, split as kube-controller-manager's
// with --use-service-account-credentials: its own identity
// (system:kube-controller-manager) only watches everything for the shared
// informers, holds its Lease, records events and gets each controller a
// token; each controller then acts as the service account
// kube-system/<name>, bound to the ClusterRole system:controller:<name>
// with only what that controller writes.
//
//	system:kube-controller-manager ──list/watch */*──▶ shared informers
//	        │ create serviceaccounts/token (only these names, in kube-system)
//	        ▼
//	kube-system/deployment-controller ──▶ system:controller:deployment-controller ──▶ replicasets, deployments/status
//	kube-system/job-controller        ──▶ system:controller:job-controller        ──▶ pods, jobs/status
//	...

// controllerRolePrefix names a controller's ClusterRole.
const controllerRolePrefix = "system:controller:"

// controllerAccountsNamespace holds the controllers' service accounts.
const controllerAccountsNamespace = "kube-system"

// eventsRule lets a controller record events (both APIs).
func eventsRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{rule("create,update,patch", "", "events"), rule("create,update,patch", "events.k8s.io", "events")}
}

// controllerRoles returns each controller's rules by service account name:
// upstream's roles for the same controllers, merged where one minik
// controller does the work of two upstream ones (serviceaccount also
// publishes kube-root-ca.crt; job also deletes finished Jobs after their
// TTL; the PersistentVolume binder also adds and removes the protection
// finalizers; nodeipam and nodelifecycle share node-controller, as
// upstream's do).
func controllerRoles() map[string][]rbacv1.PolicyRule {
	return map[string][]rbacv1.PolicyRule{
		"generic-garbage-collector": {rule("get,list,watch,patch,update,delete", "*", "*")},
		"namespace-controller": {
			rule("get,list,watch,delete", "", "namespaces"),
			rule("update", "", "namespaces/finalize", "namespaces/status"),
			rule("get,list,watch,delete,deletecollection", "*", "*"),
		},
		"service-account-controller": {
			rule("create", "", "serviceaccounts"),
			rule("create,update", "", "configmaps"),
		},
		"clusterrole-aggregation-controller": {
			rule("escalate,get,list,watch,update,patch", rbacv1.GroupName, "clusterroles"),
		},
		"replicaset-controller": {
			rule("get,list,watch,update", "apps", "replicasets"),
			rule("update", "apps", "replicasets/status", "replicasets/finalizers"),
			rule("list,watch,patch,create,delete", "", "pods"),
		},
		"replication-controller": {
			rule("get,list,watch,update", "", "replicationcontrollers"),
			rule("update", "", "replicationcontrollers/status", "replicationcontrollers/finalizers"),
			rule("list,watch,patch,create,delete", "", "pods"),
		},
		"deployment-controller": {
			rule("get,list,watch,update", "apps", "deployments"),
			rule("update", "apps", "deployments/status", "deployments/finalizers"),
			rule("get,list,watch,create,update,patch,delete", "apps", "replicasets"),
			rule("get,list,watch,update", "", "pods"),
		},
		"node-controller": {
			rule("get,list,watch,update,delete,patch", "", "nodes"),
			rule("patch,update", "", "nodes/status"),
			rule("patch,update", "", "pods/status"),
			rule("list,watch,get,delete", "", "pods"),
		},
		"taint-eviction-controller": {
			rule("get,list,watch,delete", "", "pods"),
			rule("patch,update", "", "pods/status"),
			rule("list,watch", "", "nodes"),
		},
		"disruption-controller": {
			rule("get,list,watch", "apps", "deployments", "replicasets", "statefulsets"),
			rule("get,list,watch", "", "replicationcontrollers"),
			rule("get,list,watch", "policy", "poddisruptionbudgets"),
			rule("update", "policy", "poddisruptionbudgets/status"),
			rule("patch,update", "", "pods/status"),
			rule("get", "*", "*/scale"),
		},
		"daemon-set-controller": {
			rule("get,list,watch", "apps", "daemonsets"),
			rule("update", "apps", "daemonsets/status", "daemonsets/finalizers"),
			rule("list,watch", "", "nodes"),
			rule("list,watch,create,delete,patch", "", "pods"),
			rule("create", "", "pods/binding"),
			rule("get,list,watch,create,delete,update,patch", "apps", "controllerrevisions"),
		},
		"job-controller": {
			rule("get,list,watch,update,patch,delete", "batch", "jobs"),
			rule("update", "batch", "jobs/status", "jobs/finalizers"),
			rule("list,watch,create,delete,patch", "", "pods"),
		},
		"cronjob-controller": {
			rule("get,list,watch,update", "batch", "cronjobs"),
			rule("get,list,watch,create,update,delete,patch", "batch", "jobs"),
			rule("update", "batch", "cronjobs/status", "cronjobs/finalizers"),
			rule("list,watch,delete", "", "pods"),
		},
		"statefulset-controller": {
			rule("list,watch", "", "pods"),
			rule("get,list,watch", "apps", "statefulsets"),
			rule("update", "apps", "statefulsets/status", "statefulsets/finalizers"),
			rule("get,create,delete,update,patch", "", "pods"),
			rule("get,create,delete,update,patch,list,watch", "apps", "controllerrevisions"),
			rule("get,create,list,watch,update,delete", "", "persistentvolumeclaims"),
			rule("update", "", "pods/finalizers"),
		},
		"endpointslice-controller": {
			rule("get,list,watch", "", "services", "pods", "nodes"),
			rule("update", "", "services/finalizers"),
			rule("get,list,watch,create,update,delete", "discovery.k8s.io", "endpointslices"),
		},
		"endpoint-controller": {
			rule("get,list,watch", "", "services", "pods"),
			rule("get,list,watch,create,update,delete", "", "endpoints"),
			rule("create", "", "endpoints/restricted"),
		},
		"endpointslicemirroring-controller": {
			rule("get,list,watch", "", "services", "endpoints"),
			rule("update", "", "services/finalizers", "endpoints/finalizers"),
			rule("get,list,watch,create,update,delete", "discovery.k8s.io", "endpointslices"),
		},
		"pod-garbage-collector": {
			rule("list,watch,delete", "", "pods"),
			rule("get,list,watch", "", "nodes"),
			rule("patch,update", "", "pods/status"),
		},
		"resourcequota-controller": {
			rule("list,watch", "*", "*"),
			rule("update", "", "resourcequotas/status"),
		},
		"persistent-volume-binder": {
			rule("get,list,watch,update,create,delete", "", "persistentvolumes"),
			rule("update", "", "persistentvolumes/status"),
			rule("get,list,watch,update", "", "persistentvolumeclaims"),
			rule("update", "", "persistentvolumeclaims/status"),
			rule("list,watch,get", "", "pods"),
			rule("get,list,watch", "storage.k8s.io", "storageclasses"),
			rule("list,watch", "", "nodes"),
		},
		"horizontal-pod-autoscaler": {
			rule("get,list,watch", "autoscaling", "horizontalpodautoscalers"),
			rule("update", "autoscaling", "horizontalpodautoscalers/status"),
			rule("get,update", "*", "*/scale"),
			rule("list,watch", "", "pods"),
			rule("list,watch", "metrics.k8s.io", "pods"),
		},
	}
}

// controllerManagerRules are the controller manager's own rights:
// upstream's system:kube-controller-manager.
func controllerManagerRules() []rbacv1.PolicyRule {
	return append(eventsRules(),
		rule("create", "coordination.k8s.io", "leases"),
		named(rule("get,update,patch", "coordination.k8s.io", "leases"), "kube-controller-manager"),
		rule("list,watch", "*", "*"),
		rule("get", "", "namespaces", "configmaps", "serviceaccounts"),
		rule("create", "authentication.k8s.io", "tokenreviews"),
		rule("create", "authorization.k8s.io", "subjectaccessreviews"),
	)
}

// controllerClusterRoles returns the system:controller:* ClusterRoles
// and their bindings to the controllers' service accounts.
func controllerClusterRoles() ([]rbacv1.ClusterRole, []rbacv1.ClusterRoleBinding) {
	var roles []rbacv1.ClusterRole
	var bindings []rbacv1.ClusterRoleBinding
	all := controllerRoles()
	for _, account := range slices.Sorted(maps.Keys(all)) {
		rules := all[account]
		name := controllerRolePrefix + account
		roles = append(roles, rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: append(rules, eventsRules()...)})
		sa := subject(rbacv1.ServiceAccountKind, account)
		sa.Namespace = controllerAccountsNamespace
		bindings = append(bindings, rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}, Subjects: []rbacv1.Subject{sa}})
	}
	return roles, bindings
}

// controllerTokenRole lets the controller manager make the controllers'
// accounts in kube-system and get their tokens, and no other account's
// (upstream's role may mint a token for any account in the cluster).
func controllerTokenRole() (rbacv1.Role, rbacv1.RoleBinding) {
	accounts := slices.Sorted(maps.Keys(controllerRoles()))
	meta := metav1.ObjectMeta{Name: "system:kube-controller-manager:tokens", Namespace: controllerAccountsNamespace}
	role := rbacv1.Role{ObjectMeta: meta, Rules: []rbacv1.PolicyRule{
		rule("create", "", "serviceaccounts"),
		named(rule("create", "", "serviceaccounts/token"), accounts...),
	}}
	binding := rbacv1.RoleBinding{ObjectMeta: meta, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: meta.Name},
		Subjects: []rbacv1.Subject{subject(rbacv1.UserKind, "system:kube-controller-manager")}}
	return role, binding
}
