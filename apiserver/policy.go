package apiserver

import (
	rbacv1 "k8s.io/api/rbac/v1"
)

// policy is a role's rules: cluster-wide, and per namespace.
type policy struct {
	cluster    []rbacv1.PolicyRule
	namespaced map[string][]rbacv1.PolicyRule
}

func (p *policy) allows(a *attributes) bool {
	return rulesAllow(p.cluster, a) || (a.namespace != "" && rulesAllow(p.namespaced[a.namespace], a))
}

const read = "get,list,watch"

// componentPolicies are the rights of the components that are neither
// nodes nor admins, by user name.
var componentPolicies = map[string]*policy{
	// Kubernetes' system:node-proxier ClusterRole, bound to system:kube-proxy.
	"system:kube-proxy": {cluster: []rbacv1.PolicyRule{
		rule("list,watch", "", "endpoints", "services"),
		rule(read, "", "nodes"),
		rule("create,patch,update", "", "events"),
		rule("create,patch,update", "events.k8s.io", "events"),
		rule("list,watch", "discovery.k8s.io", "endpointslices"),
	}},
	// CoreDNS's system:coredns ClusterRole, plus what minik dns needs to
	// publish itself as the kube-dns Service in kube-system.
	"system:kube-dns": {
		cluster: []rbacv1.PolicyRule{
			rule("list,watch", "", "endpoints", "services", "pods", "namespaces"),
			rule("list,watch", "discovery.k8s.io", "endpointslices"),
		},
		namespaced: map[string][]rbacv1.PolicyRule{"kube-system": {
			rule("get,create,update,patch,delete", "", "services"),
			rule("get,create,update,patch,delete", "discovery.k8s.io", "endpointslices"),
		}},
	},
}

// nodeRules are what every kubelet may do beyond what the node
// authorizer decides per object (Kubernetes' NodeRules, for the
// resources minik serves).
var nodeRules = []rbacv1.PolicyRule{
	// The service environment variables of pods.
	rule(read, "", "services"),
	rule("create,update,patch", "", "events"),
	rule("create,update,patch", "events.k8s.io", "events"),
	rule("get", "", "endpoints"),
}
