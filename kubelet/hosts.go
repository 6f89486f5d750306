package kubelet

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// The first line of a hosts file the kubelet manages, as Kubernetes
// writes it, so that tools (and people) can tell it from an image's own.
const (
	managedHostsHeader            = "# Kubernetes-managed hosts file.\n"
	managedHostsHeaderHostNetwork = "# Kubernetes-managed hosts file (host network).\n"
)

// podHostnameAndDomain returns the pod's hostname (spec.hostname, else its
// name, cut to 63 characters without a trailing '-' or '.') and its domain:
// SUBDOMAIN.NAMESPACE.svc.CLUSTERDOMAIN when spec.subdomain is set, which
// a headless Service of that name makes resolvable, else "".
func podHostnameAndDomain(pod *corev1.Pod, clusterDomain string) (hostname, domain string) {
	hostname = podHostname(pod)
	if pod.Spec.Subdomain != "" {
		domain = pod.Spec.Subdomain + "." + pod.Namespace + ".svc." + clusterDomain
	}
	return hostname, domain
}

// sandboxHostname is the hostname the pod's UTS namespace gets: the
// hostname, or HOSTNAME.DOMAIN with setHostnameAsFQDN (at most 64
// characters, the kernel's limit).
func sandboxHostname(pod *corev1.Pod, clusterDomain string) (string, error) {
	h, d := podHostnameAndDomain(pod, clusterDomain)
	if pod.Spec.SetHostnameAsFQDN == nil || !*pod.Spec.SetHostnameAsFQDN || d == "" {
		return h, nil
	}
	fqdn := h + "." + d
	if len(fqdn) > 64 {
		return "", fmt.Errorf("failed to construct FQDN from pod hostname and cluster domain, FQDN %s is too long (64 characters is the max, %d characters requested)", fqdn, len(fqdn))
	}
	return fqdn, nil
}

// hostsFileContent is the pod's /etc/hosts as the kubelet writes it. A
// pod on the pod network gets the managed file: the localhost and IPv6
// lines, each pod IP with "HOSTNAME.DOMAIN HOSTNAME" (just HOSTNAME
// without a domain), then the hostAliases, one line per IP. A
// hostNetwork pod gets the node's hosts file (nodeHosts) under its own
// header, then the hostAliases.
func hostsFileContent(pod *corev1.Pod, podIPs []string, hostname, domain string, nodeHosts []byte) []byte {
	var b strings.Builder
	if pod.Spec.HostNetwork {
		b.WriteString(managedHostsHeaderHostNetwork)
		b.Write(nodeHosts)
	} else {
		b.WriteString(managedHostsHeader)
		b.WriteString("127.0.0.1\tlocalhost\n")
		b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
		b.WriteString("fe00::0\tip6-localnet\n")
		b.WriteString("fe00::0\tip6-mcastprefix\n")
		b.WriteString("fe00::1\tip6-allnodes\n")
		b.WriteString("fe00::2\tip6-allrouters\n")
		for _, ip := range podIPs {
			if domain != "" {
				fmt.Fprintf(&b, "%s\t%s.%s\t%s\n", ip, hostname, domain, hostname)
			} else {
				fmt.Fprintf(&b, "%s\t%s\n", ip, hostname)
			}
		}
	}
	if len(pod.Spec.HostAliases) > 0 {
		b.WriteString("\n# Entries added by HostAliases.\n")
		for _, ha := range pod.Spec.HostAliases {
			// One line per IP with all its names, as upstream writes it.
			fmt.Fprintf(&b, "%s\t%s\n", ha.IP, strings.Join(ha.Hostnames, "\t"))
		}
	}
	return []byte(b.String())
}
