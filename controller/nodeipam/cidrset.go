// Package nodeipam gives every node a podCIDR cut from the cluster CIDR
// (10.244.N.0/24 by default), as Kubernetes' range allocator does:
//
//	node event ─▶ no spec.podCIDR? ─▶ queue ─▶ Plan(node, CIDRSet.Next: lowest free)
//	   ─▶ AssignPodCIDR ─▶ sink: Occupy it, patch spec.podCIDR(s) (Release it if that fails)
//	   ─▶ none free: ReportCIDRNotAvailable ─▶ sink: event CIDRNotAvailable, retried with backoff
//	   ─▶ assigned: until the cache shows the subnet, a sync of the node does nothing
//	node with a podCIDR ─▶ Occupy it; node deleted ─▶ Release it
package nodeipam

import (
	"errors"
	"fmt"
	"math/big"
	"net"
	"sync"
)

// ErrFull means every subnet is taken.
var ErrFull = errors.New("nodeipam: cluster CIDR is full")

// CIDRSet hands out the subnets of one cluster CIDR.
type CIDRSet struct {
	mu       sync.Mutex
	base     *big.Int
	bits     int // total address bits (32)
	maskSize int
	count    int
	used     map[int]bool
}

// NewCIDRSet cuts cidr (e.g. 10.244.0.0/16) into subnets of maskSize (24).
func NewCIDRSet(cidr string, maskSize int) (*CIDRSet, error) {
	_, ipn, err := net.ParseCIDR(cidr)
	if err != nil {
		return nil, fmt.Errorf("nodeipam: cluster CIDR %q: %w", cidr, err)
	}
	ones, bits := ipn.Mask.Size()
	if bits != 32 {
		return nil, fmt.Errorf("nodeipam: only IPv4 cluster CIDRs are supported, got %q", cidr)
	}
	if maskSize < ones || maskSize > bits || maskSize-ones > 20 {
		return nil, fmt.Errorf("nodeipam: node mask /%d does not fit in %s", maskSize, cidr)
	}
	return &CIDRSet{base: new(big.Int).SetBytes(ipn.IP.To4()), bits: bits, maskSize: maskSize,
		count: 1 << (maskSize - ones), used: map[int]bool{}}, nil
}

func (s *CIDRSet) subnet(i int) string {
	v := new(big.Int).Add(s.base, new(big.Int).Lsh(big.NewInt(int64(i)), uint(s.bits-s.maskSize)))
	b := v.FillBytes(make([]byte, 4))
	return fmt.Sprintf("%s/%d", net.IP(b).String(), s.maskSize)
}

// index returns the subnet number of cidr, or false if it is not one of ours.
func (s *CIDRSet) index(cidr string) (int, bool) {
	ip, ipn, err := net.ParseCIDR(cidr)
	if err != nil || ip.To4() == nil {
		return 0, false
	}
	if ones, _ := ipn.Mask.Size(); ones != s.maskSize {
		return 0, false
	}
	off := new(big.Int).Sub(new(big.Int).SetBytes(ipn.IP.To4()), s.base)
	off.Rsh(off, uint(s.bits-s.maskSize))
	if off.Sign() < 0 || !off.IsInt64() || off.Int64() >= int64(s.count) {
		return 0, false
	}
	return int(off.Int64()), true
}

// Next returns the lowest free subnet without taking it (Occupy takes
// it), or ErrFull.
func (s *CIDRSet) Next() (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.count {
		if !s.used[i] {
			return s.subnet(i), nil
		}
	}
	return "", ErrFull
}

// Occupy marks cidr as taken (a node has it, or is about to) and
// reports whether it was free before; a CIDR that is not one of ours is
// never free.
func (s *CIDRSet) Occupy(cidr string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.index(cidr)
	if !ok || s.used[i] {
		return false
	}
	s.used[i] = true
	return true
}

// Release frees cidr.
func (s *CIDRSet) Release(cidr string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i, ok := s.index(cidr); ok {
		delete(s.used, i)
	}
}
