package printers

import (
	"fmt"
	"slices"
	"strings"
	"time"

	extensionsv1beta1 "k8s.io/api/extensions/v1beta1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/apiserver/validation"
)

var networkPolicyColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Pod-Selector", Type: "string", Description: extensionsv1beta1.NetworkPolicySpec{}.SwaggerDoc()["podSelector"]},
	ageColumn,
}

var ingressColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Class", Type: "string", Description: "The name of the IngressClass resource that should be used for additional configuration"},
	{Name: "Hosts", Type: "string", Description: "Hosts that incoming requests are matched against before the ingress rule"},
	{Name: "Address", Type: "string", Description: "Address is a list containing ingress points for the load-balancer"},
	{Name: "Ports", Type: "string", Description: "Ports of TLS configurations that open"},
	ageColumn,
}

var ingressClassColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Controller", Type: "string", Description: "Controller that is responsible for handling this class"},
	{Name: "Parameters", Type: "string", Description: "A reference to a resource with additional parameters"},
	ageColumn,
}

// networkPolicyRow prints NAME POD-SELECTOR AGE; an empty selector (all
// pods of the namespace) prints as <none>, as upstream.
func networkPolicyRow(np *networkingv1.NetworkPolicy, now time.Time) metav1.TableRow {
	return row(np.Name, metav1.FormatLabelSelector(&np.Spec.PodSelector), since(np.CreationTimestamp.Time, now))
}

// ingressRow prints NAME CLASS HOSTS ADDRESS PORTS AGE: the class or
// <none>, at most three hosts ("*" for none), the load balancer's IPs or
// host names (sorted, once each; not shortened, as the apiserver prints
// wide), and 80, or "80, 443" with TLS.
func ingressRow(ing *networkingv1.Ingress, now time.Time) metav1.TableRow {
	class := "<none>"
	if ing.Spec.IngressClassName != nil {
		class = *ing.Spec.IngressClassName
	}
	ports := "80"
	if len(ing.Spec.TLS) > 0 {
		ports = "80, 443"
	}
	return row(ing.Name, class, ingressHosts(ing.Spec.Rules), ingressAddress(ing.Status.LoadBalancer), ports,
		since(ing.CreationTimestamp.Time, now))
}

// ingressHosts lists the first three rules' hosts and counts the other
// rules, as upstream's formatHosts: a rule without a host among the first
// three takes no place in the list but is not counted as more either.
func ingressHosts(rules []networkingv1.IngressRule) string {
	const maxHosts = 3
	var hosts []string
	more := false
	for _, r := range rules {
		if len(hosts) == maxHosts {
			more = true
		}
		if !more && r.Host != "" {
			hosts = append(hosts, r.Host)
		}
	}
	if len(hosts) == 0 {
		return "*"
	}
	list := strings.Join(hosts, ",")
	if more {
		return fmt.Sprintf("%s + %d more...", list, len(rules)-maxHosts)
	}
	return list
}

func ingressAddress(lb networkingv1.IngressLoadBalancerStatus) string {
	var addrs []string
	for _, in := range lb.Ingress {
		switch {
		case in.IP != "":
			addrs = append(addrs, in.IP)
		case in.Hostname != "":
			addrs = append(addrs, in.Hostname)
		}
	}
	slices.Sort(addrs)
	return strings.Join(slices.Compact(addrs), ",")
}

// ingressClassRow prints NAME CONTROLLER PARAMETERS AGE, with "(default)"
// after the default class's name (upstream since v1.35) and the parameters
// as KIND[.APIGROUP]/NAME or <none>.
func ingressClassRow(ic *networkingv1.IngressClass, now time.Time) metav1.TableRow {
	name := ic.Name
	if validation.IsDefaultIngressClass(ic) {
		name += " (default)"
	}
	params := "<none>"
	if p := ic.Spec.Parameters; p != nil {
		params = p.Kind
		if p.APIGroup != nil {
			params += "." + *p.APIGroup
		}
		params += "/" + p.Name
	}
	return row(name, ic.Spec.Controller, params, since(ic.CreationTimestamp.Time, now))
}
