package validation

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Endpoints and EndpointSlice rules follow upstream's ValidateEndpoints and
// pkg/apis/discovery/validation.

// Upstream's limits on an EndpointSlice.
const (
	MaxSliceEndpoints      = 1000
	maxSliceAddresses      = 100
	maxSlicePorts          = 20000
	maxSliceTopologyLabels = 16
	maxSliceZoneHints      = 8
)

var addressTypes = []discoveryv1.AddressType{discoveryv1.AddressTypeFQDN, discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6}

func validateEndpointSubsets(subsets []corev1.EndpointSubset) field.ErrorList {
	var errs field.ErrorList
	fldPath := field.NewPath("subsets")
	for i := range subsets {
		ss := &subsets[i]
		p := fldPath.Index(i)
		if len(ss.Addresses) == 0 && len(ss.NotReadyAddresses) == 0 {
			errs = append(errs, field.Required(p, "must specify `addresses` or `notReadyAddresses`"))
		}
		for j := range ss.Addresses {
			errs = append(errs, validateEndpointAddress(&ss.Addresses[j], p.Child("addresses").Index(j))...)
		}
		for j := range ss.NotReadyAddresses {
			errs = append(errs, validateEndpointAddress(&ss.NotReadyAddresses[j], p.Child("notReadyAddresses").Index(j))...)
		}
		for j := range ss.Ports {
			errs = append(errs, validateEndpointPort(&ss.Ports[j], len(ss.Ports) > 1, p.Child("ports").Index(j))...)
		}
	}
	return errs
}

func validateEndpointAddress(a *corev1.EndpointAddress, fldPath *field.Path) field.ErrorList {
	errs := validation.IsValidIPForLegacyField(fldPath.Child("ip"), a.IP, true, nil)
	if a.Hostname != "" {
		errs = append(errs, dnsLabel(a.Hostname, fldPath.Child("hostname"))...)
	}
	if a.NodeName != nil {
		errs = append(errs, nameErrs(apimachineryvalidation.NameIsDNSSubdomain, *a.NodeName, fldPath.Child("nodeName"))...)
	}
	if len(errs) == 0 {
		errs = append(errs, nonSpecialIP(a.IP, fldPath.Child("ip"))...)
	}
	return errs
}

func validateEndpointPort(p *corev1.EndpointPort, requireName bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if requireName && p.Name == "" {
		errs = append(errs, field.Required(fldPath.Child("name"), ""))
	} else if p.Name != "" {
		errs = append(errs, dnsLabel(p.Name, fldPath.Child("name"))...)
	}
	for _, msg := range validation.IsValidPortNum(int(p.Port)) {
		errs = append(errs, field.Invalid(fldPath.Child("port"), p.Port, msg))
	}
	errs = append(errs, enumValue(fldPath.Child("protocol"), p.Protocol, supportedPortProtocols)...)
	if p.AppProtocol != nil {
		errs = append(errs, qualifiedName(*p.AppProtocol, fldPath.Child("appProtocol"))...)
	}
	return errs
}

func validateEndpointSlice(s *discoveryv1.EndpointSlice) field.ErrorList {
	var errs field.ErrorList
	if s.AddressType == "" {
		errs = append(errs, field.Required(field.NewPath("addressType"), ""))
	} else if s.AddressType != discoveryv1.AddressTypeIPv4 && s.AddressType != discoveryv1.AddressTypeIPv6 && s.AddressType != discoveryv1.AddressTypeFQDN {
		errs = append(errs, field.NotSupported(field.NewPath("addressType"), s.AddressType, addressTypes))
	}
	errs = append(errs, validateSliceEndpoints(s.Endpoints, s.AddressType)...)
	return append(errs, validateSlicePorts(s.Ports)...)
}

