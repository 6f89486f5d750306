// Package envvars computes the environment variables that tell a
// container where the Services of its namespace are, in the style of
// Docker links, as Kubernetes' kubelet does (pkg/kubelet/envvars). For a
// Service "web-db" with cluster IP 10.96.0.20 and port 5432/TCP named
// "pg":
//
//	WEB_DB_SERVICE_HOST=10.96.0.20
//	WEB_DB_SERVICE_PORT=5432
//	WEB_DB_SERVICE_PORT_PG=5432
//	WEB_DB_PORT=tcp://10.96.0.20:5432
//	WEB_DB_PORT_5432_TCP=tcp://10.96.0.20:5432
//	WEB_DB_PORT_5432_TCP_PROTO=tcp
//	WEB_DB_PORT_5432_TCP_PORT=5432
//	WEB_DB_PORT_5432_TCP_ADDR=10.96.0.20
//
// It is pure: the kubelet feeds it the Services its informer holds.
package envvars

import (
	"net"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// masterServices are the Services of the default namespace whose
// variables every pod gets, whatever its namespace and
// enableServiceLinks: the apiserver's own.
var masterServices = map[string]bool{"kubernetes": true}

// ForPod returns the service variables of a pod in namespace ns: those
// of every Service of ns that has a cluster IP when enableServiceLinks
// is true, and always those of the `kubernetes` Service of default. A
// Service of ns wins over default's of the same name. Headless
// (clusterIP None) and ExternalName Services get none. Services are
// taken in name order.
func ForPod(services []*corev1.Service, ns string, enableServiceLinks bool) []corev1.EnvVar {
	chosen := map[string]*corev1.Service{}
	for _, s := range services {
		if !hasClusterIP(s) {
			continue
		}
		switch {
		case s.Namespace == ns && enableServiceLinks:
			chosen[s.Name] = s
		case s.Namespace == metav1.NamespaceDefault && masterServices[s.Name]:
			if _, taken := chosen[s.Name]; !taken {
				chosen[s.Name] = s
			}
		}
	}
	list := make([]*corev1.Service, 0, len(chosen))
	for _, s := range chosen {
		list = append(list, s)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	return FromServices(list)
}

// FromServices returns the variables of each Service with a cluster IP,
// in order.
func FromServices(services []*corev1.Service) []corev1.EnvVar {
	var out []corev1.EnvVar
	for _, s := range services {
		if !hasClusterIP(s) || len(s.Spec.Ports) == 0 {
			continue
		}
		prefix := varName(s.Name)
		ip := s.Spec.ClusterIP
		out = append(out,
			corev1.EnvVar{Name: prefix + "_SERVICE_HOST", Value: ip},
			corev1.EnvVar{Name: prefix + "_SERVICE_PORT", Value: strconv.Itoa(int(s.Spec.Ports[0].Port))})
		for _, p := range s.Spec.Ports {
			if p.Name != "" {
				out = append(out, corev1.EnvVar{Name: prefix + "_SERVICE_PORT_" + varName(p.Name), Value: strconv.Itoa(int(p.Port))})
			}
		}
		for i, p := range s.Spec.Ports {
			proto := string(p.Protocol)
			if proto == "" {
				proto = string(corev1.ProtocolTCP)
			}
			port := strconv.Itoa(int(p.Port))
			url := strings.ToLower(proto) + "://" + net.JoinHostPort(ip, port)
			if i == 0 {
				// Docker names the first port's URL without the port.
				out = append(out, corev1.EnvVar{Name: prefix + "_PORT", Value: url})
			}
			pp := prefix + "_PORT_" + port + "_" + strings.ToUpper(proto)
			out = append(out,
				corev1.EnvVar{Name: pp, Value: url},
				corev1.EnvVar{Name: pp + "_PROTO", Value: strings.ToLower(proto)},
				corev1.EnvVar{Name: pp + "_PORT", Value: port},
				corev1.EnvVar{Name: pp + "_ADDR", Value: ip})
		}
	}
	return out
}

// hasClusterIP reports whether the Service has a virtual IP (not
// headless, not ExternalName, allocated).
func hasClusterIP(s *corev1.Service) bool {
	return s.Spec.ClusterIP != "" && s.Spec.ClusterIP != corev1.ClusterIPNone
}

// varName turns a Service or port name into a variable name as the
// kubelet does: upper case, '-' to '_'. Either may start with a digit
// (Service names since RelaxedServiceNameValidation); the variable is
// then made all the same, as environment variable names may too.
func varName(s string) string {
	return strings.ToUpper(strings.ReplaceAll(s, "-", "_"))
}
