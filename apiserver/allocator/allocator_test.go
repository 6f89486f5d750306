package allocator

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// memKV is the allocation keys in a map, as etcd holds them.
type memKV map[string]string

func (m memKV) Exists(_ context.Context, key string) (bool, error) {
	_, ok := m[key]
	return ok, nil
}

func (m memKV) Keys(_ context.Context, prefix string) ([]string, error) {
	var out []string
	for k := range m {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	return out, nil
}

func mustIPRange(t *testing.T, cidr string) *IPRange {
	t.Helper()
	r, err := ParseIPRange(cidr)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func mustPortRange(t *testing.T, s string) *PortRange {
	t.Helper()
	r, err := ParsePortRange(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRanges(t *testing.T) {
	tests := []struct {
		name        string
		r           Range
		size        int
		static      int
		first, last string
	}{
		{"the default service range skips the network and broadcast addresses", mustIPRange(t, "10.96.0.0/12"), 1<<20 - 2, 256, "10.96.0.1", "10.111.255.254"},
		{"a /24 keeps 16 addresses for requests", mustIPRange(t, "10.0.0.0/24"), 254, 16, "10.0.0.1", "10.0.0.254"},
		{"a /28 has no static band", mustIPRange(t, "10.0.0.0/28"), 14, 0, "10.0.0.1", "10.0.0.14"},
		{"an IPv6 range is capped at 65536 addresses", mustIPRange(t, "fd00::/108"), 65535, 256, "fd00::1", "fd00::ffff"},
		{"the default node port range keeps 86 ports for requests", mustPortRange(t, "30000-32767"), 2768, 86, "30000", "32767"},
		{"a small port range has no static band", mustPortRange(t, "30000-30009"), 10, 0, "30000", "30009"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.r.Size() != tc.size || tc.r.Static() != tc.static {
				t.Errorf("size, static = %d, %d; want %d, %d", tc.r.Size(), tc.r.Static(), tc.size, tc.static)
			}
			if got := tc.r.Item(0); got != tc.first {
				t.Errorf("first = %s, want %s", got, tc.first)
			}
			if got := tc.r.Item(tc.size - 1); got != tc.last {
				t.Errorf("last = %s, want %s", got, tc.last)
			}
			if i, err := tc.r.Index(tc.last); err != nil || i != tc.size-1 {
				t.Errorf("Index(%s) = %d, %v", tc.last, i, err)
			}
		})
	}
}

func TestBadRanges(t *testing.T) {
	for _, s := range []string{"10.96.0.1/12", "10.96.0.0", "10.0.0.0/32"} {
		if _, err := ParseIPRange(s); err == nil {
			t.Errorf("ParseIPRange(%q) accepted", s)
		}
	}
	for _, s := range []string{"32767-30000", "0-10", "30000-70000", "abc"} {
		if _, err := ParsePortRange(s); err == nil {
			t.Errorf("ParsePortRange(%q) accepted", s)
		}
	}
}

func TestCheck(t *testing.T) {
	ips := NewIPs(mustIPRange(t, "10.96.0.0/12"), memKV{ServiceIPsPrefix + "10.96.0.10": "kube-system/kube-dns"})
	ports := NewPorts(mustPortRange(t, "30000-32767"), memKV{ServiceNodePortsPrefix + "30080": "default/web"})
	tests := []struct {
		name string
		a    *Allocator
		item string
		want string // "" for allowed
	}{
		{"a free IP in the range may be requested", ips, "10.96.0.11", ""},
		{"an allocated IP is refused", ips, "10.96.0.10", "provided IP is already allocated"},
		{"an IP outside the range is refused", ips, "192.168.1.1",
			"the provided IP (192.168.1.1) is not in the valid range. The range of valid IPs is 10.96.0.0/12"},
		{"the network address is not in the range", ips, "10.96.0.0",
			"the provided IP (10.96.0.0) is not in the valid range. The range of valid IPs is 10.96.0.0/12"},
		{"the broadcast address is not in the range", ips, "10.111.255.255",
			"the provided IP (10.111.255.255) is not in the valid range. The range of valid IPs is 10.96.0.0/12"},
		{"a free node port may be requested", ports, "30081", ""},
		{"an allocated node port is refused", ports, "30080", "provided port is already allocated"},
		{"a port outside the range is refused", ports, "80",
			"provided port is not in the valid range. The range of valid ports is 30000-32767"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.a.Check(context.Background(), tc.item)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Check(%s) = %v, want allowed", tc.item, err)
				}
				return
			}
			if err == nil || err.Error() != tc.want || !IsRefusal(err) {
				t.Fatalf("Check(%s) = %v, want refusal %q", tc.item, err, tc.want)
			}
		})
	}
}

