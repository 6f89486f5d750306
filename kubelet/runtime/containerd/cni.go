package containerd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"minik/proto/cri"
)

// cniNetwork runs Debian's containernetworking-plugins directly (the CNI
// protocol is "exec the plugin with env and JSON on stdin"): loopback for
// lo, then bridge with host-local IPAM for eth0, then portmap for hostPorts.
type cniNetwork struct {
	binDir  string // where the plugins are, e.g. /usr/lib/cni
	dataDir string // host-local's allocations
	bridge  string // the node's bridge device
}

const cniVersion = "0.4.0"

func (n *cniNetwork) bridgeConf(cidr string) map[string]any {
	return map[string]any{
		"cniVersion": cniVersion, "name": "minik", "type": "bridge",
		"bridge": n.bridge, "isGateway": true, "ipMasq": true, "hairpinMode": true,
		"ipam": map[string]any{
			"type":    "host-local",
			"ranges":  [][]map[string]string{{{"subnet": cidr}}},
			"routes":  []map[string]string{{"dst": "0.0.0.0/0"}},
			"dataDir": n.dataDir,
		},
	}
}

type portMapping struct {
	HostPort      int32  `json:"hostPort"`
	ContainerPort int32  `json:"containerPort"`
	Protocol      string `json:"protocol"`
	HostIP        string `json:"hostIP,omitempty"`
}

func (n *cniNetwork) portmapConf(ports []*cri.PortMapping, prev json.RawMessage) map[string]any {
	var pm []portMapping
	for _, p := range ports {
		if p.HostPort == 0 {
			continue
		}
		proto := strings.ToLower(p.Protocol)
		if proto == "" {
			proto = "tcp"
		}
		pm = append(pm, portMapping{HostPort: p.HostPort, ContainerPort: p.ContainerPort, Protocol: proto, HostIP: p.HostIp})
	}
	conf := map[string]any{
		"cniVersion": cniVersion, "name": "minik", "type": "portmap",
		"capabilities":  map[string]bool{"portMappings": true},
		"runtimeConfig": map[string]any{"portMappings": pm},
		"snat":          true,
	}
	if prev != nil {
		conf["prevResult"] = prev
	}
	return conf
}

func hasHostPorts(ports []*cri.PortMapping) bool {
	for _, p := range ports {
		if p.HostPort != 0 {
			return true
		}
	}
	return false
}

// firewallConf admits the pod's traffic in the FORWARD chain, which
// Docker's default DROP policy would otherwise stop on bridged traffic.
func (n *cniNetwork) firewallConf(prev json.RawMessage) map[string]any {
	conf := map[string]any{"cniVersion": cniVersion, "name": "minik", "type": "firewall", "backend": "iptables"}
	if prev != nil {
		conf["prevResult"] = prev
	}
	return conf
}

// add attaches netns to the pod network and returns the pod IP and the
// CNI result (kept for del).
func (n *cniNetwork) add(ctx context.Context, id, netns, cidr string, ports []*cri.PortMapping) (string, json.RawMessage, error) {
	if cidr == "" {
		return "", nil, fmt.Errorf("no pod CIDR: the node has no spec.podCIDR and no fallback range is configured")
	}
	lo := map[string]any{"cniVersion": cniVersion, "name": "minik-lo", "type": "loopback"}
	if _, err := n.exec(ctx, "ADD", id, netns, "lo", lo); err != nil {
		return "", nil, err
	}
	out, err := n.exec(ctx, "ADD", id, netns, "eth0", n.bridgeConf(cidr))
	if err != nil {
		return "", nil, err
	}
	var res struct {
		IPs []struct {
			Address string `json:"address"`
		} `json:"ips"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return "", nil, fmt.Errorf("bridge plugin result %q: %w", out, err)
	}
	if len(res.IPs) == 0 {
		return "", nil, fmt.Errorf("bridge plugin gave no IP: %s", out)
	}
	ip, _, err := net.ParseCIDR(res.IPs[0].Address)
	if err != nil {
		return "", nil, err
	}
	if _, err := n.exec(ctx, "ADD", id, netns, "eth0", n.firewallConf(out)); err != nil {
		return "", out, err
	}
	if hasHostPorts(ports) {
		if _, err := n.exec(ctx, "ADD", id, netns, "eth0", n.portmapConf(ports, out)); err != nil {
			return "", out, err
		}
	}
	return ip.String(), out, nil
}

// del detaches netns and frees its IP; it succeeds when nothing is left.
func (n *cniNetwork) del(ctx context.Context, id, netns, cidr string, ports []*cri.PortMapping, prev json.RawMessage) error {
	var errs []string
	if hasHostPorts(ports) {
		if _, err := n.exec(ctx, "DEL", id, netns, "eth0", n.portmapConf(ports, prev)); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if prev != nil {
		if _, err := n.exec(ctx, "DEL", id, netns, "eth0", n.firewallConf(prev)); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if cidr != "" {
		if _, err := n.exec(ctx, "DEL", id, netns, "eth0", n.bridgeConf(cidr)); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("cni del: %s", strings.Join(errs, "; "))
	}
	return nil
}

func (n *cniNetwork) exec(ctx context.Context, command, id, netns, ifname string, conf map[string]any) ([]byte, error) {
	plugin := conf["type"].(string)
	stdin, err := json.Marshal(conf)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, filepath.Join(n.binDir, plugin))
	cmd.Env = append(os.Environ(),
		"CNI_COMMAND="+command, "CNI_CONTAINERID="+id, "CNI_NETNS="+netns,
		"CNI_IFNAME="+ifname, "CNI_PATH="+n.binDir)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("cni %s %s %s: %v: %s%s", plugin, command, ifname, err, strings.TrimSpace(stdout.String()), strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}
