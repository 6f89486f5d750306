package validation

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

// The networking.k8s.io/v1 kinds people's manifests carry (NetworkPolicy,
// Ingress, IngressClass), checked as upstream's
// pkg/apis/networking/validation. Upstream lets an update keep values that
// older releases accepted (invalid CIDRs, secret names, wildcard rules);
// minik never stored such values, so an update is checked as a create.

// IsDefaultIngressClass reports whether ic is marked the default class:
// ingressclass.kubernetes.io/is-default-class is exactly "true" ("True"
// does not count: upstream compares the string).
func IsDefaultIngressClass(ic *networkingv1.IngressClass) bool {
	return ic.Annotations[networkingv1.AnnotationIsDefaultIngressClass] == "true"
}

const (
	// IngressClassAnnotation is the class annotation that came before
	// spec.ingressClassName.
	IngressClassAnnotation = "kubernetes.io/ingress.class"
	// maxIngressClassControllerLength bounds spec.controller, in bytes.
	maxIngressClassControllerLength = 250
)

var (
	networkPolicyProtocols = []corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP}
	policyTypes            = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}
	// ingressPathTypes are in upstream's (sorted) order of its message.
	ingressPathTypes = []networkingv1.PathType{networkingv1.PathTypeExact, networkingv1.PathTypeImplementationSpecific,
		networkingv1.PathTypePrefix}
	invalidPathSequences = []string{"//", "/./", "/../", "%2f", "%2F"}
	invalidPathSuffixes  = []string{"/..", "/."}
	parameterScopes      = []string{networkingv1.IngressClassParametersReferenceScopeCluster,
		networkingv1.IngressClassParametersReferenceScopeNamespace}
)

// validateNetworkPolicyRule checks one ingress or egress rule: its ports,
// and its peers (the rule's from or to, named by peersField).
func validateNetworkPolicyRule(ports []networkingv1.NetworkPolicyPort, peers []networkingv1.NetworkPolicyPeer, p *field.Path, peersField string) field.ErrorList {
	var errs field.ErrorList
	for j := range ports {
		errs = append(errs, validateNetworkPolicyPort(&ports[j], p.Child("ports").Index(j))...)
	}
	for j := range peers {
		errs = append(errs, validateNetworkPolicyPeer(&peers[j], p.Child(peersField).Index(j))...)
	}
	return errs
}

func validateNetworkPolicySpec(spec *networkingv1.NetworkPolicySpec, fldPath *field.Path) field.ErrorList {
	errs := metav1validation.ValidateLabelSelector(&spec.PodSelector, strictSelector, fldPath.Child("podSelector"))
	for i, rule := range spec.Ingress {
		errs = append(errs, validateNetworkPolicyRule(rule.Ports, rule.From, fldPath.Child("ingress").Index(i), "from")...)
	}
	for i, rule := range spec.Egress {
		errs = append(errs, validateNetworkPolicyRule(rule.Ports, rule.To, fldPath.Child("egress").Index(i), "to")...)
	}
	if len(spec.PolicyTypes) > len(policyTypes) {
		return append(errs, field.Invalid(fldPath.Child("policyTypes"), spec.PolicyTypes, "may not specify more than two policyTypes"))
	}
	for i, t := range spec.PolicyTypes {
		if t != networkingv1.PolicyTypeIngress && t != networkingv1.PolicyTypeEgress {
			errs = append(errs, field.NotSupported(fldPath.Child("policyTypes").Index(i), t, policyTypes))
		}
	}
	return errs
}

// validateNetworkPolicyPort: a port is a number or a name; a range
// (endPort) needs a number to start from.
func validateNetworkPolicyPort(port *networkingv1.NetworkPolicyPort, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if pr := port.Protocol; pr != nil && *pr != corev1.ProtocolTCP && *pr != corev1.ProtocolUDP && *pr != corev1.ProtocolSCTP {
		errs = append(errs, field.NotSupported(fldPath.Child("protocol"), *pr, networkPolicyProtocols))
	}
	endPath := fldPath.Child("endPort")
	switch {
	case port.Port == nil:
		if port.EndPort != nil {
			errs = append(errs, field.Invalid(endPath, *port.EndPort, "may not be specified when `port` is not specified"))
		}
	case port.Port.Type == intstr.String:
		if port.EndPort != nil {
			errs = append(errs, field.Invalid(endPath, *port.EndPort, "may not be specified when `port` is non-numeric"))
		}
		errs = append(errs, portNumOrName(*port.Port, fldPath.Child("port"))...)
	default:
		errs = append(errs, portNumOrName(*port.Port, fldPath.Child("port"))...)
		if port.EndPort != nil {
			if *port.EndPort < port.Port.IntVal {
				errs = append(errs, field.Invalid(endPath, *port.EndPort, "must be greater than or equal to `port`"))
			}
			for _, msg := range validation.IsValidPortNum(int(*port.EndPort)) {
				errs = append(errs, field.Invalid(endPath, *port.EndPort, msg))
			}
		}
	}
	return errs
}

