package dns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"time"

	miekg "github.com/miekg/dns"
)

// Forwarder asks the upstream resolvers about names outside the cluster
// zone: each in turn, in resolv.conf order as a stub resolver does, until
// one answers.
type Forwarder struct {
	upstreams []string // "IP:PORT"
	udp, tcp  *miekg.Client
}

// NewForwarder returns a forwarder to upstreams ("IP:PORT"), waiting at
// most timeout for each (default 2s).
func NewForwarder(upstreams []string, timeout time.Duration) *Forwarder {
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	return &Forwarder{
		upstreams: upstreams,
		udp:       &miekg.Client{Net: "udp", Timeout: timeout, UDPSize: miekg.DefaultMsgSize},
		tcp:       &miekg.Client{Net: "tcp", Timeout: timeout},
	}
}

// Upstreams returns the resolvers the forwarder asks.
func (f *Forwarder) Upstreams() []string { return f.upstreams }

// errNoUpstream is returned when there is no resolver to ask.
var errNoUpstream = errors.New("no upstream resolver")

// Exchange sends req upstream, over TCP if tcp, and returns the first
// answer. A truncated UDP answer is returned as it is: the client asks
// again over TCP, and so does the forwarder then.
func (f *Forwarder) Exchange(ctx context.Context, req *miekg.Msg, tcp bool) (*miekg.Msg, error) {
	c := f.udp
	if tcp {
		c = f.tcp
	}
	errs := []error{errNoUpstream}
	for _, u := range f.upstreams {
		resp, _, err := c.ExchangeContext(ctx, req, u)
		if err == nil {
			return resp, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", u, err))
		if ctx.Err() != nil {
			break
		}
	}
	if len(errs) > 1 {
		errs = errs[1:]
	}
	return nil, errors.Join(errs...)
}

// Resolve asks upstream for (name, qtype) with recursion, retrying over
// TCP when the UDP answer is truncated.
func (f *Forwarder) Resolve(ctx context.Context, name string, qtype uint16) (*miekg.Msg, error) {
	req := new(miekg.Msg).SetQuestion(name, qtype)
	req.SetEdns0(miekg.DefaultMsgSize, false)
	resp, err := f.Exchange(ctx, req, false)
	if err == nil && resp.Truncated {
		resp, err = f.Exchange(ctx, req, true)
	}
	return resp, err
}

// UpstreamsFromResolvConf reads the nameservers of a resolv.conf file as
// "IP:PORT", leaving out those that would send queries back to this
// server: its own listen address (every local address when it listens on
// all of them) and the addresses in self (the kube-dns ClusterIP, which
// the node proxy sends here).
func UpstreamsFromResolvConf(path, listen string, self ...string) ([]string, error) {
	cc, err := miekg.ClientConfigFromFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	listening := listenAddrs(listen)
	var services []net.IP
	for _, s := range self {
		if ip := net.ParseIP(s); ip != nil {
			services = append(services, ip)
		}
	}
	var out []string
	for _, s := range cc.Servers {
		if ip := net.ParseIP(s); ip != nil {
			if cc.Port == portOf(listen) && slices.ContainsFunc(listening, ip.Equal) ||
				cc.Port == "53" && slices.ContainsFunc(services, ip.Equal) {
				continue // that is us
			}
		}
		out = append(out, net.JoinHostPort(s, cc.Port))
	}
	return out, nil
}

// listenAddrs returns the addresses at which a server listening on listen
// ("IP:PORT") receives: that IP, or every local address for 0.0.0.0/::.
func listenAddrs(listen string) []net.IP {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return nil
	}
	ip := net.ParseIP(host)
	if ip != nil && !ip.IsUnspecified() {
		return []net.IP{ip}
	}
	out := []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok {
				out = append(out, ipn.IP)
			}
		}
	}
	return out
}

func portOf(hostport string) string {
	_, port, _ := net.SplitHostPort(hostport)
	return port
}