func TestNextPicksFromTheDynamicBandFirst(t *testing.T) {
	kv := memKV{}
	a := NewIPs(mustIPRange(t, "10.0.0.0/24"), kv)
	a.Rand = rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 254-16; i++ {
		ip, err := a.Next(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		idx, _ := a.Range.Index(ip)
		if idx < 16 {
			t.Fatalf("allocation %d gave %s from the static band while the dynamic band had room", i, ip)
		}
		if _, dup := kv[a.Key(ip)]; dup {
			t.Fatalf("allocation %d gave %s twice", i, ip)
		}
		kv[a.Key(ip)] = "x"
	}
	ip, err := a.Next(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if idx, _ := a.Range.Index(ip); idx >= 16 {
		t.Fatalf("with the dynamic band full, got %s, want one of the static band", ip)
	}
}

func TestNextUntilExhaustion(t *testing.T) {
	kv := memKV{}
	a := NewPorts(mustPortRange(t, "30000-30019"), kv) // 20 ports, 16 static
	a.Rand = rand.New(rand.NewPCG(3, 4))
	seen := map[string]bool{}
	for i := 0; i < 20; i++ {
		port, err := a.Next(context.Background(), nil)
		if err != nil {
			t.Fatalf("allocation %d: %v", i, err)
		}
		if seen[port] {
			t.Fatalf("allocation %d gave %s twice", i, port)
		}
		seen[port] = true
		kv[a.Key(port)] = "x"
	}
	if _, err := a.Next(context.Background(), nil); !errors.Is(err, ErrFull) {
		t.Fatalf("Next on a full range = %v, want ErrFull", err)
	}
	delete(kv, a.Key("30007"))
	if port, err := a.Next(context.Background(), nil); err != nil || port != "30007" {
		t.Fatalf("after freeing 30007, Next = %s, %v", port, err)
	}
}

func TestNextSkipsItemsPickedForTheSameRequest(t *testing.T) {
	a := NewPorts(mustPortRange(t, "30000-30001"), memKV{})
	first, err := a.Next(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	second, err := a.Next(context.Background(), map[string]bool{first: true})
	if err != nil || second == first {
		t.Fatalf("second pick = %s, %v; want the other port than %s", second, err, first)
	}
	if _, err := a.Next(context.Background(), map[string]bool{first: true, second: true}); !errors.Is(err, ErrFull) {
		t.Fatalf("third pick = %v, want ErrFull", err)
	}
}

func TestPlanRepair(t *testing.T) {
	tests := []struct {
		name     string
		held     map[string][]string
		recorded map[string]string
		want     RepairPlan
	}{
		{
			name:     "allocations that match the services need nothing",
			held:     map[string][]string{"ip/1": {"default/a"}, "port/1": {"default/a"}},
			recorded: map[string]string{"ip/1": "default/a", "port/1": "default/a"},
			want:     RepairPlan{Create: map[string]string{}, Fix: map[string]string{}, Duplicates: map[string][]string{}},
		},
		{
			name:     "a leaked allocation, held by no service after a restart, is freed",
			held:     map[string][]string{"ip/1": {"default/a"}},
			recorded: map[string]string{"ip/1": "default/a", "ip/2": "default/gone"},
			want:     RepairPlan{Create: map[string]string{}, Delete: []string{"ip/2"}, Fix: map[string]string{}, Duplicates: map[string][]string{}},
		},
		{
			name:     "an item a service holds without a record is recorded",
			held:     map[string][]string{"ip/1": {"default/a"}},
			recorded: map[string]string{},
			want:     RepairPlan{Create: map[string]string{"ip/1": "default/a"}, Fix: map[string]string{}, Duplicates: map[string][]string{}},
		},
		{
			name:     "a record naming another owner is rewritten",
			held:     map[string][]string{"ip/1": {"default/b"}},
			recorded: map[string]string{"ip/1": "default/a"},
			want:     RepairPlan{Create: map[string]string{}, Fix: map[string]string{"ip/1": "default/b"}, Duplicates: map[string][]string{}},
		},
		{
			name:     "an item held twice is reported, its record kept",
			held:     map[string][]string{"ip/1": {"default/b", "default/a"}},
			recorded: map[string]string{"ip/1": "default/b"},
			want: RepairPlan{Create: map[string]string{}, Fix: map[string]string{},
				Duplicates: map[string][]string{"ip/1": {"default/a", "default/b"}}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := PlanRepair(tc.held, tc.recorded)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("PlanRepair = %+v\nwant %+v", got, tc.want)
			}
		})
	}
}
