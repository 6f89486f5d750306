package kubelet

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// dnsPod is a pod of namespace ns with the given policy; with applies
// more.
func dnsPod(ns string, policy corev1.DNSPolicy, with ...func(*corev1.PodSpec)) *corev1.Pod {
	p := makePod("main").Obj()
	p.Namespace = ns
	p.Spec.DNSPolicy = policy
	for _, f := range with {
		f(&p.Spec)
	}
	return p
}

func hostNet(s *corev1.PodSpec) { s.HostNetwork = true }

func dnsConfig(c corev1.PodDNSConfig) func(*corev1.PodSpec) {
	return func(s *corev1.PodSpec) { s.DNSConfig = &c }
}

func TestPodDNSConfig(t *testing.T) {
	host := resolvConf{Servers: []string{"192.168.1.1", "8.8.8.8"}, Searches: []string{"corp.example", "example"}, Options: []string{"edns0", "timeout:2"}}
	cluster := dnsSettings{ClusterDNS: []string{"10.96.0.10"}, ClusterDomain: "cluster.local", Host: host, HasHost: true}
	noClusterDNS := cluster
	noClusterDNS.ClusterDNS = nil
	noHost := dnsSettings{ClusterDNS: []string{"10.96.0.10"}, ClusterDomain: "cluster.local"}

	tests := []struct {
		name     string
		pod      *corev1.Pod
		settings dnsSettings
		want     string   // the resolv.conf
		events   []string // "node|pod REASON: message"
	}{
		{
			name:     "ClusterFirst uses the cluster DNS alone, the namespace's search domains then the host's, and ndots:5",
			pod:      dnsPod("shop", corev1.DNSClusterFirst),
			settings: cluster,
			want:     "search shop.svc.cluster.local svc.cluster.local cluster.local corp.example example\nnameserver 10.96.0.10\noptions ndots:5\n",
		},
		{
			name:     "an empty dnsPolicy is ClusterFirst, the API's default",
			pod:      dnsPod("default", ""),
			settings: cluster,
			want:     "search default.svc.cluster.local svc.cluster.local cluster.local corp.example example\nnameserver 10.96.0.10\noptions ndots:5\n",
		},
		{
			name:     "ClusterFirst for a hostNetwork pod falls back to Default: the host's resolvers",
			pod:      dnsPod("shop", corev1.DNSClusterFirst, hostNet),
			settings: cluster,
			want:     "search corp.example example\nnameserver 192.168.1.1\nnameserver 8.8.8.8\noptions edns0 timeout:2\n",
		},
		{
			name:     "ClusterFirstWithHostNet gives a hostNetwork pod the cluster DNS",
			pod:      dnsPod("shop", corev1.DNSClusterFirstWithHostNet, hostNet),
			settings: cluster,
			want:     "search shop.svc.cluster.local svc.cluster.local cluster.local corp.example example\nnameserver 10.96.0.10\noptions ndots:5\n",
		},
		{
			name:     "ClusterFirstWithHostNet on the pod network is ClusterFirst",
			pod:      dnsPod("shop", corev1.DNSClusterFirstWithHostNet),
			settings: cluster,
			want:     "search shop.svc.cluster.local svc.cluster.local cluster.local corp.example example\nnameserver 10.96.0.10\noptions ndots:5\n",
		},
		{
			name:     "Default copies the host's resolv.conf",
			pod:      dnsPod("shop", corev1.DNSDefault),
			settings: cluster,
			want:     "search corp.example example\nnameserver 192.168.1.1\nnameserver 8.8.8.8\noptions edns0 timeout:2\n",
		},
		{
			name:     "Default without --resolv-conf asks the node's own resolver and searches nothing",
			pod:      dnsPod("shop", corev1.DNSDefault),
			settings: noHost,
			want:     "search .\nnameserver 127.0.0.1\n",
		},
		{
			name:     "ClusterFirst without --resolv-conf has only the cluster's search domains",
			pod:      dnsPod("shop", corev1.DNSClusterFirst),
			settings: noHost,
			want:     "search shop.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.96.0.10\noptions ndots:5\n",
		},
		{
			name:     "ClusterFirst without a cluster DNS falls back to Default, with MissingClusterDNS on the node and the pod",
			pod:      dnsPod("shop", corev1.DNSClusterFirst),
			settings: noClusterDNS,
			want:     "search corp.example example\nnameserver 192.168.1.1\nnameserver 8.8.8.8\noptions edns0 timeout:2\n",
			events: []string{
				`node MissingClusterDNS: kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.`,
				`pod MissingClusterDNS: pod: "p_shop(uid-p)". kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.`,
			},
		},
		{
			name: "None uses the pod's dnsConfig only",
			pod: dnsPod("shop", corev1.DNSNone, dnsConfig(corev1.PodDNSConfig{
				Nameservers: []string{"1.2.3.4"}, Searches: []string{"ns1.svc.cluster-domain.example", "my.dns.search.suffix"},
				Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("2")}, {Name: "edns0"}},
			})),
			settings: cluster,
			want:     "search ns1.svc.cluster-domain.example my.dns.search.suffix\nnameserver 1.2.3.4\noptions ndots:2 edns0\n",
		},
		{
			name: "dnsConfig is merged into ClusterFirst: servers and searches appended without duplicates, options by name",
			pod: dnsPod("shop", corev1.DNSClusterFirst, dnsConfig(corev1.PodDNSConfig{
				Nameservers: []string{"10.96.0.10", "1.1.1.1"}, Searches: []string{"cluster.local", "extra.example"},
				Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("1")}, {Name: "single-request-reopen"}},
			})),
			settings: cluster,
			want: "search shop.svc.cluster.local svc.cluster.local cluster.local corp.example example extra.example\n" +
				"nameserver 10.96.0.10\nnameserver 1.1.1.1\noptions ndots:1 single-request-reopen\n",
		},
		{
			name: "dnsConfig is merged into Default, its options over the host's",
			pod: dnsPod("shop", corev1.DNSDefault, dnsConfig(corev1.PodDNSConfig{
				Options: []corev1.PodDNSConfigOption{{Name: "timeout", Value: ptr.To("5")}},
			})),
			settings: cluster,
			want:     "search corp.example example\nnameserver 192.168.1.1\nnameserver 8.8.8.8\noptions edns0 timeout:5\n",
		},
		{
			name: "more than three nameservers are cut to three, with a DNSConfigForming event",
			pod: dnsPod("shop", corev1.DNSDefault, dnsConfig(corev1.PodDNSConfig{
				Nameservers: []string{"1.1.1.1", "9.9.9.9"},
			})),
			settings: cluster,
			want:     "search corp.example example\nnameserver 192.168.1.1\nnameserver 8.8.8.8\nnameserver 1.1.1.1\noptions edns0 timeout:2\n",
			events:   []string{"pod DNSConfigForming: Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: 192.168.1.1 8.8.8.8 1.1.1.1"},
		},
		{
			name: "more than 32 search domains are cut to 32, with a DNSConfigForming event",
			pod: dnsPod("s", corev1.DNSNone, dnsConfig(corev1.PodDNSConfig{
				Nameservers: []string{"1.1.1.1"}, Searches: numbered("d", 35),
			})),
			settings: cluster,
			want:     "search " + strings.Join(numbered("d", 32), " ") + "\nnameserver 1.1.1.1\n",
			events:   []string{"pod DNSConfigForming: Search Line limits were exceeded, some search paths have been omitted, the applied search line is: " + strings.Join(numbered("d", 32), " ")},
		},
		{
			name: "a search domain longer than 253 characters is dropped",
			pod: dnsPod("s", corev1.DNSNone, dnsConfig(corev1.PodDNSConfig{
				Nameservers: []string{"1.1.1.1"}, Searches: []string{"a.example", strings.Repeat("x", 254), "b.example"},
			})),
			settings: cluster,
			want:     "search a.example b.example\nnameserver 1.1.1.1\n",
			events:   []string{"pod DNSConfigForming: Search Line limits were exceeded, some search paths have been omitted, the applied search line is: a.example b.example"},
		},
		{
			name: "a search line over 2048 characters loses domains from its end",
			pod: dnsPod("s", corev1.DNSNone, dnsConfig(corev1.PodDNSConfig{
				Nameservers: []string{"1.1.1.1"}, Searches: numbered(strings.Repeat("y", 200)+"-", 11), // 11 × 203 + 10 spaces = 2243
			})),
			settings: cluster,
			want:     "search " + strings.Join(numbered(strings.Repeat("y", 200)+"-", 10), " ") + "\nnameserver 1.1.1.1\n",
			events: []string{"pod DNSConfigForming: Search Line limits were exceeded, some search paths have been omitted, the applied search line is: " +
				strings.Join(numbered(strings.Repeat("y", 200)+"-", 10), " ")},
		},
		{
			name:     "a cluster search domain that is also the host's appears once",
			pod:      dnsPod("shop", corev1.DNSClusterFirst),
			settings: dnsSettings{ClusterDNS: []string{"10.96.0.10"}, ClusterDomain: "cluster.local", HasHost: true, Host: resolvConf{Searches: []string{"cluster.local", "lan"}}},
			want:     "search shop.svc.cluster.local svc.cluster.local cluster.local lan\nnameserver 10.96.0.10\noptions ndots:5\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, events := podDNSConfig(tt.pod, tt.settings)
			if s := got.String(); s != tt.want {
				t.Errorf("resolv.conf:\n%s\nwant:\n%s", s, tt.want)
			}
			var gotEvents []string
			for _, e := range events {
				on := "pod"
				if e.OnNode {
					on = "node"
				}
				gotEvents = append(gotEvents, on+" "+e.Reason+": "+e.Message)
			}
			if !reflect.DeepEqual(gotEvents, tt.events) {
				t.Errorf("events:\n%q\nwant:\n%q", gotEvents, tt.events)
			}
		})
	}
}

