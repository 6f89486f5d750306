package apiserver

import (
	"fmt"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"minik/apiserver/defaults"
	"minik/apiserver/validation"
)

// The pure part of upstream's service strategy and allocation set-up: what
// it infers from the linked fields of a Service (clusterIP and clusterIPs,
// the IP families, fields that only some types use) before validation.

// normalizeClusterIPs keeps clusterIP and clusterIPs in step for clients
// that set only one of them (upstream's NormalizeClusterIPs).
func normalizeClusterIPs(svc, old *corev1.Service) {
	spec := &svc.Spec
	if old == nil {
		if spec.ClusterIP != "" && len(spec.ClusterIPs) == 0 {
			spec.ClusterIPs = []string{spec.ClusterIP}
		}
		return
	}
	// An old client patched some other field and sent no clusterIPs.
	if len(old.Spec.ClusterIPs) > 0 && len(spec.ClusterIPs) == 0 && old.Spec.ClusterIP == spec.ClusterIP {
		spec.ClusterIPs = old.Spec.ClusterIPs
	}
	if old.Spec.ClusterIP != spec.ClusterIP {
		sameIPs := slices.Equal(old.Spec.ClusterIPs, spec.ClusterIPs)
		if old.Spec.ClusterIP != "" && spec.ClusterIP == "" && sameIPs {
			spec.ClusterIPs = nil // cleared on their behalf
		}
		if spec.ClusterIP != "" && sameIPs {
			spec.ClusterIPs = []string{spec.ClusterIP}
		}
	}
}

// patchAllocatedValues fills in, on update, the allocated values a client
// left out (a PUT of a manifest without clusterIP or nodePort), as upstream
// does for idempotence.
func patchAllocatedValues(svc, old *corev1.Service) {
	if svc.Spec.Type != corev1.ServiceTypeExternalName && old.Spec.Type != corev1.ServiceTypeExternalName {
		if svc.Spec.ClusterIP == "" {
			svc.Spec.ClusterIP = old.Spec.ClusterIP
		}
		if len(svc.Spec.ClusterIPs) == 0 && len(old.Spec.ClusterIPs) > 0 {
			svc.Spec.ClusterIPs = old.Spec.ClusterIPs
		}
	}
	if needsNodePorts(svc) && needsNodePorts(old) {
		used := map[int32]bool{}
		oldByName := map[string]int32{}
		for _, p := range old.Spec.Ports {
			oldByName[p.Name] = p.NodePort
		}
		inNew := map[int32]bool{}
		for _, p := range svc.Spec.Ports {
			if p.NodePort != 0 {
				inNew[p.NodePort] = true
			}
		}
		for _, p := range old.Spec.Ports {
			if p.NodePort != 0 && inNew[p.NodePort] {
				used[p.NodePort] = true // kept by the client for some port
			}
		}
		for i := range svc.Spec.Ports {
			p := &svc.Spec.Ports[i]
			if p.NodePort == 0 && !used[oldByName[p.Name]] {
				p.NodePort = oldByName[p.Name]
			}
		}
	}
	if validation.NeedsHealthCheck(svc) && validation.NeedsHealthCheck(old) && svc.Spec.HealthCheckNodePort == 0 {
		svc.Spec.HealthCheckNodePort = old.Spec.HealthCheckNodePort
	}
}

// dropTypeDependentFields clears, when the type changes, the fields the new
// type does not use, if the client left them as they were (upstream's
// update strategy). Their allocations go with them.
func dropTypeDependentFields(svc, old *corev1.Service) {
	spec := &svc.Spec
	if old.Spec.Type != corev1.ServiceTypeExternalName && spec.Type == corev1.ServiceTypeExternalName {
		if old.Spec.ClusterIP == spec.ClusterIP && slices.Equal(old.Spec.ClusterIPs, spec.ClusterIPs) {
			spec.ClusterIP, spec.ClusterIPs = "", nil
		}
		if slices.Equal(old.Spec.IPFamilies, spec.IPFamilies) {
			spec.IPFamilies = nil
		}
		if ptr.Deref(old.Spec.IPFamilyPolicy, "") == ptr.Deref(spec.IPFamilyPolicy, "") {
			spec.IPFamilyPolicy = nil
		}
	}
	if needsNodePorts(old) && !needsNodePorts(svc) && noNewNodePorts(svc, old) {
		for i := range spec.Ports {
			spec.Ports[i].NodePort = 0
		}
	}
	if validation.NeedsHealthCheck(old) && !validation.NeedsHealthCheck(svc) && old.Spec.HealthCheckNodePort == spec.HealthCheckNodePort {
		spec.HealthCheckNodePort = 0
	}
	if old.Spec.Type == corev1.ServiceTypeLoadBalancer && spec.Type != corev1.ServiceTypeLoadBalancer {
		if spec.AllocateLoadBalancerNodePorts != nil && old.Spec.AllocateLoadBalancerNodePorts != nil &&
			*spec.AllocateLoadBalancerNodePorts == *old.Spec.AllocateLoadBalancerNodePorts {
			spec.AllocateLoadBalancerNodePorts = nil
		}
		if ptr.Deref(old.Spec.LoadBalancerClass, "") == ptr.Deref(spec.LoadBalancerClass, "") &&
			(old.Spec.LoadBalancerClass == nil) == (spec.LoadBalancerClass == nil) {
			spec.LoadBalancerClass = nil
		}
	}
	if defaults.ExternallyAccessible(old) && !defaults.ExternallyAccessible(svc) && old.Spec.ExternalTrafficPolicy == spec.ExternalTrafficPolicy {
		spec.ExternalTrafficPolicy = ""
	}
	if spec.Type != corev1.ServiceTypeLoadBalancer {
		svc.Status.LoadBalancer = corev1.LoadBalancerStatus{}
	}
}

