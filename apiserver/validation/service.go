package validation

import (
	"fmt"
	"net"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Service rules follow upstream's ValidateService, ValidateServiceUpdate
// and ValidateServiceStatusUpdate. What needs the cluster's configuration
// (the service IP range, the node port range, what is already allocated,
// the IP families) is checked when the service is allocated, as upstream
// does in its REST storage.

var (
	serviceTypes = []corev1.ServiceType{corev1.ServiceTypeClusterIP, corev1.ServiceTypeExternalName,
		corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeNodePort}
	sessionAffinities        = []corev1.ServiceAffinity{corev1.ServiceAffinityClientIP, corev1.ServiceAffinityNone}
	externalTrafficPolicies  = []corev1.ServiceExternalTrafficPolicy{corev1.ServiceExternalTrafficPolicyCluster, corev1.ServiceExternalTrafficPolicyLocal}
	internalTrafficPolicies  = []corev1.ServiceInternalTrafficPolicy{corev1.ServiceInternalTrafficPolicyCluster, corev1.ServiceInternalTrafficPolicyLocal}
	ipFamilies               = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
	ipFamilyPolicies         = []corev1.IPFamilyPolicy{corev1.IPFamilyPolicyPreferDualStack, corev1.IPFamilyPolicyRequireDualStack, corev1.IPFamilyPolicySingleStack}
	trafficDistributions     = []string{corev1.ServiceTrafficDistributionPreferClose}
	loadBalancerIPModes      = []corev1.LoadBalancerIPMode{corev1.LoadBalancerIPModeProxy, corev1.LoadBalancerIPModeVIP}
	maxClientIPAffinityInSec = int32(86400) // upstream's MaxClientIPServiceAffinitySeconds
)

// IsHeadless reports whether svc is a headless service (clusterIPs: [None]).
func IsHeadless(svc *corev1.Service) bool {
	return len(svc.Spec.ClusterIPs) == 1 && svc.Spec.ClusterIPs[0] == corev1.ClusterIPNone
}

// serviceName is the rule for a Service's name and for a reference to a
// Service by name (an Ingress backend): an RFC 1123 label, which may
// start with a digit. This is kube-apiserver's rule under
// RelaxedServiceNameValidation (KEP-5311: alpha in v1.34, beta and on by
// default in v1.36, GA and locked on in v1.37); before it, a Service name
// was an RFC 1035 label and had to start with a letter. Only a create
// checks it: the name is immutable, so an update never checks it again.
var serviceName = apimachineryvalidation.NameIsDNSLabel

func validateService(svc *corev1.Service) field.ErrorList {
	errs := objectMeta(&svc.ObjectMeta, true, serviceName)
	return append(errs, validateServiceSpec(svc, nil)...)
}

// validateServiceSpec checks everything but the metadata itself (the
// source-ranges annotation included).
func validateServiceSpec(svc *corev1.Service, oldIPs []string) field.ErrorList {
	var errs field.ErrorList
	spec := &svc.Spec
	headless := IsHeadless(svc)
	portsPath := specPath.Child("ports")

	if len(spec.Ports) == 0 && !headless && spec.Type != corev1.ServiceTypeExternalName {
		errs = append(errs, field.Required(portsPath, ""))
	}
	switch spec.Type {
	case corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeNodePort:
		if headless {
			errs = append(errs, field.Invalid(specPath.Child("clusterIPs").Index(0), spec.ClusterIPs[0],
				fmt.Sprintf("may not be set to 'None' for %s services", spec.Type)))
		}
	case corev1.ServiceTypeExternalName:
		if len(spec.ClusterIPs) > 0 {
			errs = append(errs, field.Forbidden(specPath.Child("clusterIPs"), "may not be set for ExternalName services"))
		}
		if len(spec.IPFamilies) > 0 {
			errs = append(errs, field.Forbidden(specPath.Child("ipFamilies"), "may not be set for ExternalName services"))
		}
		if spec.IPFamilyPolicy != nil {
			errs = append(errs, field.Forbidden(specPath.Child("ipFamilyPolicy"), "may not be set for ExternalName services"))
		}
		// The name (a CNAME) may end with a dot to say it is fully qualified.
		if cname := strings.TrimSuffix(spec.ExternalName, "."); cname != "" {
			errs = append(errs, dnsSubdomain(cname, specPath.Child("externalName"))...)
		} else {
			errs = append(errs, field.Required(specPath.Child("externalName"), ""))
		}
	}

	names := map[string]bool{}
	for i := range spec.Ports {
		errs = append(errs, validateServicePort(&spec.Ports[i], len(spec.Ports) > 1, names, portsPath.Index(i))...)
	}
	if spec.Selector != nil {
		errs = append(errs, metav1validation.ValidateLabels(spec.Selector, specPath.Child("selector"))...)
	}

	errs = append(errs, enumValue(specPath.Child("sessionAffinity"), spec.SessionAffinity, sessionAffinities)...)
	switch spec.SessionAffinity {
	case corev1.ServiceAffinityClientIP:
		errs = append(errs, validateClientIPAffinity(spec.SessionAffinityConfig, specPath.Child("sessionAffinityConfig"))...)
	case corev1.ServiceAffinityNone:
		if spec.SessionAffinityConfig != nil {
			errs = append(errs, field.Forbidden(specPath.Child("sessionAffinityConfig"),
				fmt.Sprintf("must not be set when session affinity is %s", corev1.ServiceAffinityNone)))
		}
	}

	errs = append(errs, validateClusterIPFields(svc, oldIPs)...)

	for i, ip := range spec.ExternalIPs {
		p := specPath.Child("externalIPs").Index(i)
		if ipErrs := validation.IsValidIPForLegacyField(p, ip, true, nil); len(ipErrs) > 0 {
			errs = append(errs, ipErrs...)
		} else {
			errs = append(errs, nonSpecialIP(ip, p)...)
		}
	}

	errs = append(errs, enumValue(specPath.Child("type"), spec.Type, serviceTypes)...)
	if spec.Type == corev1.ServiceTypeClusterIP {
		for i := range spec.Ports {
			if spec.Ports[i].NodePort != 0 {
				errs = append(errs, field.Forbidden(portsPath.Index(i).Child("nodePort"), "may not be used when `type` is 'ClusterIP'"))
			}
		}
	}

	// Node ports and ports must be unique per protocol.
	type protoPort struct {
		proto corev1.Protocol
		port  int32
	}
	nodePorts, ports := map[protoPort]bool{}, map[protoPort]bool{}
	for i, p := range spec.Ports {
		if p.NodePort != 0 {
			k := protoPort{p.Protocol, p.NodePort}
			if nodePorts[k] {
				errs = append(errs, field.Duplicate(portsPath.Index(i).Child("nodePort"), p.NodePort))
			}
			nodePorts[k] = true
		}
	}
	for i, p := range spec.Ports {
		k := protoPort{p.Protocol, p.Port}
		if ports[k] {
			// Upstream reports the (protocol, port) pair as an internal ServicePort.
			errs = append(errs, field.Duplicate(portsPath.Index(i), corev1.ServicePort{Protocol: p.Protocol, Port: p.Port}))
		}
		ports[k] = true
	}

	errs = append(errs, validateSourceRanges(svc)...)

	if spec.AllocateLoadBalancerNodePorts != nil && spec.Type != corev1.ServiceTypeLoadBalancer {
		errs = append(errs, field.Forbidden(specPath.Child("allocateLoadBalancerNodePorts"), "may only be used when `type` is 'LoadBalancer'"))
	}
	if spec.Type == corev1.ServiceTypeLoadBalancer && spec.AllocateLoadBalancerNodePorts == nil {
		// Upstream's path has no "spec." here.
		errs = append(errs, field.Required(field.NewPath("allocateLoadBalancerNodePorts"), ""))
	}
	if spec.LoadBalancerClass != nil {
		if spec.Type == corev1.ServiceTypeLoadBalancer {
			errs = append(errs, qualifiedName(*spec.LoadBalancerClass, specPath.Child("loadBalancerClass"))...)
		} else {
			errs = append(errs, field.Forbidden(specPath.Child("loadBalancerClass"), "may only be used when `type` is 'LoadBalancer'"))
		}
	}
	errs = append(errs, validateTrafficPolicies(svc)...)
	if td := spec.TrafficDistribution; td != nil && *td != corev1.ServiceTrafficDistributionPreferClose {
		errs = append(errs, field.NotSupported(specPath.Child("trafficDistribution"), *td, trafficDistributions))
	}
	return errs
}

func validateServicePort(p *corev1.ServicePort, requireName bool, names map[string]bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if requireName && p.Name == "" {
		errs = append(errs, field.Required(fldPath.Child("name"), ""))
	} else if p.Name != "" {
		errs = append(errs, dnsLabel(p.Name, fldPath.Child("name"))...)
		if names[p.Name] {
			errs = append(errs, field.Duplicate(fldPath.Child("name"), p.Name))
		}
		names[p.Name] = true
	}
	for _, msg := range validation.IsValidPortNum(int(p.Port)) {
		errs = append(errs, field.Invalid(fldPath.Child("port"), p.Port, msg))
	}
	errs = append(errs, enumValue(fldPath.Child("protocol"), p.Protocol, supportedPortProtocols)...)
	errs = append(errs, portNumOrName(p.TargetPort, fldPath.Child("targetPort"))...)
	if p.AppProtocol != nil {
		errs = append(errs, qualifiedName(*p.AppProtocol, fldPath.Child("appProtocol"))...)
	}
	return errs
}

func validateClientIPAffinity(c *corev1.SessionAffinityConfig, fldPath *field.Path) field.ErrorList {
	msg := fmt.Sprintf("when session affinity type is %s", corev1.ServiceAffinityClientIP)
	switch {
	case c == nil:
		return field.ErrorList{field.Required(fldPath, msg)}
	case c.ClientIP == nil:
		return field.ErrorList{field.Required(fldPath.Child("clientIP"), msg)}
	case c.ClientIP.TimeoutSeconds == nil:
		return field.ErrorList{field.Required(fldPath.Child("clientIP", "timeoutSeconds"), msg)}
	}
	if t := *c.ClientIP.TimeoutSeconds; t <= 0 || t > maxClientIPAffinityInSec {
		return field.ErrorList{field.Invalid(fldPath.Child("clientIP", "timeoutSeconds"), t,
			fmt.Sprintf("must be greater than 0 and less than %d", maxClientIPAffinityInSec))}
	}
	return nil
}

// validateClusterIPFields checks clusterIP, clusterIPs, ipFamilies and
// ipFamilyPolicy together (upstream's ValidateServiceClusterIPsRelatedFields).
// oldIPs are the stored service's IPs, accepted even where a stricter
// parser would now refuse them.
func validateClusterIPFields(svc *corev1.Service, oldIPs []string) field.ErrorList {
	spec := &svc.Spec
	if spec.Type == corev1.ServiceTypeExternalName {
		return nil // checked above: all must be unset
	}
	var errs field.ErrorList
	ipsPath := specPath.Child("clusterIPs")
	if spec.ClusterIP != "" {
		if len(spec.ClusterIPs) == 0 {
			errs = append(errs, field.Required(ipsPath, ""))
		} else if spec.ClusterIPs[0] != spec.ClusterIP {
			errs = append(errs, field.Invalid(ipsPath, spec.ClusterIPs, "first value must match `clusterIP`"))
		}
	} else if len(spec.ClusterIPs) != 0 {
		errs = append(errs, field.Invalid(ipsPath, spec.ClusterIPs, "must be empty when `clusterIP` is not specified"))
	}

	seen := map[corev1.IPFamily]bool{}
	for i, f := range spec.IPFamilies {
		p := specPath.Child("ipFamilies").Index(i)
		if f != corev1.IPv4Protocol && f != corev1.IPv6Protocol {
			errs = append(errs, field.NotSupported(p, f, ipFamilies))
		}
		if seen[f] {
			errs = append(errs, field.Duplicate(p, f))
		}
		seen[f] = true
	}
	if pol := spec.IPFamilyPolicy; pol != nil {
		switch *pol {
		case corev1.IPFamilyPolicySingleStack, corev1.IPFamilyPolicyPreferDualStack, corev1.IPFamilyPolicyRequireDualStack:
		default:
			errs = append(errs, field.NotSupported(specPath.Child("ipFamilyPolicy"), *pol, ipFamilyPolicies))
		}
	}

	badIPs := false
	for i, ip := range spec.ClusterIPs {
		if i == 0 && ip == corev1.ClusterIPNone {
			if len(spec.ClusterIPs) > 1 {
				badIPs = true
				errs = append(errs, field.Invalid(ipsPath, spec.ClusterIPs, "'None' must be the first and only value"))
			}
			continue
		}
		ipErrs := validation.IsValidIPForLegacyField(ipsPath.Index(i), ip, true, oldIPs)
		badIPs = badIPs || len(ipErrs) > 0
		errs = append(errs, ipErrs...)
	}
	if len(spec.ClusterIPs) > 2 {
		errs = append(errs, field.Invalid(ipsPath, spec.ClusterIPs, "may only hold up to 2 values"))
	}
	if badIPs {
		return errs // family checks on bad IPs would only confuse
	}
	if len(spec.ClusterIPs) == 2 && isIPv6(spec.ClusterIPs[0]) == isIPv6(spec.ClusterIPs[1]) {
		errs = append(errs, field.Invalid(ipsPath, spec.ClusterIPs, "may specify no more than one IP for each IP family"))
	}
	if !IsHeadless(svc) {
		for i, ip := range spec.ClusterIPs {
			if i >= len(spec.IPFamilies) {
				break
			}
			switch {
			case spec.IPFamilies[i] == corev1.IPv4Protocol && isIPv6(ip):
				errs = append(errs, field.Invalid(ipsPath.Index(i), ip, fmt.Sprintf("expected an IPv4 value as indicated by `ipFamilies[%v]`", i)))
			case spec.IPFamilies[i] == corev1.IPv6Protocol && !isIPv6(ip):
				errs = append(errs, field.Invalid(ipsPath.Index(i), ip, fmt.Sprintf("expected an IPv6 value as indicated by `ipFamilies[%v]`", i)))
			}
		}
	}
	return errs
}

func isIPv6(ip string) bool {
	parsed := net.ParseIP(ip)
	return parsed != nil && parsed.To4() == nil
}

// validateSourceRanges checks loadBalancerSourceRanges, or the annotation
// that preceded it.
func validateSourceRanges(svc *corev1.Service) field.ErrorList {
	var errs field.ErrorList
	notLB := svc.Spec.Type != corev1.ServiceTypeLoadBalancer
	if len(svc.Spec.LoadBalancerSourceRanges) > 0 {
		p := specPath.Child("LoadBalancerSourceRanges") // upstream's capitalisation
		if notLB {
			errs = append(errs, field.Forbidden(p, "may only be used when `type` is 'LoadBalancer'"))
		}
		for i, v := range svc.Spec.LoadBalancerSourceRanges {
			errs = append(errs, validation.IsValidCIDRForLegacyField(p.Index(i), strings.TrimSpace(v), true, nil)...)
		}
		return errs
	}
	val, ok := svc.Annotations[corev1.AnnotationLoadBalancerSourceRangesKey]
	if !ok {
		return nil
	}
	p := metaPath.Child("annotations").Key(corev1.AnnotationLoadBalancerSourceRangesKey)
	if notLB {
		errs = append(errs, field.Forbidden(p, "may only be used when `type` is 'LoadBalancer'"))
	}
	if val = strings.TrimSpace(val); val != "" {
		for _, v := range strings.Split(val, ",") {
			errs = append(errs, validation.IsValidCIDRForLegacyField(p, strings.TrimSpace(v), true, nil)...)
		}
	}
	return errs
}

func validateTrafficPolicies(svc *corev1.Service) field.ErrorList {
	var errs field.ErrorList
	spec := &svc.Spec
	external := spec.Type == corev1.ServiceTypeLoadBalancer || spec.Type == corev1.ServiceTypeNodePort ||
		(spec.Type == corev1.ServiceTypeClusterIP && len(spec.ExternalIPs) > 0)
	etpPath := specPath.Child("externalTrafficPolicy")
	if !external {
		if spec.ExternalTrafficPolicy != "" {
			errs = append(errs, field.Invalid(etpPath, spec.ExternalTrafficPolicy, "may only be set for externally-accessible services"))
		}
	} else {
		errs = append(errs, enumValue(etpPath, spec.ExternalTrafficPolicy, externalTrafficPolicies)...)
	}
	hcPath := specPath.Child("healthCheckNodePort")
	if !NeedsHealthCheck(svc) {
		if spec.HealthCheckNodePort != 0 {
			errs = append(errs, field.Invalid(hcPath, spec.HealthCheckNodePort,
				"may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"))
		}
	} else if spec.HealthCheckNodePort == 0 {
		errs = append(errs, field.Required(hcPath, ""))
	} else {
		for _, msg := range validation.IsValidPortNum(int(spec.HealthCheckNodePort)) {
			errs = append(errs, field.Invalid(hcPath, spec.HealthCheckNodePort, msg))
		}
	}
	itp := specPath.Child("internalTrafficPolicy")
	if spec.InternalTrafficPolicy == nil {
		// Not required for ExternalName: upstream never checked it there.
		if spec.Type == corev1.ServiceTypeClusterIP || spec.Type == corev1.ServiceTypeNodePort || spec.Type == corev1.ServiceTypeLoadBalancer {
			errs = append(errs, field.Required(itp, ""))
		}
	} else if p := *spec.InternalTrafficPolicy; p != corev1.ServiceInternalTrafficPolicyCluster && p != corev1.ServiceInternalTrafficPolicyLocal {
		errs = append(errs, field.NotSupported(itp, p, internalTrafficPolicies))
	}
	return errs
}

// NeedsHealthCheck reports whether svc needs a health check node port: a
// LoadBalancer with externalTrafficPolicy Local.
func NeedsHealthCheck(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
}

// validateServiceUpdate adds upstream's update rules: the cluster IPs and
// IP families may not change once set (only a secondary one may be added
// or released), the load balancer class is fixed while the service stays
// a LoadBalancer, and so is the health check node port while it is needed.
func validateServiceUpdate(svc, old *corev1.Service) field.ErrorList {
	errs := objectMetaUpdate(&svc.ObjectMeta, &old.ObjectMeta, true)
	errs = append(errs, validateClusterIPsUpdate(svc, old)...)
	errs = append(errs, validateIPFamiliesUpdate(svc, old)...)
	if old.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.Spec.Type == corev1.ServiceTypeLoadBalancer &&
		ptrString(old.Spec.LoadBalancerClass) != ptrString(svc.Spec.LoadBalancerClass) {
		errs = append(errs, field.Invalid(specPath.Child("loadBalancerClass"), svc.Spec.LoadBalancerClass, "may not change once set"))
	}
	if NeedsHealthCheck(old) && NeedsHealthCheck(svc) && svc.Spec.HealthCheckNodePort != old.Spec.HealthCheckNodePort {
		errs = append(errs, field.Forbidden(specPath.Child("healthCheckNodePort"), "field is immutable"))
	}
	return append(errs, validateServiceSpec(svc, old.Spec.ClusterIPs)...)
}

func ptrString(p *string) string {
	if p == nil {
		return "\x00nil"
	}
	return *p
}

func validateClusterIPsUpdate(svc, old *corev1.Service) field.ErrorList {
	if svc.Spec.Type == corev1.ServiceTypeExternalName || old.Spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	if IsHeadless(svc) && IsHeadless(old) {
		return nil
	}
	p := specPath.Child("clusterIPs")
	newIPs, oldIPs := svc.Spec.ClusterIPs, old.Spec.ClusterIPs
	var errs field.ErrorList
	switch {
	case len(oldIPs) == len(newIPs):
		for i := range oldIPs {
			if oldIPs[i] != newIPs[i] {
				errs = append(errs, field.Invalid(p.Index(i), newIPs, "may not change once set"))
			}
		}
	case len(oldIPs) > len(newIPs):
		if len(newIPs) == 0 {
			errs = append(errs, field.Invalid(p.Index(0), newIPs, "primary clusterIP can not be unset"))
		}
		if len(oldIPs) > 0 && len(newIPs) > 0 && newIPs[0] != oldIPs[0] {
			errs = append(errs, field.Invalid(p.Index(0), newIPs, "may not change once set"))
		}
		if len(newIPs) == 1 && (svc.Spec.IPFamilyPolicy == nil || *svc.Spec.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack) {
			errs = append(errs, field.Invalid(specPath.Child("ipFamilyPolicy"), svc.Spec.IPFamilyPolicy,
				"must be set to 'SingleStack' when releasing the secondary clusterIP"))
		}
	default:
		if len(oldIPs) > 0 && newIPs[0] != oldIPs[0] {
			errs = append(errs, field.Invalid(p.Index(0), newIPs, "may not change once set"))
		}
	}
	return errs
}

func validateIPFamiliesUpdate(svc, old *corev1.Service) field.ErrorList {
	if svc.Spec.Type == corev1.ServiceTypeExternalName || old.Spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	if IsHeadless(svc) || IsHeadless(old) {
		return nil // headless services may change families, and to or from headless is checked above
	}
	p := specPath.Child("ipFamilies")
	newF, oldF := svc.Spec.IPFamilies, old.Spec.IPFamilies
	var errs field.ErrorList
	switch {
	case len(oldF) == len(newF):
		for i := range oldF {
			if oldF[i] != newF[i] {
				errs = append(errs, field.Invalid(p.Index(0), newF, "may not change once set"))
			}
		}
	case len(oldF) > len(newF):
		if len(svc.Spec.ClusterIPs) == 0 {
			errs = append(errs, field.Invalid(p.Index(0), newF, "primary ipFamily can not be unset"))
		}
		if len(newF) > 0 && newF[0] != oldF[0] {
			errs = append(errs, field.Invalid(p.Index(0), svc.Spec.ClusterIPs, "may not change once set"))
		}
		if len(newF) == 1 && (svc.Spec.IPFamilyPolicy == nil || *svc.Spec.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack) {
			errs = append(errs, field.Invalid(specPath.Child("ipFamilyPolicy"), svc.Spec.IPFamilyPolicy,
				"must be set to 'SingleStack' when releasing the secondary ipFamily"))
		}
	default:
		if len(oldF) > 0 && len(newF) > 0 && newF[0] != oldF[0] {
			errs = append(errs, field.Invalid(p.Index(0), svc.Spec.ClusterIPs, "may not change once set"))
		}
	}
	return errs
}

// validateServiceStatus checks the load balancer status (upstream's
// ValidateLoadBalancerStatus): ingress only on LoadBalancers, valid IPs
// with an ipMode, DNS hostnames that are not IPs.
func validateServiceStatus(svc *corev1.Service) field.ErrorList {
	var errs field.ErrorList
	p := statusPath.Child("loadBalancer", "ingress")
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer && len(svc.Status.LoadBalancer.Ingress) > 0 {
		return field.ErrorList{field.Forbidden(p, "may only be used when `spec.type` is 'LoadBalancer'")}
	}
	for i, in := range svc.Status.LoadBalancer.Ingress {
		ip := p.Index(i)
		if in.IP != "" {
			errs = append(errs, validation.IsValidIPForLegacyField(ip.Child("ip"), in.IP, true, nil)...)
		}
		switch {
		case in.IPMode == nil && in.IP != "":
			errs = append(errs, field.Required(ip.Child("ipMode"), "must be specified when `ip` is set"))
		case in.IPMode != nil && in.IP == "":
			errs = append(errs, field.Forbidden(ip.Child("ipMode"), "may not be specified when `ip` is not set"))
		case in.IPMode != nil && *in.IPMode != corev1.LoadBalancerIPModeVIP && *in.IPMode != corev1.LoadBalancerIPModeProxy:
			errs = append(errs, field.NotSupported(ip.Child("ipMode"), *in.IPMode, loadBalancerIPModes))
		}
		if in.Hostname != "" {
			errs = append(errs, dnsSubdomain(in.Hostname, ip.Child("hostname"))...)
			if net.ParseIP(in.Hostname) != nil {
				errs = append(errs, field.Invalid(ip.Child("hostname"), in.Hostname, "must be a DNS name, not an IP address"))
			}
		}
	}
	return errs
}

// nonSpecialIP refuses the addresses upstream never accepts as an external
// IP or an endpoint (ValidateNonSpecialIP, ValidateEndpointIP).
func nonSpecialIP(value string, fldPath *field.Path) field.ErrorList {
	addr, err := netip.ParseAddr(value)
	if err != nil {
		ip := net.ParseIP(value)
		if ip == nil {
			return field.ErrorList{field.Invalid(fldPath, value, "must be a valid IP address")}
		}
		addr, _ = netip.AddrFromSlice(ip)
	}
	addr = addr.Unmap()
	var errs field.ErrorList
	if addr.IsUnspecified() {
		errs = append(errs, field.Invalid(fldPath, value, fmt.Sprintf("may not be unspecified (%v)", value)))
	}
	if addr.IsLoopback() {
		errs = append(errs, field.Invalid(fldPath, value, "may not be in the loopback range (127.0.0.0/8, ::1/128)"))
	}
	if addr.IsLinkLocalUnicast() {
		errs = append(errs, field.Invalid(fldPath, value, "may not be in the link-local range (169.254.0.0/16, fe80::/10)"))
	}
	if addr.IsLinkLocalMulticast() {
		errs = append(errs, field.Invalid(fldPath, value, "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"))
	}
	return errs
}

// ServiceClusterIPFields checks clusterIP, clusterIPs, ipFamilies and
// ipFamilyPolicy together. The apiserver runs it before it infers the IP
// families, as upstream does.
func ServiceClusterIPFields(svc *corev1.Service) field.ErrorList {
	return validateClusterIPFields(svc, nil)
}