// validateNetworkPolicyPeer: a peer selects pods, namespaces or both, or
// is an ipBlock alone.
func validateNetworkPolicyPeer(peer *networkingv1.NetworkPolicyPeer, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	peers := 0
	if peer.PodSelector != nil {
		peers++
		errs = append(errs, metav1validation.ValidateLabelSelector(peer.PodSelector, strictSelector, fldPath.Child("podSelector"))...)
	}
	if peer.NamespaceSelector != nil {
		peers++
		errs = append(errs, metav1validation.ValidateLabelSelector(peer.NamespaceSelector, strictSelector, fldPath.Child("namespaceSelector"))...)
	}
	if peer.IPBlock != nil {
		peers++
		errs = append(errs, validateIPBlock(peer.IPBlock, fldPath.Child("ipBlock"))...)
	}
	switch {
	case peers == 0:
		errs = append(errs, field.Required(fldPath, "must specify a peer"))
	case peers > 1 && peer.IPBlock != nil:
		errs = append(errs, field.Forbidden(fldPath, "may not specify both ipBlock and another peer"))
	}
	return errs
}

// validateIPBlock: a CIDR, and exceptions strictly inside it.
func validateIPBlock(b *networkingv1.IPBlock, fldPath *field.Path) field.ErrorList {
	if b.CIDR == "" {
		return field.ErrorList{field.Required(fldPath.Child("cidr"), "")}
	}
	errs := validation.IsValidCIDRForLegacyField(fldPath.Child("cidr"), b.CIDR, true, nil)
	_, cidr, err := netutils.ParseCIDRSloppy(b.CIDR)
	if err != nil {
		return errs // reported above
	}
	cidrBits, _ := cidr.Mask.Size()
	for i, ex := range b.Except {
		p := fldPath.Child("except").Index(i)
		errs = append(errs, validation.IsValidCIDRForLegacyField(p, ex, true, nil)...)
		_, except, err := netutils.ParseCIDRSloppy(ex)
		if err != nil {
			continue
		}
		if exceptBits, _ := except.Mask.Size(); !cidr.Contains(except.IP) || cidrBits >= exceptBits {
			errs = append(errs, field.Invalid(p, ex, "must be a strict subset of `cidr`"))
		}
	}
	return errs
}

// validateIngressCreate adds upstream's create-only rule: the old class
// annotation, when set beside spec.ingressClassName, must agree with it.
func validateIngressCreate(ing *networkingv1.Ingress) field.ErrorList {
	errs := validateIngressSpec(&ing.Spec, specPath)
	if class, ok := ing.Annotations[IngressClassAnnotation]; ok && ing.Spec.IngressClassName != nil && class != *ing.Spec.IngressClassName {
		// Upstream's path: "annotations", not "metadata.annotations".
		errs = append(errs, field.Invalid(field.NewPath("annotations").Child(IngressClassAnnotation), class,
			"must match `ingressClassName` when both are specified"))
	}
	return errs
}

func validateIngressSpec(spec *networkingv1.IngressSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(spec.Rules) == 0 && spec.DefaultBackend == nil {
		errs = append(errs, field.Invalid(fldPath, spec.Rules, "either `defaultBackend` or `rules` must be specified"))
	}
	if spec.DefaultBackend != nil {
		errs = append(errs, validateIngressBackend(spec.DefaultBackend, fldPath.Child("defaultBackend"))...)
	}
	for i, rule := range spec.Rules {
		p := fldPath.Child("rules").Index(i)
		if rule.Host != "" {
			errs = append(errs, ingressHost(rule.Host, p.Child("host"))...)
		}
		if rule.HTTP != nil {
			errs = append(errs, validateHTTPIngressRule(rule.HTTP, p.Child("http"))...)
		}
	}
	for i, tls := range spec.TLS {
		p := fldPath.Child("tls").Index(i)
		for j, host := range tls.Hosts {
			errs = append(errs, dnsName(host, p.Child("hosts").Index(j))...)
		}
		if tls.SecretName != "" {
			for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(tls.SecretName, false) {
				errs = append(errs, field.Invalid(p.Child("secretName"), tls.SecretName, msg))
			}
		}
	}
	if spec.IngressClassName != nil {
		for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(*spec.IngressClassName, false) {
			errs = append(errs, field.Invalid(fldPath.Child("ingressClassName"), *spec.IngressClassName, msg))
		}
	}
	return errs
}

