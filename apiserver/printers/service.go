package printers

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	discoveryv1beta1 "k8s.io/api/discovery/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

var serviceSpecDoc = corev1.ServiceSpec{}.SwaggerDoc()

var serviceColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Type", Type: "string", Description: serviceSpecDoc["type"]},
	{Name: "Cluster-IP", Type: "string", Description: serviceSpecDoc["clusterIP"]},
	{Name: "External-IP", Type: "string", Description: serviceSpecDoc["externalIPs"]},
	{Name: "Port(s)", Type: "string", Description: serviceSpecDoc["ports"]},
	ageColumn,
	selectorColumn(serviceSpecDoc["selector"]),
}

var endpointsColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Endpoints", Type: "string", Description: corev1.Endpoints{}.SwaggerDoc()["subsets"]},
	ageColumn,
}

// Upstream describes these columns from the discovery.k8s.io/v1beta1 docs.
var endpointSliceDoc = discoveryv1beta1.EndpointSlice{}.SwaggerDoc()

var endpointSliceColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "AddressType", Type: "string", Description: endpointSliceDoc["addressType"]},
	{Name: "Ports", Type: "string", Description: endpointSliceDoc["ports"]},
	{Name: "Endpoints", Type: "string", Description: endpointSliceDoc["endpoints"]},
	ageColumn,
}

// serviceRow prints NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE SELECTOR.
func serviceRow(svc *corev1.Service, now time.Time) metav1.TableRow {
	clusterIP := "<none>"
	if len(svc.Spec.ClusterIPs) > 0 {
		clusterIP = svc.Spec.ClusterIPs[0]
	}
	ports := servicePorts(svc.Spec.Ports)
	if ports == "" {
		ports = "<none>"
	}
	return row(svc.Name, string(svc.Spec.Type), clusterIP, serviceExternalIP(svc), ports,
		since(svc.CreationTimestamp.Time, now), labels.FormatLabels(svc.Spec.Selector))
}

// serviceExternalIP is the EXTERNAL-IP cell: external IPs, the load
// balancer's ingress (<pending> until it has one), or the external name.
func serviceExternalIP(svc *corev1.Service) string {
	switch svc.Spec.Type {
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort:
		if len(svc.Spec.ExternalIPs) > 0 {
			return strings.Join(svc.Spec.ExternalIPs, ",")
		}
		return "<none>"
	case corev1.ServiceTypeLoadBalancer:
		var ingress []string
		for _, in := range svc.Status.LoadBalancer.Ingress {
			switch {
			case in.IP != "":
				ingress = append(ingress, in.IP)
			case in.Hostname != "":
				ingress = append(ingress, in.Hostname)
			}
		}
		slices.Sort(ingress)
		ingress = slices.Compact(ingress)
		all := append(ingress, svc.Spec.ExternalIPs...)
		if len(all) == 0 {
			return "<pending>"
		}
		return strings.Join(all, ",")
	case corev1.ServiceTypeExternalName:
		return svc.Spec.ExternalName
	}
	return "<unknown>"
}

// servicePorts prints "80/TCP" or, with a node port, "80:30080/TCP".
func servicePorts(ports []corev1.ServicePort) string {
	pieces := make([]string, len(ports))
	for i, p := range ports {
		if p.NodePort > 0 {
			pieces[i] = fmt.Sprintf("%d:%d/%s", p.Port, p.NodePort, p.Protocol)
		} else {
			pieces[i] = fmt.Sprintf("%d/%s", p.Port, p.Protocol)
		}
	}
	return strings.Join(pieces, ",")
}

// listMax is how many items a list cell shows before "+ N more...".
const listMax = 3

// endpointsRow prints NAME ENDPOINTS AGE, ENDPOINTS as ip:port pairs.
func endpointsRow(ep *corev1.Endpoints, now time.Time) metav1.TableRow {
	return row(ep.Name, endpointsCell(ep), since(ep.CreationTimestamp.Time, now))
}

// endpointsCell lists the ready addresses with each port of their subset
// ("10.244.0.5:8080,10.244.0.6:8080 + 2 more..."), or "<none>" without
// subsets. Only ready addresses count, as upstream prints them.
func endpointsCell(ep *corev1.Endpoints) string {
	if len(ep.Subsets) == 0 {
		return "<none>"
	}
	var list []string
	count := 0
	add := func(s string) {
		count++
		if len(list) < listMax {
			list = append(list, s)
		}
	}
	for _, ss := range ep.Subsets {
		if len(ss.Ports) == 0 { // headless services may have no ports
			for _, a := range ss.Addresses {
				add(a.IP)
			}
			continue
		}
		for _, p := range ss.Ports {
			for _, a := range ss.Addresses {
				add(net.JoinHostPort(a.IP, strconv.Itoa(int(p.Port))))
			}
		}
	}
	out := strings.Join(list, ",")
	if count > listMax {
		return fmt.Sprintf("%s + %d more...", out, count-listMax)
	}
	return out
}

// endpointSliceRow prints NAME ADDRESSTYPE PORTS ENDPOINTS AGE.
func endpointSliceRow(s *discoveryv1.EndpointSlice, now time.Time) metav1.TableRow {
	var ports, addrs []string
	for _, p := range s.Ports {
		switch {
		case p.Port != nil:
			ports = append(ports, strconv.Itoa(int(*p.Port)))
		case p.Name != nil:
			ports = append(ports, *p.Name)
		default:
			ports = append(ports, "*")
		}
	}
	for _, e := range s.Endpoints {
		addrs = append(addrs, e.Addresses...)
	}
	return row(s.Name, string(s.AddressType), listCell(ports), listCell(addrs), since(s.CreationTimestamp.Time, now))
}

// listCell shows the first listMax items, "+ N more..." after them, and
// "<unset>" for none.
func listCell(items []string) string {
	if len(items) == 0 {
		return "<unset>"
	}
	if len(items) > listMax {
		return fmt.Sprintf("%s + %d more...", strings.Join(items[:listMax], ","), len(items)-listMax)
	}
	return strings.Join(items, ",")
}
