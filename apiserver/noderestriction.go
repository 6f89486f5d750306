package apiserver

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
)

// NodeRestriction admission, as Kubernetes' plugin of that name: what the
// node authorizer let through because it could not see the object, this
// checks against the object. A kubelet may create only mirror pods bound
// to itself that use no secret, config map, claim or service account;
// delete only pods bound to itself; write the status only of pods bound
// to itself; register, update and report status only for its own Node,
// without touching its taints or the labels that steer workloads; and
// create only its own Lease.
//
// op is "create", "update" or "delete"; old is nil on create.
func (s *Server) admitNodeRestriction(ctx context.Context, h *resourceHandler, op, sub string, obj, old runtime.Object) error {
	node, isNode := nodeIdentity(UserFrom(ctx))
	if !isNode || h.res.Group != "" && h.res.Group != "coordination.k8s.io" {
		return nil
	}
	refuse := func(name, format string, args ...any) error {
		return apierrors.NewForbidden(h.res.GroupResource(), name, fmt.Errorf(format, args...))
	}
	switch o := obj.(type) {
	case *corev1.Pod:
		switch {
		case sub == "status":
			if old.(*corev1.Pod).Spec.NodeName != node {
				return refuse(o.Name, "node %q can only update pod status for pods with spec.nodeName set to itself", node)
			}
			if !reflect.DeepEqual(o.Labels, old.(*corev1.Pod).Labels) {
				return refuse(o.Name, "node %q cannot update labels through pod status", node)
			}
		case op == "create":
			if err := mirrorPodRestriction(node, o, refuse); err != nil {
				return err
			}
			return s.mirrorPodOwner(ctx, node, o, refuse)
		case op == "delete":
			if o.Spec.NodeName != node {
				return refuse(o.Name, "node %q can only delete pods with spec.nodeName set to itself", node)
			}
		default:
			return refuse(o.Name, "unexpected operation %q, node %q can only create and delete mirror pods", op, node)
		}
	case *corev1.Node:
		if o.Name != node {
			return refuse(o.Name, "node %q is not allowed to modify node %q", node, o.Name)
		}
		switch op {
		case "create":
			if o.Spec.ConfigSource != nil {
				return refuse(o.Name, "node %q is not allowed to create pods with a non-nil configSource", node)
			}
			if bad := forbiddenNodeLabels(o.Labels, nil, false); len(bad) > 0 {
				return refuse(o.Name, "node %q is not allowed to set the following labels: %s", node, strings.Join(bad, ", "))
			}
		case "update":
			prev := old.(*corev1.Node)
			if o.Spec.ConfigSource != nil && !reflect.DeepEqual(o.Spec.ConfigSource, prev.Spec.ConfigSource) {
				return refuse(o.Name, "node %q is not allowed to update configSource to a new non-nil configSource", node)
			}
			if !taintsEqual(o.Spec.Taints, prev.Spec.Taints) {
				return refuse(o.Name, "node %q is not allowed to modify taints", node)
			}
			if bad := forbiddenNodeLabels(o.Labels, prev.Labels, true); len(bad) > 0 {
				return refuse(o.Name, "is not allowed to modify labels: %s", strings.Join(bad, ", "))
			}
		}
	case *coordinationv1.Lease:
		if o.Namespace != "kube-node-lease" {
			return refuse(o.Name, `can only access leases in the "kube-node-lease" system namespace`)
		}
		if o.Name != node {
			return refuse(o.Name, "can only access node lease with the same name as the requesting node")
		}
	}
	return nil
}