// ingressHost: a rule's host is a DNS name, "*." allowed only as its
// first label, and not an IP address.
func ingressHost(host string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if netutils.ParseIPSloppy(host) != nil {
		errs = append(errs, field.Invalid(fldPath, host, "must be a DNS name, not an IP address"))
	}
	return append(errs, dnsName(host, fldPath)...)
}

// dnsName checks a host name that may be a wildcard ("*.example.com").
func dnsName(host string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	check := validation.IsDNS1123Subdomain
	if strings.Contains(host, "*") {
		check = validation.IsWildcardDNS1123Subdomain
	}
	for _, msg := range check(host) {
		errs = append(errs, field.Invalid(fldPath, host, msg))
	}
	return errs
}

func validateHTTPIngressRule(http *networkingv1.HTTPIngressRuleValue, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(http.Paths) == 0 {
		errs = append(errs, field.Required(fldPath.Child("paths"), ""))
	}
	for i := range http.Paths {
		errs = append(errs, validateHTTPIngressPath(&http.Paths[i], fldPath.Child("paths").Index(i))...)
	}
	return errs
}

// validateHTTPIngressPath: pathType is required (upstream then checks
// nothing else of the path); Exact and Prefix paths are absolute and
// clean, an ImplementationSpecific one absolute when set.
func validateHTTPIngressPath(path *networkingv1.HTTPIngressPath, fldPath *field.Path) field.ErrorList {
	if path.PathType == nil {
		return field.ErrorList{field.Required(fldPath.Child("pathType"), "pathType must be specified")}
	}
	var errs field.ErrorList
	p := fldPath.Child("path")
	switch *path.PathType {
	case networkingv1.PathTypeExact, networkingv1.PathTypePrefix:
		if !strings.HasPrefix(path.Path, "/") {
			errs = append(errs, field.Invalid(p, path.Path, "must be an absolute path"))
		}
		for _, seq := range invalidPathSequences {
			if strings.Contains(path.Path, seq) {
				errs = append(errs, field.Invalid(p, path.Path, fmt.Sprintf("must not contain '%s'", seq)))
			}
		}
		for _, suffix := range invalidPathSuffixes {
			if strings.HasSuffix(path.Path, suffix) {
				errs = append(errs, field.Invalid(p, path.Path, fmt.Sprintf("cannot end with '%s'", suffix)))
			}
		}
	case networkingv1.PathTypeImplementationSpecific:
		if path.Path != "" && !strings.HasPrefix(path.Path, "/") {
			errs = append(errs, field.Invalid(p, path.Path, "must be an absolute path"))
		}
	default:
		errs = append(errs, field.NotSupported(fldPath.Child("pathType"), *path.PathType, ingressPathTypes))
	}
	return append(errs, validateIngressBackend(&path.Backend, fldPath.Child("backend"))...)
}

// validateIngressBackend: exactly one of a Service (a name and a port,
// by name or number) or a resource.
func validateIngressBackend(b *networkingv1.IngressBackend, fldPath *field.Path) field.ErrorList {
	switch {
	case b.Resource != nil && b.Service != nil:
		return field.ErrorList{field.Invalid(fldPath, "", "cannot set both resource and service backends")}
	case b.Resource != nil:
		return typedLocalObjectReference(b.Resource, fldPath.Child("resource"))
	case b.Service == nil:
		return field.ErrorList{field.Invalid(fldPath, "", "resource or service backend is required")}
	}
	var errs field.ErrorList
	svc, p := b.Service, fldPath.Child("service")
	if svc.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	} else {
		for _, msg := range serviceName(svc.Name, false) {
			errs = append(errs, field.Invalid(p.Child("name"), svc.Name, msg))
		}
	}
	switch {
	case svc.Port.Name != "" && svc.Port.Number != 0:
		errs = append(errs, field.Invalid(fldPath, "", "cannot set both port name & port number"))
	case svc.Port.Name != "":
		for _, msg := range validation.IsValidPortName(svc.Port.Name) {
			errs = append(errs, field.Invalid(p.Child("port", "name"), svc.Port.Name, msg))
		}
	case svc.Port.Number != 0:
		for _, msg := range validation.IsValidPortNum(int(svc.Port.Number)) {
			errs = append(errs, field.Invalid(p.Child("port", "number"), svc.Port.Number, msg))
		}
	default:
		errs = append(errs, field.Required(fldPath, "port name or number is required"))
	}
	return errs
}

