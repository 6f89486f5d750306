package e2e

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// TestPodClient runs what a pod needs to be a client of other pods,
// Services and the apiserver: its resolv.conf by dnsPolicy, its
// /etc/hosts, busybox's wget and nslookup (by IP and by name, through a
// DNS server the test runs), printenv, the service environment
// variables, and its service account's token.
func TestPodClient(t *testing.T) {
	e := startCluster(t)
	a, b := e.nodes[0], e.nodes[1]

	e.create(t, makePod("web", a).Sh("mkdir -p /www && echo hello from web > /www/index.html && exec httpd -f -p 8080 -h /www").Obj())
	web := e.waitPod(t, "web", 60*time.Second, "Running", running)

	// finished runs a pod to Succeeded and returns its logs.
	finished := func(t *testing.T, p *corev1.Pod) string {
		t.Helper()
		p.Spec.RestartPolicy = corev1.RestartPolicyNever
		e.create(t, p)
		e.waitPod(t, p.Name, 60*time.Second, "Succeeded", func(p *corev1.Pod) bool {
			if p.Status.Phase == corev1.PodFailed {
				t.Fatalf("pod %s failed: %s", p.Name, e.logs(t, p.Name))
			}
			return p.Status.Phase == corev1.PodSucceeded
		})
		return e.logs(t, p.Name)
	}

	t.Run("resolv.conf follows dnsPolicy and dnsConfig", func(t *testing.T) {
		hostConf, err := os.ReadFile("/etc/resolv.conf")
		if err != nil {
			t.Fatal(err)
		}
		host := hostResolvConf(string(hostConf))
		clusterFirst := "search " + strings.Join(append([]string{"default.svc.cluster.local", "svc.cluster.local", "cluster.local"}, host.searches...), " ") +
			"\nnameserver 10.96.0.10\noptions ndots:5\n"
		tests := []struct {
			name   string
			policy corev1.DNSPolicy
			hostNW bool
			config *corev1.PodDNSConfig
			want   string
		}{
			{name: "dns-clusterfirst", policy: corev1.DNSClusterFirst, want: clusterFirst},
			{name: "dns-default", policy: corev1.DNSDefault, want: host.String()},
			{name: "dns-none", policy: corev1.DNSNone, config: &corev1.PodDNSConfig{Nameservers: []string{"192.0.2.53"},
				Searches: []string{"example.test"}, Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("2")}, {Name: "edns0"}}},
				want: "search example.test\nnameserver 192.0.2.53\noptions ndots:2 edns0\n"},
			{name: "dns-merged", policy: corev1.DNSClusterFirst, config: &corev1.PodDNSConfig{Nameservers: []string{"192.0.2.53"},
				Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("1")}}},
				want: strings.Replace(strings.Replace(clusterFirst, "ndots:5", "ndots:1", 1), "nameserver 10.96.0.10\n", "nameserver 10.96.0.10\nnameserver 192.0.2.53\n", 1)},
			{name: "dns-hostnet-clusterfirstwithhostnet", policy: corev1.DNSClusterFirstWithHostNet, hostNW: true, want: clusterFirst},
			{name: "dns-hostnet-clusterfirst", policy: corev1.DNSClusterFirst, hostNW: true, want: host.String()},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				got := finished(t, makePod(tt.name, b).Sh("cat /etc/resolv.conf").With(func(p *corev1.Pod) {
					p.Spec.DNSPolicy, p.Spec.HostNetwork, p.Spec.DNSConfig = tt.policy, tt.hostNW, tt.config
				}).Obj())
				if got != tt.want {
					t.Errorf("/etc/resolv.conf:\n%s\nwant:\n%s", got, tt.want)
				}
			})
		}
	})

	t.Run("/etc/hosts names the pod by its FQDN with a subdomain, and hostname prints its hostname", func(t *testing.T) {
		t.Parallel()
		got := finished(t, makePod("hosts-fqdn", b).Sh("cat /etc/hosts; echo; hostname").With(func(p *corev1.Pod) {
			p.Spec.Hostname, p.Spec.Subdomain = "db-0", "db"
			p.Spec.HostAliases = []corev1.HostAlias{{IP: "10.9.8.7", Hostnames: []string{"foo.local", "bar.local"}}}
		}).Obj())
		p := e.get(t, "hosts-fqdn")
		for _, want := range []string{"# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n",
			"\n" + p.Status.PodIP + "\tdb-0.db.default.svc.cluster.local\tdb-0\n",
			"# Entries added by HostAliases.\n10.9.8.7\tfoo.local\tbar.local\n", "\n\ndb-0\n"} {
			if !strings.Contains(got, want) {
				t.Errorf("output lacks %q:\n%s", want, got)
			}
		}
	})

	t.Run("wget on another node fetches from the httpd pod by IP", func(t *testing.T) {
		t.Parallel()
		got := finished(t, makePod("wget-ip", b).Sh(fmt.Sprintf("wget -qO- http://%s:8080/", web.Status.PodIP)).Obj())
		if got != "hello from web\n" {
			t.Errorf("wget printed %q", got)
		}
	})

	t.Run("nslookup and wget resolve names through the pod's resolv.conf", func(t *testing.T) {
		t.Parallel()
		// A DNS server on node a's bridge (the pods' gateway) that knows
		// the web pod by its Service-style name.
		gw := gatewayOf(t, e, a)
		dns := serveDNS(t, net.JoinHostPort(gw, "53"), map[string]string{"web.default.svc.cluster.local.": web.Status.PodIP})
		got := finished(t, makePod("lookup", a).Sh("nslookup -type=a web.default.svc.cluster.local && wget -qO- http://web:8080/").With(func(p *corev1.Pod) {
			p.Spec.DNSPolicy = corev1.DNSNone
			p.Spec.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{gw}, Searches: []string{"default.svc.cluster.local"},
				Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("5")}}}
		}).Obj())
		for _, want := range []string{"Name:\tweb.default.svc.cluster.local\nAddress: " + web.Status.PodIP + "\n", "hello from web\n"} {
			if !strings.Contains(got, want) {
				t.Errorf("output lacks %q:\n%s", want, got)
			}
		}
		// wget's short name went out with the search domain, as ndots:5 says.
		if q := dns.queries(); !strings.Contains(strings.Join(q, " "), "A web.default.svc.cluster.local.") {
			t.Errorf("the DNS server saw %v", q)
		}
	})

	t.Run("printenv prints the pod's variables; service variables follow the apiserver", func(t *testing.T) {
		t.Parallel()
		servesServices := false
		res, err := e.cs.Discovery().ServerResourcesForGroupVersion("v1")
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res.APIResources {
			servesServices = servesServices || r.Name == "services"
		}
		clusterIP := ""
		if servesServices {
			svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "envsvc", Namespace: "default"},
				Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "envsvc"},
					Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}}}
			out, err := e.cs.CoreV1().Services("default").Create(context.Background(), svc, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = e.cs.CoreV1().Services("default").Delete(context.Background(), "envsvc", metav1.DeleteOptions{})
			})
			clusterIP = out.Spec.ClusterIP
		}
		got := finished(t, makePod("printenv", b).Sh("printenv GREETING POD_IP; env | grep _SERVICE_ | sort; true").With(func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "GREETING", Value: "hi"},
				{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}}
		}).Obj())
		p := e.get(t, "printenv")
		if !strings.HasPrefix(got, "hi\n"+p.Status.PodIP+"\n") {
			t.Errorf("printenv GREETING POD_IP printed:\n%s", got)
		}
		if servesServices {
			for _, want := range []string{"ENVSVC_SERVICE_HOST=" + clusterIP + "\n", "ENVSVC_SERVICE_PORT=80\n", "ENVSVC_SERVICE_PORT_HTTP=80\n"} {
				if !strings.Contains(got, want) {
					t.Errorf("the services are served, but the pod's environment lacks %q:\n%s", want, got)
				}
			}
		} else if strings.Contains(got, "_SERVICE_HOST=") {
			t.Errorf("the apiserver serves no services, yet the pod has service variables:\n%s", got)
		}
	})

	t.Run("a pod's service-account token lists the pods of its namespace, not others, and dies with the pod", func(t *testing.T) {
		t.Parallel()
		testPodIdentity(t, e)
	})
}

