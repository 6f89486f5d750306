package apiserver

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// nodeAuthorizer is Kubernetes' node authorizer: a kubelet (user
// system:node:NAME in group system:nodes) may read only the pods bound to
// its node and the secrets, config maps and claims those pods use; it may
// read and write only its own Node and Lease. Which Node, pod or lease a
// write names is checked by NodeRestriction admission
// (noderestriction.go), which sees the object.
//
//	request ─▶ node identity? ─no─▶ no opinion (the next authorizer decides)
//	              │yes
//	              ▼
//	   secrets, configmaps ─▶ get/list/watch of one named object related in the graph
//	   persistentvolumeclaims ─▶ get of one related object
//	   persistentvolumes ─▶ get: bound to a related claim, or a local-path volume of the node;
//	                        delete: a local-path volume of the node (the kubelet reclaims it)
//	   pods ─▶ get: bound to the node; list/watch: only with spec.nodeName=NODE;
//	           create/delete, status update/patch ─▶ allowed here, NodeRestriction checks
//	   nodes ─▶ get/list/watch: its own name; create/update/patch, status ─▶ NodeRestriction
//	   leases ─▶ kube-node-lease, its own name (create: NodeRestriction)
//	   anything else ─▶ the static node rules (services, events, endpoints)
type nodeAuthorizer struct {
	graph   *nodeGraph
	volumes *volumeGraph
	// podsRev is the latest revision of the pods' watch cache, which is
	// where kubelets learn of their pods.
	podsRev func() int64
}

// graphWait bounds how long a refused read waits for the graph to catch
// up with the pod watch (the kubelet may have seen the pod first).
const graphWait = 2 * time.Second

// nodeIdentity returns the node name of a kubelet's user.
func nodeIdentity(u *User) (string, bool) {
	if u == nil || !u.in("system:nodes") || !strings.HasPrefix(u.Name, "system:node:") {
		return "", false
	}
	name := strings.TrimPrefix(u.Name, "system:node:")
	return name, name != ""
}

func (z *nodeAuthorizer) authorize(ctx context.Context, a *attributes) (decision, string) {
	node, ok := nodeIdentity(a.user)
	if !ok {
		return noOpinion, ""
	}
	if a.group == "" {
		switch a.resource {
		case "secrets", "configmaps":
			return z.readNamespaced(ctx, node, a)
		case "persistentvolumeclaims":
			if a.verb != "get" || a.subresource != "" {
				return noOpinion, "can only get individual resources of this type"
			}
			return z.related(ctx, node, a)
		case "persistentvolumes":
			return z.authorizeVolume(ctx, node, a)
		case "nodes":
			return authorizeNodeObject(node, a)
		case "serviceaccounts":
			// Tokens for the accounts its pods run as; which pod the
			// token is bound to is checked when it is issued.
			if a.verb != "create" || a.subresource != "token" {
				return noOpinion, "can only create tokens for individual service accounts"
			}
			return z.related(ctx, node, &attributes{resource: "serviceaccounts", namespace: a.namespace, name: a.name})
		case "pods":
			return z.authorizePod(ctx, node, a)
		}
	}
	if a.group == "coordination.k8s.io" && a.resource == "leases" {
		return authorizeLease(node, a)
	}
	if rulesAllow(nodeRules, a) {
		return allow, ""
	}
	return noOpinion, ""
}

// readNamespaced allows get, list and watch of one named object that a
// pod of the node uses.
func (z *nodeAuthorizer) readNamespaced(ctx context.Context, node string, a *attributes) (decision, string) {
	switch {
	case a.verb != "get" && a.verb != "list" && a.verb != "watch":
		return noOpinion, "can only read resources of this type"
	case a.subresource != "":
		return noOpinion, "cannot read subresource"
	case a.namespace == "":
		return noOpinion, "can only read namespaced object of this type"
	}
	return z.related(ctx, node, a)
}

// related allows the request if the graph links the named object to the
// node, waiting briefly for the graph when it does not yet.
func (z *nodeAuthorizer) related(ctx context.Context, node string, a *attributes) (decision, string) {
	if a.name == "" {
		return noOpinion, "No Object name found"
	}
	ref := objectRef{kind: a.resource, namespace: a.namespace, name: a.name}
	if z.graph.related(node, ref) {
		return allow, ""
	}
	z.graph.waitFor(ctx, z.podsRev(), graphWait)
	if z.graph.related(node, ref) {
		return allow, ""
	}
	return noOpinion, fmt.Sprintf("no relationship found between node '%s' and this object", node)
}

// authorizeVolume lets a kubelet read the volumes of the claims its pods
// use, and read and delete the local-path volumes on its node: it is
// their deleter once they are Released (see controller/volume).
func (z *nodeAuthorizer) authorizeVolume(ctx context.Context, node string, a *attributes) (decision, string) {
	if a.subresource != "" || a.name == "" || (a.verb != "get" && a.verb != "delete") {
		return noOpinion, "can only get individual resources of this type"
	}
	if z.volumes.localNode(a.name) == node {
		return allow, ""
	}
	if a.verb != "get" {
		return noOpinion, "can only delete the local-path volumes of its node"
	}
	if claim, ok := z.volumes.claimOf(a.name); ok {
		return z.related(ctx, node, &attributes{resource: claim.kind, namespace: claim.namespace, name: claim.name})
	}
	return noOpinion, fmt.Sprintf("no relationship found between node '%s' and this object", node)
}

func (z *nodeAuthorizer) authorizePod(ctx context.Context, node string, a *attributes) (decision, string) {
	switch a.subresource {
	case "":
		switch a.verb {
		case "get":
			return z.related(ctx, node, a)
		case "list", "watch":
			if a.fieldEquals("spec.nodeName", node) {
				return allow, ""
			}
			if a.name != "" {
				return z.related(ctx, node, a)
			}
			return noOpinion, "can only list/watch pods with spec.nodeName field selector"
		case "create", "delete":
			// Mirror pods; NodeRestriction keeps them to this node.
			return allow, ""
		}
	case "status":
		if a.verb == "update" || a.verb == "patch" {
			return allow, "" // NodeRestriction: only pods bound to this node
		}
	}
	// Not exec, attach, portforward, log, binding or eviction: a kubelet
	// neither runs commands in pods through the API nor places them.
	return noOpinion, ""
}

func authorizeNodeObject(node string, a *attributes) (decision, string) {
	switch a.subresource {
	case "":
		switch a.verb {
		case "create", "update", "patch":
			return allow, "" // NodeRestriction: only its own Node
		case "get", "list", "watch":
			switch a.name {
			case node:
				return allow, ""
			case "":
				return noOpinion, fmt.Sprintf("node '%s' cannot read all nodes, only its own Node object", node)
			default:
				return noOpinion, fmt.Sprintf("node '%s' cannot read '%s', only its own Node object", node, a.name)
			}
		}
	case "status":
		if a.verb == "update" || a.verb == "patch" {
			return allow, ""
		}
	}
	return noOpinion, ""
}

func authorizeLease(node string, a *attributes) (decision, string) {
	switch a.verb {
	case "get", "create", "update", "patch", "delete":
	default:
		return noOpinion, "can only get, create, update, patch, or delete a node lease"
	}
	if a.namespace != "kube-node-lease" {
		return noOpinion, `can only access leases in the "kube-node-lease" system namespace`
	}
	// A create's name is in the body: NodeRestriction checks it.
	if a.verb != "create" && a.name != node {
		return noOpinion, "can only access node lease with the same name as the requesting node"
	}
	return allow, ""
}