func validateSliceEndpoints(endpoints []discoveryv1.Endpoint, addrType discoveryv1.AddressType) field.ErrorList {
	fldPath := field.NewPath("endpoints")
	if len(endpoints) > MaxSliceEndpoints {
		return field.ErrorList{field.TooMany(fldPath, len(endpoints), MaxSliceEndpoints)}
	}
	var errs field.ErrorList
	for i, ep := range endpoints {
		p := fldPath.Index(i)
		ap := p.Child("addresses")
		if len(ep.Addresses) == 0 {
			errs = append(errs, field.Required(ap, "must contain at least 1 address"))
		} else if len(ep.Addresses) > maxSliceAddresses {
			errs = append(errs, field.TooMany(ap, len(ep.Addresses), maxSliceAddresses))
		}
		for j, addr := range ep.Addresses {
			switch addrType {
			case discoveryv1.AddressTypeIPv4:
				errs = append(errs, ipOfFamily(ap.Index(j), addr, false)...)
				errs = append(errs, nonSpecialIP(addr, ap.Index(j))...)
			case discoveryv1.AddressTypeIPv6:
				errs = append(errs, ipOfFamily(ap.Index(j), addr, true)...)
				errs = append(errs, nonSpecialIP(addr, ap.Index(j))...)
			case discoveryv1.AddressTypeFQDN:
				errs = append(errs, validation.IsFullyQualifiedDomainName(ap.Index(j), addr)...)
			}
		}
		if ep.NodeName != nil {
			errs = append(errs, nameErrs(apimachineryvalidation.NameIsDNSSubdomain, *ep.NodeName, p.Child("nodeName"))...)
		}
		tp := p.Child("deprecatedTopology")
		if len(ep.DeprecatedTopology) > maxSliceTopologyLabels {
			errs = append(errs, field.TooMany(tp, len(ep.DeprecatedTopology), maxSliceTopologyLabels))
		}
		errs = append(errs, metav1validation.ValidateLabels(ep.DeprecatedTopology, tp)...)
		if ep.Hostname != nil {
			errs = append(errs, dnsLabel(*ep.Hostname, p.Child("hostname"))...)
		}
		if ep.Hints != nil {
			errs = append(errs, validateSliceHints(ep.Hints, p.Child("hints"))...)
		}
	}
	return errs
}

func validateSliceHints(h *discoveryv1.EndpointHints, fldPath *field.Path) field.ErrorList {
	zp := fldPath.Child("forZones")
	if len(h.ForZones) > maxSliceZoneHints {
		return field.ErrorList{field.TooMany(zp, len(h.ForZones), maxSliceZoneHints)}
	}
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, z := range h.ForZones {
		p := zp.Index(i).Child("name")
		if seen[z.Name] {
			errs = append(errs, field.Duplicate(p, z.Name))
		}
		seen[z.Name] = true
		errs = append(errs, labelValue(z.Name, p)...)
	}
	return errs
}

func validateSlicePorts(ports []discoveryv1.EndpointPort) field.ErrorList {
	fldPath := field.NewPath("ports")
	if len(ports) > maxSlicePorts {
		return field.ErrorList{field.TooMany(fldPath, len(ports), maxSlicePorts)}
	}
	var errs field.ErrorList
	names := map[string]bool{}
	for i, port := range ports {
		p := fldPath.Index(i)
		name := ""
		if port.Name != nil {
			name = *port.Name
		}
		if name != "" {
			errs = append(errs, dnsLabel(name, p.Child("name"))...)
		}
		if names[name] {
			errs = append(errs, field.Duplicate(p.Child("name"), name))
		}
		names[name] = true
		if port.Protocol == nil {
			errs = append(errs, field.Required(p.Child("protocol"), ""))
		} else if *port.Protocol != corev1.ProtocolTCP && *port.Protocol != corev1.ProtocolUDP && *port.Protocol != corev1.ProtocolSCTP {
			errs = append(errs, field.NotSupported(p.Child("protocol"), *port.Protocol, supportedPortProtocols))
		}
		if port.Port != nil {
			for _, msg := range validation.IsValidPortNum(int(*port.Port)) {
				errs = append(errs, field.Invalid(p.Child("port"), *port.Port, msg))
			}
		}
		if port.AppProtocol != nil {
			errs = append(errs, qualifiedName(*port.AppProtocol, p.Child("appProtocol"))...)
		}
	}
	return errs
}

// ipOfFamily checks that value is an IPv4 (or, with v6, IPv6) address.
func ipOfFamily(fldPath *field.Path, value string, v6 bool) field.ErrorList {
	if errs := validation.IsValidIPForLegacyField(fldPath, value, true, nil); len(errs) > 0 {
		return errs
	}
	if isIPv6(value) != v6 {
		family := "IPv4"
		if v6 {
			family = "IPv6"
		}
		return field.ErrorList{field.Invalid(fldPath, value, fmt.Sprintf("must be a valid %s address", family))}
	}
	return nil
}
