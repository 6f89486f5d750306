package nodeipam

import (
	"errors"
	"testing"
)

// allocate takes the lowest free subnet, as the controller's sync does.
func allocate(s *CIDRSet) (string, error) {
	c, err := s.Next()
	if err == nil && !s.Occupy(c) {
		return "", errors.New("Next handed out a taken subnet")
	}
	return c, err
}

func TestCIDRSet(t *testing.T) {
	t.Run("hands out 10.244.N.0/24 from N=0 upwards, skipping occupied ones", func(t *testing.T) {
		s, err := NewCIDRSet("10.244.0.0/16", 24)
		if err != nil {
			t.Fatal(err)
		}
		s.Occupy("10.244.1.0/24")
		var got []string
		for range 3 {
			c, err := allocate(s)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, c)
		}
		want := []string{"10.244.0.0/24", "10.244.2.0/24", "10.244.3.0/24"}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("got %v, want %v", got, want)
			}
		}
	})
	t.Run("a released CIDR is handed out again", func(t *testing.T) {
		s, _ := NewCIDRSet("10.244.0.0/16", 24)
		a, _ := allocate(s)
		s.Release(a)
		if b, _ := allocate(s); b != a {
			t.Fatalf("got %s, want %s", b, a)
		}
	})
	t.Run("a full range answers ErrFull", func(t *testing.T) {
		s, _ := NewCIDRSet("10.0.0.0/23", 24)
		allocate(s)
		allocate(s)
		if _, err := allocate(s); !errors.Is(err, ErrFull) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("CIDRs outside the range or of another size are ignored", func(t *testing.T) {
		s, _ := NewCIDRSet("10.244.0.0/16", 24)
		s.Occupy("192.168.0.0/24")
		s.Occupy("10.244.0.0/25")
		if c, _ := allocate(s); c != "10.244.0.0/24" {
			t.Fatalf("got %s", c)
		}
	})
	t.Run("Occupy reports whether the CIDR was free", func(t *testing.T) {
		s, _ := NewCIDRSet("10.244.0.0/16", 24)
		if !s.Occupy("10.244.3.0/24") || s.Occupy("10.244.3.0/24") || s.Occupy("192.168.0.0/24") {
			t.Fatal("a free CIDR of the range is free once, a taken one or a foreign one never")
		}
	})
	t.Run("bad configurations are refused", func(t *testing.T) {
		for _, c := range []struct {
			cidr string
			mask int
		}{{"nonsense", 24}, {"10.244.0.0/16", 8}, {"fd00::/48", 64}} {
			if _, err := NewCIDRSet(c.cidr, c.mask); err == nil {
				t.Errorf("%s /%d accepted", c.cidr, c.mask)
			}
		}
	})
}