// mirrorPodRestriction is what a kubelet's pod create must satisfy.
func mirrorPodRestriction(node string, pod *corev1.Pod, refuse func(name, format string, args ...any) error) error {
	if _, ok := pod.Annotations[corev1.MirrorPodAnnotationKey]; !ok {
		return refuse(pod.Name, "pod does not have %q annotation, node %q can only create mirror pods", corev1.MirrorPodAnnotationKey, node)
	}
	if pod.Spec.NodeName != node {
		return refuse(pod.Name, "node %q can only create pods with spec.nodeName set to itself", node)
	}
	if len(pod.OwnerReferences) > 1 {
		return refuse(pod.Name, "node %q can only create pods with a single owner reference set to itself", node)
	}
	if len(pod.OwnerReferences) == 1 {
		o := pod.OwnerReferences[0]
		if o.APIVersion != "v1" || o.Kind != "Node" || o.Name != node {
			return refuse(pod.Name, "node %q can only create pods with an owner reference set to itself", node)
		}
		if o.Controller == nil || !*o.Controller {
			return refuse(pod.Name, "node %q can only create pods with a controller owner reference set to itself", node)
		}
		if o.BlockOwnerDeletion != nil && *o.BlockOwnerDeletion {
			return refuse(pod.Name, "node %q must not set blockOwnerDeletion on an owner reference", node)
		}
	}
	if pod.Spec.ServiceAccountName != "" {
		return refuse(pod.Name, "node %q can not create pods that reference a service account", node)
	}
	for _, kind := range []string{"secrets", "configmaps", "persistentvolumeclaims"} {
		for _, r := range podReferences(pod) {
			if r.kind == kind {
				return refuse(pod.Name, "node %q can not create pods that reference %s", node, kind)
			}
		}
	}
	return nil
}

// mirrorPodOwner checks that a mirror pod's owner is this very Node
// object, not an earlier one of the same name.
func (s *Server) mirrorPodOwner(ctx context.Context, node string, pod *corev1.Pod, refuse func(name, format string, args ...any) error) error {
	if len(pod.OwnerReferences) == 0 {
		return nil
	}
	obj, err := s.nodes.Get(ctx, "", node)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return err
		}
		return refuse(pod.Name, "error looking up node %s to verify uid: %v", node, err)
	}
	if uid := obj.(*corev1.Node).UID; pod.OwnerReferences[0].UID != uid {
		return refuse(pod.Name, "node %s UID mismatch: expected %s got %s", node, pod.OwnerReferences[0].UID, uid)
	}
	return nil
}

// forbiddenNodeLabels lists the labels a kubelet changed but may not: the
// node-restriction.kubernetes.io/ ones always, and on update any other
// kubernetes.io or k8s.io label that is not one a kubelet sets itself.
func forbiddenNodeLabels(labels, old map[string]string, update bool) []string {
	var bad []string
	changed := map[string]bool{}
	for k, v := range labels {
		if ov, ok := old[k]; !ok || ov != v {
			changed[k] = true
		}
	}
	for k := range old {
		if _, ok := labels[k]; !ok {
			changed[k] = true
		}
	}
	for k := range changed {
		ns := labelNamespace(k)
		switch {
		case inLabelNamespace(ns, corev1.LabelNamespaceNodeRestriction):
			bad = append(bad, k)
		case update && (inLabelNamespace(ns, "kubernetes.io") || inLabelNamespace(ns, "k8s.io")) && !isKubeletLabel(k):
			bad = append(bad, k)
		}
	}
	sort.Strings(bad)
	return bad
}

// kubeletLabels are the kubernetes.io labels a kubelet sets on its Node.
var kubeletLabels = map[string]bool{
	corev1.LabelHostname: true, corev1.LabelTopologyZone: true, corev1.LabelTopologyRegion: true,
	corev1.LabelFailureDomainBetaZone: true, corev1.LabelFailureDomainBetaRegion: true,
	corev1.LabelInstanceType: true, corev1.LabelInstanceTypeStable: true,
	corev1.LabelOSStable: true, corev1.LabelArchStable: true,
	"beta.kubernetes.io/os": true, "beta.kubernetes.io/arch": true,
}

func isKubeletLabel(key string) bool {
	ns := labelNamespace(key)
	return kubeletLabels[key] || inLabelNamespace(ns, "kubelet.kubernetes.io") || inLabelNamespace(ns, "node.kubernetes.io")
}

func labelNamespace(key string) string {
	ns, _, ok := strings.Cut(key, "/")
	if !ok {
		return ""
	}
	return ns
}

// inLabelNamespace reports whether ns is domain or one of its subdomains.
func inLabelNamespace(ns, domain string) bool {
	return ns == domain || strings.HasSuffix(ns, "."+domain)
}

func taintsEqual(a, b []corev1.Taint) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].MatchTaint(&b[i]) || a[i].Value != b[i].Value || !a[i].TimeAdded.Equal(b[i].TimeAdded) {
			return false
		}
	}
	return true
}
