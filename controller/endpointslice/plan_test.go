package endpointslice

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
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/controller/internal/svcutil"
	. "minik/controller/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// step is one sync: the pods (and Service, if it changed) it sees.
type step struct {
	svc  *corev1.Service
	pods []*corev1.Pod
}

// cluster plays the apiserver for a sequence of plans: it names created
// slices <service>-1, -2... and keeps the slices between steps.
type cluster struct {
	slices map[string]*discoveryv1.EndpointSlice
	n, rv  int
}

func (c *cluster) apply(p Output) {
	for _, a := range p.Actions {
		s := a.Slice.DeepCopy()
		switch a.Type {
		case svcutil.DeleteSlice:
			delete(c.slices, s.Name)
			continue
		case svcutil.CreateSlice:
			c.n++
			s.Name = s.GenerateName + strconv.Itoa(c.n)
		}
		c.rv++
		s.ResourceVersion = strconv.Itoa(c.rv)
		c.slices[s.Name] = s
	}
}

// count is how many actions of p are of type t.
func count(p Output, t ActionType) int {
	n := 0
	for _, a := range p.Actions {
		if a.Type == t {
			n++
		}
	}
	return n
}

func (c *cluster) list() []*discoveryv1.EndpointSlice { return slices.Collect(maps.Values(c.slices)) }

func pods(n int, mk func(i int) *corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, n)
	for i := range out {
		out[i] = mk(i)
	}
	return out
}

func webPod(name, ip string) *PodBuilder {
	return Pod(name).Label("app", "web").Node("n1").IP(ip).ContainerPort("http", 8080)
}

var (
	t1 = T0.Add(time.Second)
	t2 = T0.Add(2 * time.Second)
)

