package kubelet

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"minik/kubelet/nodestatus"
)

// Limits on a pod's resolver configuration, as the kubelet applies them
// (k8s.io/kubernetes/pkg/apis/core/validation: MaxDNSNameservers,
// MaxDNSSearchPaths and MaxDNSSearchListChars of the expanded DNS config,
// the default since Kubernetes 1.28; a search domain longer than a DNS
// subdomain, 253 characters, aborts some glibc resolvers).
const (
	maxDNSNameservers     = 3
	maxDNSSearchPaths     = 32
	maxDNSSearchListChars = 2048
	maxDNSSearchPathChars = 253
)

// defaultDNSOptions are a ClusterFirst pod's options: a name with fewer
// than five dots is first tried with each search domain, so that "web"
// and "web.other" find Services.
var defaultDNSOptions = []string{"ndots:5"}

// DefaultClusterDNS and DefaultClusterDomain are the kubelet flags'
// defaults in minik: the kube-dns Service at the tenth address of
// 10.96.0.0/12, as kubeadm sets it up, and Kubernetes' domain.
const (
	DefaultClusterDNS    = "10.96.0.10"
	DefaultClusterDomain = "cluster.local"
	DefaultResolvConf    = "/etc/resolv.conf"
)

// resolvConf is a resolver configuration: what a resolv.conf says, and what
// CRI's DNSConfig carries from the kubelet to the runtime.
type resolvConf struct {
	Servers  []string
	Searches []string
	Options  []string
}

// String renders r as a resolv.conf: the search line, one nameserver line
// per server, the options line (the layout containerd writes for a
// sandbox).
func (r resolvConf) String() string {
	var b strings.Builder
	if len(r.Searches) > 0 {
		b.WriteString("search " + strings.Join(r.Searches, " ") + "\n")
	}
	for _, s := range r.Servers {
		b.WriteString("nameserver " + s + "\n")
	}
	if len(r.Options) > 0 {
		b.WriteString("options " + strings.Join(r.Options, " ") + "\n")
	}
	return b.String()
}

// parseResolvConf reads a resolv.conf as the kubelet reads --resolv-conf:
// nameserver lines accumulate, the last search line and the last options
// line win, a search domain loses its trailing dot, # starts a comment
// line.
func parseResolvConf(data string) (resolvConf, error) {
	r := resolvConf{Servers: []string{}, Searches: []string{}, Options: []string{}}
	var errs []string
	for _, line := range strings.Split(data, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "nameserver":
			if len(f) < 2 {
				errs = append(errs, "nameserver list is empty")
				continue
			}
			r.Servers = append(r.Servers, f[1])
		case "search":
			r.Searches = []string{}
			for _, s := range f[1:] {
				r.Searches = append(r.Searches, strings.TrimSuffix(s, "."))
			}
		case "options":
			r.Options = append([]string{}, f[1:]...)
		}
	}
	if len(errs) > 0 {
		return r, fmt.Errorf("%s", strings.Join(errs, ", "))
	}
	return r, nil
}

// dnsSettings is what a node knows about DNS: its kubelet flags and the
// host's resolver file, read.
type dnsSettings struct {
	// ClusterDNS are the cluster DNS servers (--cluster-dns); empty: none.
	ClusterDNS []string
	// ClusterDomain is the cluster's DNS domain (--cluster-domain).
	ClusterDomain string
	// Host is the parsed --resolv-conf file; HasHost is false when the
	// flag is empty (no host resolvers).
	Host    resolvConf
	HasHost bool
}

// dnsEvent is an event the DNS policy asks the driver to record, on the
// pod or on the node.
type dnsEvent struct {
	OnNode  bool
	Reason  string
	Message string
}

// podDNSConfig is the resolver configuration of pod's containers, as the
// kubelet forms it (pkg/kubelet/network/dns):
//
//   - None: only the pod's dnsConfig.
//   - ClusterFirst (and ClusterFirstWithHostNet): the cluster DNS servers
//     alone, searches NS.svc.DOMAIN svc.DOMAIN DOMAIN then the host's,
//     options ndots:5. A hostNetwork pod with ClusterFirst gets Default
//     instead; with no cluster DNS configured, ClusterFirst falls back to
//     Default with a MissingClusterDNS event on the node and the pod.
//   - Default: the host's resolv.conf; with no --resolv-conf,
//     nameserver 127.0.0.1 and search ".".
//
// The pod's dnsConfig is then merged in (nameservers and searches
// appended without duplicates, options by name, the pod's value winning),
// and the result cut to the limits, with a DNSConfigForming event when
// something was cut.
func podDNSConfig(pod *corev1.Pod, s dnsSettings) (resolvConf, []dnsEvent) {
	var events []dnsEvent
	r := resolvConf{
		Servers:  append([]string{}, s.Host.Servers...),
		Searches: append([]string{}, s.Host.Searches...),
		Options:  append([]string{}, s.Host.Options...),
	}
	policy := pod.Spec.DNSPolicy
	if policy == "" {
		policy = corev1.DNSClusterFirst // the API default
	}
	if policy == corev1.DNSClusterFirst && pod.Spec.HostNetwork {
		policy = corev1.DNSDefault
	}
	if (policy == corev1.DNSClusterFirst || policy == corev1.DNSClusterFirstWithHostNet) && len(s.ClusterDNS) == 0 {
		msg := fmt.Sprintf("kubelet does not have ClusterDNS IP configured and cannot create Pod using %q policy. Falling back to %q policy.",
			corev1.DNSClusterFirst, corev1.DNSDefault)
		events = append(events,
			dnsEvent{OnNode: true, Reason: "MissingClusterDNS", Message: msg},
			dnsEvent{Reason: "MissingClusterDNS", Message: fmt.Sprintf("pod: %q. %s", podDesc(pod), msg)})
		policy = corev1.DNSDefault
	}
	switch policy {
	case corev1.DNSNone:
		r = resolvConf{}
	case corev1.DNSClusterFirst, corev1.DNSClusterFirstWithHostNet:
		r.Servers = append([]string{}, s.ClusterDNS...)
		if s.ClusterDomain != "" {
			r.Searches = uniq(append([]string{
				pod.Namespace + ".svc." + s.ClusterDomain, "svc." + s.ClusterDomain, s.ClusterDomain,
			}, r.Searches...))
		}
		r.Options = append([]string{}, defaultDNSOptions...)
	default: // Default
		if !s.HasHost {
			r.Servers = []string{"127.0.0.1"}
			r.Searches = []string{"."}
		}
	}
	if c := pod.Spec.DNSConfig; c != nil {
		r.Servers = uniq(append(r.Servers, c.Nameservers...))
		r.Searches = uniq(append(r.Searches, c.Searches...))
		r.Options = mergeDNSOptions(r.Options, c.Options)
	}
	if len(r.Servers) > maxDNSNameservers {
		r.Servers = r.Servers[:maxDNSNameservers]
		events = append(events, dnsEvent{Reason: "DNSConfigForming", Message: "Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: " +
			strings.Join(r.Servers, " ")})
	}
	if searches, cut := fitSearches(r.Searches); cut {
		r.Searches = searches
		events = append(events, dnsEvent{Reason: "DNSConfigForming", Message: "Search Line limits were exceeded, some search paths have been omitted, the applied search line is: " +
			strings.Join(r.Searches, " ")})
	}
	return r, events
}

