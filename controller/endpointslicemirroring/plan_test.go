package endpointslicemirroring

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"minik/controller/internal/svcutil"
	. "minik/controller/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func makeEndpoints(name string, subsets ...corev1.EndpointSubset) *corev1.Endpoints {
	return &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-ep-" + name),
		Labels: map[string]string{"team": "db"}, Annotations: map[string]string{"note": "external",
			corev1.EndpointsLastChangeTriggerTime: "2026-01-01T12:00:00Z"}}, Subsets: subsets}
}

func subset(ready, notReady []string, ports ...int32) corev1.EndpointSubset {
	var s corev1.EndpointSubset
	for _, ip := range ready {
		s.Addresses = append(s.Addresses, corev1.EndpointAddress{IP: ip})
	}
	for _, ip := range notReady {
		s.NotReadyAddresses = append(s.NotReadyAddresses, corev1.EndpointAddress{IP: ip})
	}
	for _, p := range ports {
		s.Ports = append(s.Ports, corev1.EndpointPort{Name: "p" + strconv.Itoa(int(p)), Port: p, Protocol: corev1.ProtocolTCP})
	}
	return s
}

// store plays the apiserver between syncs: created slices get names
// <name>-1, -2...
type store struct {
	slices map[string]*discoveryv1.EndpointSlice
	n      int
}

func (st *store) apply(p Output) {
	for _, a := range p.Actions {
		switch a.Type {
		case svcutil.DeleteSlice:
			delete(st.slices, a.Slice.Name)
		case svcutil.UpdateSlice:
			st.slices[a.Slice.Name] = a.Slice.DeepCopy()
		case svcutil.CreateSlice:
			st.n++
			s := a.Slice.DeepCopy()
			s.Name = s.GenerateName + strconv.Itoa(st.n)
			st.slices[s.Name] = s
		}
	}
}

// warned returns the message of p's Warning event with reason, or "".
func warned(p Output, reason string) string {
	for _, a := range p.Actions {
		if a.Type == svcutil.Warn && a.Reason == reason {
			return a.Message
		}
	}
	return ""
}

func TestPlan(t *testing.T) {
	external := Service("db").NoSelector().Obj()
	type step struct {
		ep  *corev1.Endpoints
		svc *corev1.Service
	}
	withLabel := func(ep *corev1.Endpoints, k, v string) *corev1.Endpoints { ep.Labels[k] = v; return ep }
	cases := []struct {
		name  string
		steps []step
		check func(t *testing.T, plans []Output)
	}{
		{"a selectorless Service's Endpoints become one slice per subset, ready and not ready, with its labels and annotations",
			[]step{{makeEndpoints("db", subset([]string{"192.0.2.10", "192.0.2.9"}, []string{"192.0.2.11"}, 5432)), external}}, nil},
		{"IPv4 and IPv6 addresses go in slices of their address type; an address that is no IP is skipped",
			[]step{{makeEndpoints("db", subset([]string{"192.0.2.10", "2001:db8::1", "db.example.com"}, nil, 5432)), external}},
			func(t *testing.T, plans []Output) {
				if got, want := warned(plans[0], ReasonInvalidIPAddress), "Skipped 1 invalid IP addresses when mirroring to EndpointSlices"; got != want {
					t.Errorf("InvalidIPAddress event %q, want %q", got, want)
				}
			}},
		{"a changed address updates the slice in place; an unchanged sync writes nothing",
			[]step{{makeEndpoints("db", subset([]string{"192.0.2.10"}, nil, 5432)), external},
				{makeEndpoints("db", subset([]string{"192.0.2.10", "192.0.2.12"}, nil, 5432)), external},
				{makeEndpoints("db", subset([]string{"192.0.2.10", "192.0.2.12"}, nil, 5432)), external}}, nil},
		{"new ports replace the slice through an update",
			[]step{{makeEndpoints("db", subset([]string{"192.0.2.10"}, nil, 5432)), external},
				{makeEndpoints("db", subset([]string{"192.0.2.10"}, nil, 5433)), external}}, nil},
		{"a Service that gains a selector, or goes, loses the mirrored slices",
			[]step{{makeEndpoints("db", subset([]string{"192.0.2.10"}, nil, 5432)), external},
				{makeEndpoints("db", subset([]string{"192.0.2.10"}, nil, 5432)), Service("db").Selector("app", "db").Obj()}}, nil},
		{"Endpoints without a Service are not mirrored",
			[]step{{makeEndpoints("db", subset([]string{"192.0.2.10"}, nil, 5432)), nil}}, nil},
		{"Endpoints marked skip-mirror are not mirrored",
			[]step{{withLabel(makeEndpoints("db", subset([]string{"192.0.2.10"}, nil, 5432)), discoveryv1.LabelSkipMirror, "true"), external}}, nil},
		{"at most 1000 addresses of a subset are mirrored, ready ones first",
			[]step{{makeEndpoints("db", subset(ips(990, 0), ips(20, 1000), 5432)), external}},
			func(t *testing.T, plans []Output) {
				want := "A max of 1000 addresses can be mirrored to EndpointSlices per Endpoints subset. 10 addresses were skipped"
				if got := warned(plans[0], ReasonTooManyAddressesToMirror); got != want {
					t.Errorf("TooManyAddressesToMirror event %q, want %q", got, want)
				}
				var sizes []int
				for _, a := range plans[0].Actions {
					if a.Type == svcutil.CreateSlice {
						sizes = append(sizes, len(a.Slice.Endpoints))
					}
				}
				if !slices.Equal(sizes, []int{1000}) {
					t.Errorf("created slices of %v endpoints, want one slice of 1000", sizes)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := &store{slices: map[string]*discoveryv1.EndpointSlice{}}
			var out strings.Builder
			var plans []Output
			for i, s := range tc.steps {
				p := Plan(Input{Endpoints: s.ep, Service: s.svc, Slices: slices.Collect(maps.Values(st.slices))})
				plans = append(plans, p)
				fmt.Fprintf(&out, "# step %d\n%s", i+1, render(p))
				st.apply(p)
			}
			golden(t, tc.name, out.String())
			if tc.check != nil {
				tc.check(t, plans)
			}
		})
	}
}

func ips(n, from int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("10.1.%d.%d", (from+i)/250, (from+i)%250+1)
	}
	return out
}

func render(p Output) string {
	var b strings.Builder
	one := func(verb string, s *discoveryv1.EndpointSlice) {
		if len(s.Endpoints) > 6 {
			s = s.DeepCopy()
			n := len(s.Endpoints)
			s.Endpoints = s.Endpoints[:2]
			fmt.Fprintf(&b, "%s (%d endpoints, the first 2 shown):\n", verb, n)
		} else {
			fmt.Fprintf(&b, "%s:\n", verb)
		}
		y, err := yaml.Marshal(s)
		if err != nil {
			panic(err)
		}
		b.WriteString("  " + strings.ReplaceAll(strings.TrimRight(string(y), "\n"), "\n", "\n  ") + "\n")
	}
	for _, a := range p.Actions {
		switch a.Type {
		case svcutil.Warn:
			fmt.Fprintf(&b, "warning %s: %s\n", a.Reason, a.Message)
		case svcutil.CreateSlice:
			one("create", a.Slice)
		case svcutil.UpdateSlice:
			one("update", a.Slice)
		case svcutil.DeleteSlice:
			fmt.Fprintf(&b, "delete %s\n", a.Slice.Name)
		}
	}
	return b.String()
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(name), "-")+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("plan differs from %s:\n--- got\n%s--- want\n%s", path, got, want)
	}
}