func TestPlan(t *testing.T) {
	web := Service("web").Selector("app", "web").Port("http", 80, 8080).Obj()
	nodes := map[string]*corev1.Node{
		"n1": Node("n1").Label(corev1.LabelTopologyZone, "zone-a").Obj(),
		"n2": Node("n2").Obj(),
	}
	ready := func(name, ip string) *corev1.Pod { return webPod(name, ip).Ready(t1).Obj() }
	many := func(n int) []*corev1.Pod {
		return pods(n, func(i int) *corev1.Pod {
			return ready(fmt.Sprintf("p%03d", i), fmt.Sprintf("10.0.%d.%d", i/200, i%200+1))
		})
	}
	cases := []struct {
		name  string
		svc   *corev1.Service
		steps []step
		check func(t *testing.T, plans []Output, final []*discoveryv1.EndpointSlice)
	}{
		{name: "a Service's ready pods make one slice with their IPs, nodes, zones and resolved ports",
			svc: web, steps: []step{{pods: []*corev1.Pod{ready("a", "10.0.0.1"), webPod("b", "10.0.0.2").Node("n2").Ready(t2).Obj()}}}},
		{name: "pods without IP, finished pods and pods on a node not known yet are left out",
			svc: web, steps: []step{{pods: []*corev1.Pod{ready("a", "10.0.0.1"), Pod("no-ip").Label("app", "web").Node("n1").Ready(t1).Obj(),
				webPod("done", "10.0.0.3").Phase(corev1.PodSucceeded).Obj(), webPod("lost", "10.0.0.4").Node("n9").Ready(t1).Obj()}}},
			check: func(t *testing.T, plans []Output, final []*discoveryv1.EndpointSlice) {
				if len(final) != 1 || len(final[0].Endpoints) != 1 || final[0].Endpoints[0].TargetRef.Name != "a" {
					t.Errorf("final slices %v, want one listing only a", final)
				}
			}},
		{name: "a pod turning not ready stays in its slice, not ready and not serving, updated in place",
			svc: web, steps: []step{
				{pods: []*corev1.Pod{ready("a", "10.0.0.1"), ready("b", "10.0.0.2")}},
				{pods: []*corev1.Pod{ready("a", "10.0.0.1"), webPod("b", "10.0.0.2").NotReady(t2).Obj()}},
				{pods: []*corev1.Pod{ready("a", "10.0.0.1"), webPod("b", "10.0.0.2").Ready(t2.Add(time.Second)).Obj()}}}},
		{name: "a terminating pod is kept while it drains: not ready, serving while its readiness lasts, terminating",
			svc: web, steps: []step{
				{pods: []*corev1.Pod{ready("a", "10.0.0.1"), ready("b", "10.0.0.2")}},
				{pods: []*corev1.Pod{ready("a", "10.0.0.1"), webPod("b", "10.0.0.2").Ready(t1).Deleting().Obj()}},
				{pods: []*corev1.Pod{ready("a", "10.0.0.1"), webPod("b", "10.0.0.2").NotReady(t2).Deleting().Obj()}},
				{pods: []*corev1.Pod{ready("a", "10.0.0.1")}}}},
		{name: "publishNotReadyAddresses makes not-ready and terminating pods ready",
			svc:   Service("web").Selector("app", "web").Port("http", 80, 8080).PublishNotReady().Obj(),
			steps: []step{{pods: []*corev1.Pod{webPod("a", "10.0.0.1").NotReady(t1).Obj(), webPod("b", "10.0.0.2").Ready(t1).Deleting().Obj()}}}},
		{name: "a named targetPort resolving to different numbers splits the pods into one slice per port number",
			svc: Service("web").Selector("app", "web").NamedPort("http", 80, "http").Port("metrics", 9090, 9090).Obj(),
			steps: []step{{pods: []*corev1.Pod{ready("a", "10.0.0.1"), ready("b", "10.0.0.2"),
				Pod("c").Label("app", "web").Node("n1").IP("10.0.0.3").ContainerPort("http", 8081).Ready(t1).Obj(),
				Pod("d").Label("app", "web").Node("n1").IP("10.0.0.4").Ready(t1).Obj()}}}},
		{name: "250 endpoints make three slices of at most 100, and an unchanged sync writes nothing",
			svc: web, steps: []step{{pods: many(250)}, {pods: many(250)}},
			check: func(t *testing.T, plans []Output, final []*discoveryv1.EndpointSlice) {
				if n := count(plans[0], svcutil.CreateSlice); n != 3 {
					t.Errorf("created %d slices, want 3", n)
				}
				for _, s := range final {
					if len(s.Endpoints) > 100 {
						t.Errorf("slice %s has %d endpoints", s.Name, len(s.Endpoints))
					}
				}
				if p := plans[1]; len(p.Actions) != 0 {
					t.Errorf("second sync wrote %v", p.Actions)
				}
			}},
		{name: "new endpoints fill the existing slice closest to full before any new slice is made",
			svc: web, steps: []step{{pods: many(150)}, {pods: many(190)}, {pods: many(201)}},
			check: func(t *testing.T, plans []Output, final []*discoveryv1.EndpointSlice) {
				if p := plans[1]; count(p, svcutil.CreateSlice) != 0 || count(p, svcutil.UpdateSlice) != 1 {
					t.Errorf("150→190: %v; want 1 update", p.Actions)
				}
				if p := plans[2]; count(p, svcutil.CreateSlice) != 1 || count(p, svcutil.UpdateSlice) != 0 {
					t.Errorf("190→201: %v; want 1 create (the full slices stay as they are)", p.Actions)
				}
				if n := countEndpoints(final); n != 201 {
					t.Errorf("%d endpoints in all, want 201", n)
				}
			}},
		{name: "removed endpoints leave their slices in place, an emptied slice is deleted",
			svc: web, steps: []step{{pods: many(150)}, {pods: many(150)[:90]}, {pods: many(150)[:5]}},
			check: func(t *testing.T, plans []Output, final []*discoveryv1.EndpointSlice) {
				if p := plans[1]; count(p, svcutil.DeleteSlice) != 1 || count(p, svcutil.UpdateSlice) != 1 || count(p, svcutil.CreateSlice) != 0 {
					t.Errorf("150→90: %v; want 1 update, 1 delete", p.Actions)
				}
				if len(final) != 1 || countEndpoints(final) != 5 {
					t.Errorf("final: %d slices with %d endpoints, want 1 with 5", len(final), countEndpoints(final))
				}
			}},
		{name: "a headless Service without ports gets a slice without ports and the headless label",
			svc:   Service("db").Selector("app", "web").Headless().Obj(),
			steps: []step{{pods: []*corev1.Pod{ready("a", "10.0.0.1")}}}},
		{name: "the hostname is set only for pods whose subdomain is the Service",
			svc: Service("db").Selector("app", "web").Headless().Port("pg", 5432, 5432).Obj(),
			steps: []step{{pods: []*corev1.Pod{webPod("a", "10.0.0.1").Hostname("db-0", "db").Ready(t1).Obj(),
				webPod("b", "10.0.0.2").Hostname("other-0", "other").Ready(t1).Obj()}}}},
		{name: "a pod relabeled out of the selector leaves the slice; a selector change swaps the endpoints",
			svc: web, steps: []step{
				{pods: []*corev1.Pod{ready("a", "10.0.0.1"), ready("b", "10.0.0.2")}},
				{pods: []*corev1.Pod{ready("a", "10.0.0.1")}},
				{svc: Service("web").Selector("app", "api").Port("http", 80, 8080).Obj(),
					pods: []*corev1.Pod{Pod("x").Label("app", "api").Node("n1").IP("10.0.1.1").Ready(t2).Obj()}}}},
		{name: "a Service without endpoints gets one placeholder slice, kept as it is, then filled",
			svc: web, steps: []step{{}, {}, {pods: []*corev1.Pod{ready("a", "10.0.0.1")}}, {}}},
		{name: "a slice of an older Service of the same name is replaced",
			svc: web, steps: []step{
				{pods: []*corev1.Pod{ready("a", "10.0.0.1")}},
				{svc: func() *corev1.Service { s := web.DeepCopy(); s.UID = "uid-web-2"; return s }(),
					pods: []*corev1.Pod{ready("a", "10.0.0.1")}}}},
		{name: "a new label on the Service relabels every slice",
			svc: web, steps: []step{
				{pods: many(120)},
				{svc: Service("web").Selector("app", "web").Port("http", 80, 8080).Label("tier", "front").Obj(), pods: many(120)}}},
		{name: "a Service being deleted gets no new slice",
			svc: func() *corev1.Service {
				s := web.DeepCopy()
				now := metav1.NewTime(T0)
				s.DeletionTimestamp = &now
				return s
			}(), steps: []step{{pods: []*corev1.Pod{ready("a", "10.0.0.1")}}},
			check: func(t *testing.T, plans []Output, _ []*discoveryv1.EndpointSlice) {
				if n := count(plans[0], svcutil.CreateSlice); n != 0 {
					t.Errorf("created %d slices", n)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &cluster{slices: map[string]*discoveryv1.EndpointSlice{}}
			svc := tc.svc
			var out strings.Builder
			var plans []Output
			for i, st := range tc.steps {
				if st.svc != nil {
					svc = st.svc
				}
				trigger := T0.Add(time.Duration(i) * time.Minute)
				missing := map[string]bool{} // the nodes of the pods left out
				p := Plan(Input{Service: svc, Pods: st.pods, Slices: c.list(), TriggerTime: trigger,
					Node: func(name string) *corev1.Node {
						if nodes[name] == nil {
							missing[name] = true
						}
						return nodes[name]
					}})
				plans = append(plans, p)
				fmt.Fprintf(&out, "# step %d: %d pods\n%s", i+1, len(st.pods), render(p))
				if len(missing) > 0 {
					fmt.Fprintf(&out, "missing nodes %v\n", slices.Sorted(maps.Keys(missing)))
				}
				c.apply(p)
				checkInvariants(t, svc, c.list())
			}
			golden(t, tc.name, out.String())
			if tc.check != nil {
				tc.check(t, plans, c.list())
			}
		})
	}
}

// checkInvariants holds after every step: every pod endpoint is listed
// once, each slice holds at most 100, and the slices carry the Service's
// labels and owner.
func checkInvariants(t *testing.T, svc *corev1.Service, ss []*discoveryv1.EndpointSlice) {
	t.Helper()
	seen := map[string]bool{}
	for _, s := range ss {
		if len(s.Endpoints) > DefaultMaxEndpointsPerSlice {
			t.Errorf("slice %s has %d endpoints", s.Name, len(s.Endpoints))
		}
		if s.Labels[discoveryv1.LabelServiceName] != svc.Name || s.Labels[discoveryv1.LabelManagedBy] != ControllerName {
			t.Errorf("slice %s labels %v", s.Name, s.Labels)
		}
		if !ownedBy(s, svc) {
			t.Errorf("slice %s not owned by the Service: %v", s.Name, s.OwnerReferences)
		}
		for _, ep := range s.Endpoints {
			k := endpointKey(&ep)
			if seen[k] {
				t.Errorf("endpoint %s listed twice", k)
			}
			seen[k] = true
		}
	}
}

func countEndpoints(ss []*discoveryv1.EndpointSlice) int {
	n := 0
	for _, s := range ss {
		n += len(s.Endpoints)
	}
	return n
}

// render prints a plan for the golden files: a slice with up to 6
// endpoints in full, a larger one summed up.
func render(p Output) string {
	var b strings.Builder
	one := func(verb string, s *discoveryv1.EndpointSlice) {
		name := s.Name
		if name == "" {
			name = s.GenerateName + "*"
		}
		var ports []string
		for _, pt := range s.Ports {
			ports = append(ports, fmt.Sprintf("%s/%s/%d", deref(pt.Name), deref(pt.Protocol), derefInt(pt.Port)))
		}
		var labels []string
		for _, k := range slices.Sorted(maps.Keys(s.Labels)) {
			labels = append(labels, k+"="+s.Labels[k])
		}
		fmt.Fprintf(&b, "%s %s ports=[%s] endpoints=%d trigger=%s\n  labels %s\n", verb, name, strings.Join(ports, " "),
			len(s.Endpoints), s.Annotations[corev1.EndpointsLastChangeTriggerTime], strings.Join(labels, " "))
		if len(s.Endpoints) > 6 {
			fmt.Fprintf(&b, "  %s .. %s\n", s.Endpoints[0].TargetRef.Name, s.Endpoints[len(s.Endpoints)-1].TargetRef.Name)
			return
		}
		for _, ep := range s.Endpoints {
			c := ep.Conditions
			fmt.Fprintf(&b, "  %s %s node=%s zone=%s hostname=%s ready=%v serving=%v terminating=%v\n", ep.TargetRef.Name,
				strings.Join(ep.Addresses, ","), deref(ep.NodeName), deref(ep.Zone), deref(ep.Hostname), *c.Ready, *c.Serving, *c.Terminating)
		}
	}
	verb := map[ActionType]string{svcutil.CreateSlice: "create", svcutil.UpdateSlice: "update"}
	for _, a := range p.Actions {
		if a.Type == svcutil.DeleteSlice {
			fmt.Fprintf(&b, "delete %s\n", a.Slice.Name)
		} else {
			one(verb[a.Type], a.Slice)
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