// fitSearches keeps the first maxDNSSearchPaths domains, drops any longer
// than a DNS subdomain, then drops domains from the end until the line
// fits maxDNSSearchListChars. It reports whether anything was dropped.
func fitSearches(in []string) ([]string, bool) {
	cut := false
	if len(in) > maxDNSSearchPaths {
		in, cut = in[:maxDNSSearchPaths], true
	}
	out := make([]string, 0, len(in))
	for _, s := range in {
		if len(s) > maxDNSSearchPathChars {
			cut = true
			continue
		}
		out = append(out, s)
	}
	for len(out) > 0 && len(strings.Join(out, " ")) > maxDNSSearchListChars {
		out, cut = out[:len(out)-1], true
	}
	return out, cut
}

// mergeDNSOptions adds the pod's options to existing ones ("name" or
// "name:value"); an option the pod names again takes the pod's value.
// Existing options keep their order and new ones follow in the pod's
// order (the kubelet goes through a map, so its order varies from one
// pod start to the next; resolvers do not care).
func mergeDNSOptions(existing []string, pod []corev1.PodDNSConfigOption) []string {
	var names []string
	values := map[string]string{}
	set := func(name, value string) {
		if _, ok := values[name]; !ok {
			names = append(names, name)
		}
		values[name] = value
	}
	for _, o := range existing {
		name, value, _ := strings.Cut(o, ":")
		set(name, value)
	}
	for _, o := range pod {
		value := ""
		if o.Value != nil {
			value = *o.Value
		}
		set(o.Name, value)
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		if values[n] != "" {
			out = append(out, n+":"+values[n])
		} else {
			out = append(out, n)
		}
	}
	return out
}

func uniq(in []string) []string {
	seen := map[string]bool{}
	out := make([]string, 0, len(in))
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// podDesc names a pod in messages as the kubelet does: NAME_NAMESPACE(UID).
func podDesc(pod *corev1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}

// writeSandboxFiles writes what a pod's sandbox needs before it starts:
// its resolv.conf (podDNSConfig over the node's settings and --resolv-conf,
// read now), and records the events the DNS policy asks for. In
// Kubernetes the kubelet hands the DNS config to the runtime in the
// sandbox config (CRI DNSConfig) and containerd writes the file; minik's
// mini-CRI has no such field, so the kubelet writes it beside the pod's
// etc-hosts and bind-mounts it into each container. An empty
// configuration gives the node's /etc/resolv.conf, as containerd does.
func (k *Kubelet) writeSandboxFiles(pod *corev1.Pod) error {
	if _, err := sandboxHostname(pod, k.cfg.ClusterDomain); err != nil {
		return err
	}
	s := dnsSettings{ClusterDNS: k.cfg.ClusterDNS, ClusterDomain: k.cfg.ClusterDomain}
	if k.cfg.ResolvConf != NoResolvConf {
		data, err := os.ReadFile(k.cfg.ResolvConf)
		if err != nil {
			return fmt.Errorf("reading --resolv-conf: %w", err)
		}
		if s.Host, err = parseResolvConf(string(data)); err != nil {
			return fmt.Errorf("parsing %s: %w", k.cfg.ResolvConf, err)
		}
		s.HasHost = true
	}
	conf, events := podDNSConfig(pod, s)
	for _, e := range events {
		if e.OnNode {
			k.recorder.Eventf(nodestatus.Ref(k.cfg.NodeName), corev1.EventTypeWarning, e.Reason, "%s", e.Message)
		} else {
			k.recorder.Eventf(k.eventTarget(pod), corev1.EventTypeWarning, e.Reason, "%s", e.Message)
		}
	}
	content := []byte(conf.String())
	if len(content) == 0 {
		var err error
		if content, err = os.ReadFile(DefaultResolvConf); err != nil {
			return err
		}
	}
	dir := k.podDir(string(pod.UID))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "resolv.conf"), content, 0o644)
}