// noNewNodePorts: every node port of svc was already old's.
func noNewNodePorts(svc, old *corev1.Service) bool {
	have := map[int32]bool{}
	for _, p := range old.Spec.Ports {
		have[p.NodePort] = true
	}
	for _, p := range svc.Spec.Ports {
		if p.NodePort != 0 && !have[p.NodePort] {
			return false
		}
	}
	return true
}

// initIPFamilies sets ipFamilyPolicy and ipFamilies from the request and
// the cluster's single IP family, refusing what this cluster cannot give
// (upstream's initIPFamilyFields, for a single-stack cluster).
func (a *serviceAllocators) initIPFamilies(svc, old *corev1.Service) field.ErrorList {
	spec := &svc.Spec
	if spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	if spec.IPFamilyPolicy == nil {
		switch {
		case old != nil && old.Spec.IPFamilyPolicy != nil:
			spec.IPFamilyPolicy = old.Spec.IPFamilyPolicy
		case spec.ClusterIP == corev1.ClusterIPNone && len(spec.Selector) == 0:
			spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicyRequireDualStack) // headless, selectorless
		default:
			spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicySingleStack)
		}
	}
	if errs := validation.ServiceClusterIPFields(svc); len(errs) > 0 {
		return errs
	}
	policyPath := field.NewPath("spec", "ipFamilyPolicy")
	policy := *spec.IPFamilyPolicy
	var errs field.ErrorList
	if old != nil {
		if policy == corev1.IPFamilyPolicySingleStack {
			if slices.Equal(old.Spec.ClusterIPs, spec.ClusterIPs) && len(spec.ClusterIPs) > 1 {
				spec.ClusterIPs = spec.ClusterIPs[:1]
			}
			if slices.Equal(old.Spec.IPFamilies, spec.IPFamilies) && len(spec.IPFamilies) > 1 {
				spec.IPFamilies = spec.IPFamilies[:1]
			}
		} else {
			if len(spec.ClusterIPs) < len(old.Spec.ClusterIPs) && len(old.Spec.ClusterIPs) == 2 && len(spec.ClusterIPs) == 1 {
				errs = append(errs, field.Invalid(policyPath, spec.IPFamilyPolicy, "must be 'SingleStack' to release the secondary cluster IP"))
			}
			if len(old.Spec.IPFamilies) == 2 && len(spec.IPFamilies) == 1 {
				errs = append(errs, field.Invalid(policyPath, spec.IPFamilyPolicy, "must be 'SingleStack' to release the secondary IP family"))
			}
		}
	}
	if policy == corev1.IPFamilyPolicySingleStack {
		if len(spec.ClusterIPs) == 2 {
			errs = append(errs, field.Invalid(policyPath, spec.IPFamilyPolicy, "must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified"))
		}
		if len(spec.IPFamilies) == 2 {
			errs = append(errs, field.Invalid(policyPath, spec.IPFamilyPolicy, "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified"))
		}
	}
	for i, ip := range spec.ClusterIPs {
		if ip == corev1.ClusterIPNone {
			break
		}
		if i < len(spec.IPFamilies) {
			continue
		}
		if fam := familyOf(ip); fam != a.family {
			errs = append(errs, field.Invalid(field.NewPath("spec", "clusterIPs").Index(i), spec.ClusterIPs,
				fmt.Sprintf("%s is not configured on this cluster", fam)))
		} else {
			spec.IPFamilies = append(spec.IPFamilies, fam)
		}
	}
	if len(errs) > 0 {
		return errs
	}
	if spec.ClusterIP == corev1.ClusterIPNone && len(spec.Selector) == 0 {
		// Headless and selectorless: any families, as upstream allows.
		if len(spec.IPFamilies) == 0 {
			spec.IPFamilies = []corev1.IPFamily{a.family}
		}
		if len(spec.IPFamilies) < 2 && policy != corev1.IPFamilyPolicySingleStack {
			spec.IPFamilies = append(spec.IPFamilies, otherFamily(spec.IPFamilies[0]))
		}
		return nil
	}
	if policy == corev1.IPFamilyPolicyRequireDualStack {
		errs = append(errs, field.Invalid(policyPath, spec.IPFamilyPolicy, "this cluster is not configured for dual-stack services"))
	}
	for i, fam := range spec.IPFamilies {
		if fam != a.family {
			errs = append(errs, field.Invalid(field.NewPath("spec", "ipFamilies").Index(i), fam, "not configured on this cluster"))
		}
	}
	if len(errs) > 0 {
		return errs
	}
	if len(spec.IPFamilies) == 0 {
		spec.IPFamilies = []corev1.IPFamily{a.family}
	}
	return nil
}

func familyOf(ip string) corev1.IPFamily {
	if isIPv6String(ip) {
		return corev1.IPv6Protocol
	}
	return corev1.IPv4Protocol
}

func otherFamily(f corev1.IPFamily) corev1.IPFamily {
	if f == corev1.IPv4Protocol {
		return corev1.IPv6Protocol
	}
	return corev1.IPv4Protocol
}

func isIPv6String(ip string) bool {
	addr, err := netip.ParseAddr(ip)
	return err == nil && addr.Is6() && !addr.Is4In6()
}