// hostConf is the node's resolv.conf as the kubelet reads it.
type hostConf struct{ servers, searches, options []string }

func hostResolvConf(data string) hostConf {
	var h hostConf
	for _, line := range strings.Split(data, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		switch f[0] {
		case "nameserver":
			if len(f) > 1 {
				h.servers = append(h.servers, f[1])
			}
		case "search":
			h.searches = nil
			for _, s := range f[1:] {
				h.searches = append(h.searches, strings.TrimSuffix(s, "."))
			}
		case "options":
			h.options = f[1:]
		}
	}
	return h
}

func (h hostConf) String() string {
	var b strings.Builder
	if len(h.searches) > 0 {
		b.WriteString("search " + strings.Join(h.searches, " ") + "\n")
	}
	for _, s := range h.servers[:min(3, len(h.servers))] {
		b.WriteString("nameserver " + s + "\n")
	}
	if len(h.options) > 0 {
		b.WriteString("options " + strings.Join(h.options, " ") + "\n")
	}
	return b.String()
}

// gatewayOf is the first address of the node's pod range: its bridge's
// address, the pods' default gateway.
func gatewayOf(t *testing.T, e *env, node string) string {
	t.Helper()
	n, err := e.cs.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	prefix, err := netip.ParsePrefix(n.Spec.PodCIDR)
	if err != nil {
		t.Fatalf("node %s podCIDR %q: %v", node, n.Spec.PodCIDR, err)
	}
	return prefix.Masked().Addr().Next().String()
}

// dnsServer answers A queries for the names it knows, NODATA for other
// types of those names, NXDOMAIN for the rest; it remembers the queries.
type dnsServer struct {
	mu   sync.Mutex
	seen []string
}

func (d *dnsServer) queries() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.seen...)
}

func serveDNS(t *testing.T, addr string, records map[string]string) *dnsServer {
	t.Helper()
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		t.Fatalf("the test's DNS server cannot listen on %s: %v", addr, err)
	}
	d := &dnsServer{}
	done := make(chan struct{})
	t.Cleanup(func() { pc.Close(); <-done })
	go func() {
		defer close(done)
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			var p dnsmessage.Parser
			h, err := p.Start(buf[:n])
			if err != nil {
				continue
			}
			q, err := p.Question()
			if err != nil {
				continue
			}
			name := strings.ToLower(q.Name.String())
			d.mu.Lock()
			d.seen = append(d.seen, strings.TrimPrefix(q.Type.String(), "Type")+" "+name)
			d.mu.Unlock()
			ip, known := records[name]
			rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired}
			if !known {
				rh.RCode = dnsmessage.RCodeNameError
			}
			bld := dnsmessage.NewBuilder(nil, rh)
			_ = bld.StartQuestions()
			_ = bld.Question(q)
			_ = bld.StartAnswers()
			if known && q.Type == dnsmessage.TypeA {
				a, _ := netip.ParseAddr(ip)
				_ = bld.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 5}, dnsmessage.AResource{A: a.As4()})
			}
			msg, err := bld.Finish()
			if err == nil {
				_, _ = pc.WriteTo(msg, from)
			}
		}
	}()
	return d
}
