package apiserver

import (
	rbacv1 "k8s.io/api/rbac/v1"
)

// nodeRules are what every kubelet may do beyond what the node
// authorizer decides per object (Kubernetes' NodeRules, for the
// resources minik serves).
var nodeRules = []rbacv1.PolicyRule{
	// The service environment variables of pods.
	rule(verbsRead, "", "services"),
	rule("create,update,patch", "", "events"),
	rule("create,update,patch", "events.k8s.io", "events"),
	rule("get", "", "endpoints"),
	// What CSI drivers a node may find (their writes to the node's own
	// CSINode would need NodeRestriction's check, which minik lacks).
	rule(verbsRead, "storage.k8s.io", "csidrivers"),
}