// typedLocalObjectReference checks a resource backend: kind and name
// required and usable in a URL path, apiGroup a DNS subdomain when set.
func typedLocalObjectReference(ref *corev1.TypedLocalObjectReference, fldPath *field.Path) field.ErrorList {
	errs := apiGroupName(ref.APIGroup, fldPath.Child("apiGroup"))
	errs = append(errs, pathSegment(ref.Kind, fldPath.Child("kind"))...)
	return append(errs, pathSegment(ref.Name, fldPath.Child("name"))...)
}

func apiGroupName(group *string, fldPath *field.Path) field.ErrorList {
	if group == nil {
		return nil
	}
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(*group) {
		errs = append(errs, field.Invalid(fldPath, *group, msg))
	}
	return errs
}

// pathSegment: a required name that can be a segment of a URL path.
func pathSegment(value string, fldPath *field.Path) field.ErrorList {
	if value == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	var errs field.ErrorList
	for _, msg := range content.IsPathSegmentName(value) {
		errs = append(errs, field.Invalid(fldPath, value, msg))
	}
	return errs
}

// validateIngressStatus checks what an ingress controller reports: IPs,
// and host names that are DNS names and not IPs.
func validateIngressStatus(ing, old *networkingv1.Ingress) field.ErrorList {
	var oldIPs []string
	for _, in := range old.Status.LoadBalancer.Ingress {
		if in.IP != "" {
			oldIPs = append(oldIPs, in.IP)
		}
	}
	var errs field.ErrorList
	for i, in := range ing.Status.LoadBalancer.Ingress {
		p := statusPath.Child("loadBalancer", "ingress").Index(i)
		if in.IP != "" {
			errs = append(errs, validation.IsValidIPForLegacyField(p.Child("ip"), in.IP, true, oldIPs)...)
		}
		if in.Hostname != "" {
			for _, msg := range validation.IsDNS1123Subdomain(in.Hostname) {
				errs = append(errs, field.Invalid(p.Child("hostname"), in.Hostname, msg))
			}
			if netutils.ParseIPSloppy(in.Hostname) != nil {
				errs = append(errs, field.Invalid(p.Child("hostname"), in.Hostname, "must be a DNS name, not an IP address"))
			}
		}
	}
	return errs
}

// validateIngressClass: the controller is a domain-prefixed path of at
// most 250 bytes; parameters name a kind and an object, scoped.
func validateIngressClass(ic *networkingv1.IngressClass) field.ErrorList {
	var errs field.ErrorList
	p := specPath.Child("controller")
	if c := ic.Spec.Controller; c == "" {
		errs = append(errs, field.Required(p, ""))
	} else {
		if len(c) > maxIngressClassControllerLength {
			errs = append(errs, field.TooLong(p, "", maxIngressClassControllerLength))
		}
		errs = append(errs, validation.IsDomainPrefixedPath(p, c)...)
	}
	return append(errs, ingressClassParameters(ic.Spec.Parameters, specPath.Child("parameters"))...)
}

func validateIngressClassUpdate(ic, old *networkingv1.IngressClass) field.ErrorList {
	errs := validateIngressClass(ic)
	return append(errs, apimachineryvalidation.ValidateImmutableField(ic.Spec.Controller, old.Spec.Controller, specPath.Child("controller"))...)
}

// ingressClassParameters: a scope (defaulted to Cluster), and a namespace
// exactly when the scope is Namespace.
func ingressClassParameters(params *networkingv1.IngressClassParametersReference, fldPath *field.Path) field.ErrorList {
	if params == nil {
		return nil
	}
	errs := apiGroupName(params.APIGroup, fldPath.Child("apiGroup"))
	errs = append(errs, pathSegment(params.Kind, fldPath.Child("kind"))...)
	errs = append(errs, pathSegment(params.Name, fldPath.Child("name"))...)
	if params.Scope == nil {
		return append(errs, field.Required(fldPath.Child("scope"), ""))
	}
	ns := fldPath.Child("namespace")
	switch *params.Scope {
	case networkingv1.IngressClassParametersReferenceScopeNamespace:
		if params.Namespace == nil {
			errs = append(errs, field.Required(ns, "`parameters.scope` is set to 'Namespace'"))
		} else {
			for _, msg := range apimachineryvalidation.ValidateNamespaceName(*params.Namespace, false) {
				errs = append(errs, field.Invalid(ns, *params.Namespace, msg))
			}
		}
	case networkingv1.IngressClassParametersReferenceScopeCluster:
		if params.Namespace != nil {
			errs = append(errs, field.Forbidden(ns, "`parameters.scope` is set to 'Cluster'"))
		}
	default:
		errs = append(errs, field.NotSupported(fldPath.Child("scope"), *params.Scope, parameterScopes))
	}
	return errs
}
