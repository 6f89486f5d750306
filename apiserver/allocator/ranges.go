// Package allocator hands out Service cluster IPs and node ports, as
// kube-apiserver's ipallocator and portallocator do: from a range set by a
// flag, at random, the lower band of the range kept for explicit requests,
// with upstream's error messages.
//
// Each allocated item is one etcd key (/registry/ranges/serviceips/IP,
// /registry/ranges/servicenodeports/PORT) whose value names the Service
// holding it. The apiserver writes these keys in the same transaction as
// the Service itself (storage companions), so a Service never exists
// without its allocation, and two Services never commit the same item.
// Repair compares the keys with what Services hold, as upstream's repair
// controllers do.
package allocator

import (
	"errors"
	"fmt"
	"math/big"
	"net/netip"
	"strconv"
	"strings"
)

// Errors with upstream's texts. A request for a taken or out-of-range item
// becomes 422 with the field's path; a full range becomes 500.
var (
	ErrFull          = errors.New("range is full")
	ErrIPAllocated   = errors.New("provided IP is already allocated")
	ErrPortAllocated = errors.New("provided port is already allocated")
)

// RangeError says a requested item is not in the range (or not an item at
// all); its text is upstream's.
type RangeError struct{ msg string }

func (e *RangeError) Error() string { return e.msg }

// IsRefusal reports whether err refuses a request (taken, out of range),
// as opposed to a failure to read the allocations.
func IsRefusal(err error) bool {
	var re *RangeError
	return errors.Is(err, ErrIPAllocated) || errors.Is(err, ErrPortAllocated) || errors.As(err, &re)
}

// Range is a set of Size items numbered 0..Size-1. The first Static of
// them are handed out only on request (upstream's static subrange, so
// well-known addresses such as the DNS service's stay free).
type Range interface {
	Size() int
	Static() int
	// Item is the i-th item as text ("10.96.0.1", "30000").
	Item(i int) string
	// Index parses an item and returns its number, or an error saying it
	// is not in the range.
	Index(item string) (int, error)
	String() string
}

// IPRange is the usable addresses of a CIDR: all but the network address
// and, for IPv4, the broadcast address. IPv6 ranges are capped at 65536
// addresses, as upstream caps its bitmap.
type IPRange struct {
	prefix netip.Prefix
	base   netip.Addr // the first usable address
	size   int
}

// ParseIPRange parses a CIDR such as "10.96.0.0/12".
func ParseIPRange(cidr string) (*IPRange, error) {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return nil, fmt.Errorf("invalid service IP range %q: %w", cidr, err)
	}
	if p != p.Masked() {
		return nil, fmt.Errorf("invalid service IP range %q: has bits set beyond the prefix length (did you mean %s?)", cidr, p.Masked())
	}
	hostBits := p.Addr().BitLen() - p.Bits()
	size := 1 << 62
	if hostBits < 62 {
		size = 1 << hostBits
	}
	if p.Addr().Is4() {
		size-- // the broadcast address
	} else if size > 65536 {
		size = 65536
	}
	size-- // the network address
	if size < 1 {
		return nil, fmt.Errorf("invalid service IP range %q: no usable address", cidr)
	}
	return &IPRange{prefix: p, base: p.Addr().Next(), size: size}, nil
}

// Size is the number of usable addresses.
func (r *IPRange) Size() int { return r.size }

// Static is upstream's static band: min(max(16, cidrSize/16), 256), none
// for ranges of 16 addresses or fewer.
func (r *IPRange) Static() int {
	hostBits := r.prefix.Addr().BitLen() - r.prefix.Bits()
	if hostBits <= 4 {
		return 0
	}
	if hostBits >= 12 {
		return 256
	}
	return max(16, (1<<hostBits)/16)
}

// Item returns the i-th usable address.
func (r *IPRange) Item(i int) string {
	n := new(big.Int).SetBytes(r.base.AsSlice())
	n.Add(n, big.NewInt(int64(i)))
	b := n.FillBytes(make([]byte, len(r.base.AsSlice())))
	addr, _ := netip.AddrFromSlice(b)
	return addr.String()
}

// Index returns the number of ip in the range.
func (r *IPRange) Index(ip string) (int, error) {
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return 0, &RangeError{fmt.Sprintf("failed to parse IP %q: %v", ip, err)}
	}
	addr = addr.Unmap()
	notIn := &RangeError{fmt.Sprintf("the provided IP (%s) is not in the valid range. The range of valid IPs is %s", ip, r.prefix)}
	if !r.prefix.Contains(addr) {
		return 0, notIn
	}
	d := new(big.Int).Sub(new(big.Int).SetBytes(addr.AsSlice()), new(big.Int).SetBytes(r.base.AsSlice()))
	if d.Sign() < 0 || d.Cmp(big.NewInt(int64(r.size))) >= 0 {
		return 0, notIn
	}
	return int(d.Int64()), nil
}

// String is the CIDR.
func (r *IPRange) String() string { return r.prefix.String() }

// Is6 reports whether the range holds IPv6 addresses.
func (r *IPRange) Is6() bool { return r.prefix.Addr().Is6() }

// PortRange is a range of node ports, such as 30000-32767.
type PortRange struct {
	base, size int
}

// ParsePortRange parses "30000-32767" (or a single port, "30000").
func ParsePortRange(s string) (*PortRange, error) {
	lo, hi, found := strings.Cut(strings.TrimSpace(s), "-")
	if !found {
		hi = lo
	}
	a, err1 := strconv.Atoi(strings.TrimSpace(lo))
	b, err2 := strconv.Atoi(strings.TrimSpace(hi))
	if err1 != nil || err2 != nil || a < 1 || b > 65535 || a > b {
		return nil, fmt.Errorf("invalid node port range %q: want FROM-TO, 1 <= FROM <= TO <= 65535", s)
	}
	return &PortRange{base: a, size: b - a + 1}, nil
}

// Size is the number of ports.
func (r *PortRange) Size() int { return r.size }

// Static is upstream's static band: min(max(16, size/32), 128), none for
// ranges of 16 ports or fewer.
func (r *PortRange) Static() int {
	if r.size <= 16 {
		return 0
	}
	return min(max(16, r.size/32), 128)
}

// Item returns the i-th port.
func (r *PortRange) Item(i int) string { return strconv.Itoa(r.base + i) }

// Index returns the number of a port in the range.
func (r *PortRange) Index(port string) (int, error) {
	p, err := strconv.Atoi(port)
	if err != nil {
		return 0, &RangeError{fmt.Sprintf("failed to parse port %q: %v", port, err)}
	}
	if p < r.base || p >= r.base+r.size {
		return 0, &RangeError{fmt.Sprintf("provided port is not in the valid range. The range of valid ports is %s", r)}
	}
	return p - r.base, nil
}

// String is "FROM-TO", as upstream prints it.
func (r *PortRange) String() string { return fmt.Sprintf("%d-%d", r.base, r.base+r.size-1) }
