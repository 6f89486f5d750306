// Package hostip finds the host's primary address: the one a kubelet
// reports as its node's InternalIP and the apiserver advertises.
package hostip

import "net"

// PrimaryIPv4 returns the first non-loopback, non-link-local IPv4 address
// of the host's interfaces, or 127.0.0.1 when there is none.
func PrimaryIPv4() string {
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && !ipn.IP.IsLoopback() && !ipn.IP.IsLinkLocalUnicast() {
				return ipn.IP.String()
			}
		}
	}
	return "127.0.0.1"
}
