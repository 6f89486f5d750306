package envvars

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// svc builds a Service: svc("shop", "web", "10.96.0.20", port("http", 80, "")).
func svc(ns, name, clusterIP string, ports ...corev1.ServicePort) *corev1.Service {
	s := &corev1.Service{}
	s.Namespace, s.Name = ns, name
	s.Spec.ClusterIP = clusterIP
	s.Spec.Ports = ports
	return s
}

func port(name string, n int32, proto corev1.Protocol) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Port: n, Protocol: proto}
}

// lines renders variables as NAME=VALUE lines, for readable diffs.
func lines(env []corev1.EnvVar) string {
	var b strings.Builder
	for _, e := range env {
		b.WriteString(e.Name + "=" + e.Value + "\n")
	}
	return b.String()
}

func TestFromServices(t *testing.T) {
	tests := []struct {
		name     string
		services []*corev1.Service
		want     string
	}{
		{
			name:     "one unnamed TCP port gives the host, the port and the Docker link variables",
			services: []*corev1.Service{svc("shop", "web", "10.96.0.20", port("", 80, corev1.ProtocolTCP))},
			want: `WEB_SERVICE_HOST=10.96.0.20
WEB_SERVICE_PORT=80
WEB_PORT=tcp://10.96.0.20:80
WEB_PORT_80_TCP=tcp://10.96.0.20:80
WEB_PORT_80_TCP_PROTO=tcp
WEB_PORT_80_TCP_PORT=80
WEB_PORT_80_TCP_ADDR=10.96.0.20
`,
		},
		{
			name: "named ports get SERVICE_PORT_NAME; the first port is SERVICE_PORT and PORT; dashes become underscores",
			services: []*corev1.Service{svc("shop", "web-db", "10.96.0.21",
				port("pg", 5432, corev1.ProtocolTCP), port("dns-udp", 53, corev1.ProtocolUDP))},
			want: `WEB_DB_SERVICE_HOST=10.96.0.21
WEB_DB_SERVICE_PORT=5432
WEB_DB_SERVICE_PORT_PG=5432
WEB_DB_SERVICE_PORT_DNS_UDP=53
WEB_DB_PORT=tcp://10.96.0.21:5432
WEB_DB_PORT_5432_TCP=tcp://10.96.0.21:5432
WEB_DB_PORT_5432_TCP_PROTO=tcp
WEB_DB_PORT_5432_TCP_PORT=5432
WEB_DB_PORT_5432_TCP_ADDR=10.96.0.21
WEB_DB_PORT_53_UDP=udp://10.96.0.21:53
WEB_DB_PORT_53_UDP_PROTO=udp
WEB_DB_PORT_53_UDP_PORT=53
WEB_DB_PORT_53_UDP_ADDR=10.96.0.21
`,
		},
		{
			name:     "a port without a protocol is TCP",
			services: []*corev1.Service{svc("shop", "a", "10.96.0.22", port("", 8080, ""))},
			want: `A_SERVICE_HOST=10.96.0.22
A_SERVICE_PORT=8080
A_PORT=tcp://10.96.0.22:8080
A_PORT_8080_TCP=tcp://10.96.0.22:8080
A_PORT_8080_TCP_PROTO=tcp
A_PORT_8080_TCP_PORT=8080
A_PORT_8080_TCP_ADDR=10.96.0.22
`,
		},
		{
			name:     "a port name starting with a digit keeps it, after the underscore",
			services: []*corev1.Service{svc("shop", "web", "10.96.0.23", port("8080-http", 8080, corev1.ProtocolTCP))},
			want: `WEB_SERVICE_HOST=10.96.0.23
WEB_SERVICE_PORT=8080
WEB_SERVICE_PORT_8080_HTTP=8080
WEB_PORT=tcp://10.96.0.23:8080
WEB_PORT_8080_TCP=tcp://10.96.0.23:8080
WEB_PORT_8080_TCP_PROTO=tcp
WEB_PORT_8080_TCP_PORT=8080
WEB_PORT_8080_TCP_ADDR=10.96.0.23
`,
		},
		{
			name:     "an IPv6 cluster IP is bracketed in URLs",
			services: []*corev1.Service{svc("shop", "v6", "fd00::14", port("", 80, corev1.ProtocolTCP))},
			want: `V6_SERVICE_HOST=fd00::14
V6_SERVICE_PORT=80
V6_PORT=tcp://[fd00::14]:80
V6_PORT_80_TCP=tcp://[fd00::14]:80
V6_PORT_80_TCP_PROTO=tcp
V6_PORT_80_TCP_PORT=80
V6_PORT_80_TCP_ADDR=fd00::14
`,
		},
		{
			name: "headless, ExternalName (no cluster IP) and unallocated Services give nothing",
			services: []*corev1.Service{
				svc("shop", "headless", corev1.ClusterIPNone, port("", 80, corev1.ProtocolTCP)),
				svc("shop", "external", "", port("", 80, corev1.ProtocolTCP)),
			},
			want: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := lines(FromServices(tt.services)); got != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func TestForPod(t *testing.T) {
	kubernetes := svc("default", "kubernetes", "10.96.0.1", port("https", 443, corev1.ProtocolTCP))
	web := svc("shop", "web", "10.96.0.20", port("", 80, corev1.ProtocolTCP))
	db := svc("shop", "db", "10.96.0.21", port("", 5432, corev1.ProtocolTCP))
	other := svc("other", "cache", "10.96.0.30", port("", 6379, corev1.ProtocolTCP))
	defaultWeb := svc("default", "front", "10.96.0.40", port("", 80, corev1.ProtocolTCP))
	ownKubernetes := svc("shop", "kubernetes", "10.96.0.99", port("", 8443, corev1.ProtocolTCP))
	all := []*corev1.Service{web, other, kubernetes, db, defaultWeb}

	tests := []struct {
		name        string
		services    []*corev1.Service
		ns          string
		links       bool
		wantHosts   []string // the *_SERVICE_HOST variables, in order
		wantKubeSvc string   // KUBERNETES_SERVICE_HOST
	}{
		{
			name:     "a pod gets its namespace's Services by name, plus kubernetes from default, and no other namespace's",
			services: all, ns: "shop", links: true,
			wantHosts:   []string{"DB_SERVICE_HOST", "KUBERNETES_SERVICE_HOST", "WEB_SERVICE_HOST"},
			wantKubeSvc: "10.96.0.1",
		},
		{
			name:     "enableServiceLinks false leaves only kubernetes",
			services: all, ns: "shop", links: false,
			wantHosts:   []string{"KUBERNETES_SERVICE_HOST"},
			wantKubeSvc: "10.96.0.1",
		},
		{
			name:     "a pod of default gets default's Services",
			services: all, ns: "default", links: true,
			wantHosts:   []string{"FRONT_SERVICE_HOST", "KUBERNETES_SERVICE_HOST"},
			wantKubeSvc: "10.96.0.1",
		},
		{
			name:     "a Service named kubernetes in the pod's namespace wins over default's",
			services: append([]*corev1.Service{ownKubernetes}, all...), ns: "shop", links: true,
			wantHosts:   []string{"DB_SERVICE_HOST", "KUBERNETES_SERVICE_HOST", "WEB_SERVICE_HOST"},
			wantKubeSvc: "10.96.0.99",
		},
		{
			name:     "the pod's own kubernetes Service wins whatever the list order",
			services: append(append([]*corev1.Service{}, all...), ownKubernetes), ns: "shop", links: true,
			wantHosts:   []string{"DB_SERVICE_HOST", "KUBERNETES_SERVICE_HOST", "WEB_SERVICE_HOST"},
			wantKubeSvc: "10.96.0.99",
		},
		{
			name: "no Services, no variables",
			ns:   "shop", links: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := ForPod(tt.services, tt.ns, tt.links)
			var hosts []string
			kube := ""
			for _, e := range env {
				if strings.HasSuffix(e.Name, "_SERVICE_HOST") {
					hosts = append(hosts, e.Name)
				}
				if e.Name == "KUBERNETES_SERVICE_HOST" {
					kube = e.Value
				}
			}
			if !reflect.DeepEqual(hosts, tt.wantHosts) {
				t.Errorf("services: %v, want %v", hosts, tt.wantHosts)
			}
			if kube != tt.wantKubeSvc {
				t.Errorf("KUBERNETES_SERVICE_HOST = %q, want %q", kube, tt.wantKubeSvc)
			}
		})
	}
}