func numbered(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%02d", prefix, i)
	}
	return out
}

func TestParseResolvConf(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    resolvConf
		wantErr bool
	}{
		{
			name: "nameservers accumulate, the last search and options lines win, comments are skipped",
			in: "# generated\nnameserver 10.0.0.2\nsearch a.example b.example.\nnameserver 10.0.0.3\n" +
				"options ndots:2\nsearch c.example\noptions rotate timeout:1\n  # indented comment\n",
			want: resolvConf{Servers: []string{"10.0.0.2", "10.0.0.3"}, Searches: []string{"c.example"}, Options: []string{"rotate", "timeout:1"}},
		},
		{
			name: "a search domain loses its trailing dot",
			in:   "search example.com. lan.\n",
			want: resolvConf{Servers: []string{}, Searches: []string{"example.com", "lan"}, Options: []string{}},
		},
		{
			name:    "a nameserver line without an address is an error",
			in:      "nameserver\n",
			want:    resolvConf{Servers: []string{}, Searches: []string{}, Options: []string{}},
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseResolvConf(tt.in)
			if (err != nil) != tt.wantErr {
				t.Errorf("err = %v, want error: %v", err, tt.wantErr)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestHostsFileContent(t *testing.T) {
	managed := "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n" +
		"fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n"
	pod := func(with ...func(*corev1.Pod)) *corev1.Pod {
		p := makePod("main").Obj()
		p.Name, p.Namespace = "web-0", "shop"
		for _, f := range with {
			f(p)
		}
		return p
	}
	aliases := func(p *corev1.Pod) {
		p.Spec.HostAliases = []corev1.HostAlias{{IP: "10.1.2.3", Hostnames: []string{"foo.local", "bar.local"}}, {IP: "10.1.2.4", Hostnames: []string{"baz"}}}
	}
	tests := []struct {
		name      string
		pod       *corev1.Pod
		ips       []string
		nodeHosts string
		want      string
	}{
		{
			name: "a pod gets the localhost lines and its IP with its name",
			pod:  pod(),
			ips:  []string{"10.244.1.5"},
			want: managed + "10.244.1.5\tweb-0\n",
		},
		{
			name: "spec.hostname replaces the name",
			pod:  pod(func(p *corev1.Pod) { p.Spec.Hostname = "db" }),
			ips:  []string{"10.244.1.5"},
			want: managed + "10.244.1.5\tdb\n",
		},
		{
			name: "with a subdomain the pod's FQDN comes first: HOSTNAME.SUBDOMAIN.NS.svc.DOMAIN",
			pod:  pod(func(p *corev1.Pod) { p.Spec.Hostname, p.Spec.Subdomain = "db-0", "db" }),
			ips:  []string{"10.244.1.5"},
			want: managed + "10.244.1.5\tdb-0.db.shop.svc.cluster.local\tdb-0\n",
		},
		{
			name: "hostAliases follow, one line per name",
			pod:  pod(aliases),
			ips:  []string{"10.244.1.5"},
			want: managed + "10.244.1.5\tweb-0\n\n# Entries added by HostAliases.\n10.1.2.3\tfoo.local\tbar.local\n10.1.2.4\tbaz\n",
		},
		{
			name:      "a hostNetwork pod gets the node's hosts file under its own header, then hostAliases",
			pod:       pod(aliases, func(p *corev1.Pod) { p.Spec.HostNetwork = true }),
			ips:       []string{"192.168.1.10"},
			nodeHosts: "127.0.0.1\tlocalhost\n192.168.1.10\tnode-a\n",
			want: "# Kubernetes-managed hosts file (host network).\n127.0.0.1\tlocalhost\n192.168.1.10\tnode-a\n" +
				"\n# Entries added by HostAliases.\n10.1.2.3\tfoo.local\tbar.local\n10.1.2.4\tbaz\n",
		},
		{
			name: "a long name is cut to 63 characters without a trailing dash",
			pod:  pod(func(p *corev1.Pod) { p.Name = strings.Repeat("a", 62) + "-bcd" }),
			ips:  []string{"10.244.1.5"},
			want: managed + "10.244.1.5\t" + strings.Repeat("a", 62) + "\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, d := podHostnameAndDomain(tt.pod, "cluster.local")
			got := string(hostsFileContent(tt.pod, tt.ips, h, d, []byte(tt.nodeHosts)))
			if got != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func TestSandboxHostname(t *testing.T) {
	tests := []struct {
		name, hostname, subdomain string
		fqdn                      bool
		want                      string
		wantErr                   bool
	}{
		{name: "the hostname alone by default", hostname: "db-0", subdomain: "db", want: "db-0"},
		{name: "setHostnameAsFQDN makes it the FQDN", hostname: "db-0", subdomain: "db", fqdn: true, want: "db-0.db.shop.svc.cluster.local"},
		{name: "setHostnameAsFQDN without a subdomain keeps the hostname", hostname: "db-0", fqdn: true, want: "db-0"},
		{name: "an FQDN over 64 characters is refused", hostname: strings.Repeat("h", 40), subdomain: "db", fqdn: true, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := makePod("main").Obj()
			p.Namespace = "shop"
			p.Spec.Hostname, p.Spec.Subdomain = tt.hostname, tt.subdomain
			if tt.fqdn {
				p.Spec.SetHostnameAsFQDN = ptr.To(true)
			}
			got, err := sandboxHostname(p, "cluster.local")
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("got %q, %v; want %q (error: %v)", got, err, tt.want, tt.wantErr)
			}
		})
	}
}
