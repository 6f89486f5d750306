package endpoints

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"

	. "minik/controller/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

var (
	t1 = T0.Add(time.Second)
	t2 = T0.Add(2 * time.Second)
)

func webPod(name, ip string) *PodBuilder {
	return Pod(name).Label("app", "web").Node("n1").IP(ip).ContainerPort("http", 8080)
}

func TestPlan(t *testing.T) {
	web := Service("web").Selector("app", "web").Label("app", "web").Port("http", 80, 8080).Obj()
	ready := func(name, ip string) *corev1.Pod { return webPod(name, ip).Ready(t1).Obj() }
	// steps: each sync's pods; the Endpoints written by one is the next one's Current.
	cases := []struct {
		name  string
		svc   *corev1.Service
		steps [][]*corev1.Pod
	}{
		{"ready pods are addresses, not-ready ones notReadyAddresses, a pod without IP or finished is left out", web,
			[][]*corev1.Pod{{ready("a", "10.0.0.2"), ready("b", "10.0.0.10"), webPod("c", "10.0.0.3").NotReady(t2).Obj(),
				Pod("no-ip").Label("app", "web").Ready(t1).Obj(), webPod("done", "10.0.0.4").Phase(corev1.PodFailed).Obj()}}},
		{"a readiness flip moves the address, and an unchanged sync writes nothing", web,
			[][]*corev1.Pod{{ready("a", "10.0.0.1"), ready("b", "10.0.0.2")},
				{ready("a", "10.0.0.1"), webPod("b", "10.0.0.2").NotReady(t2).Obj()},
				{ready("a", "10.0.0.1"), webPod("b", "10.0.0.2").NotReady(t2).Obj()}}},
		{"a terminating pod leaves the Endpoints", web,
			[][]*corev1.Pod{{ready("a", "10.0.0.1"), webPod("b", "10.0.0.2").Ready(t1).Deleting().Obj()}}},
		{"publishNotReadyAddresses lists not-ready and terminating pods as ready", Service("web").Selector("app", "web").Port("http", 80, 8080).PublishNotReady().Obj(),
			[][]*corev1.Pod{{webPod("a", "10.0.0.1").NotReady(t1).Obj(), webPod("b", "10.0.0.2").Ready(t1).Deleting().Obj()}}},
		{"pods whose named port resolves differently, or not at all, go in different subsets",
			Service("web").Selector("app", "web").NamedPort("http", 80, "http").Port("metrics", 9090, 9090).Obj(),
			[][]*corev1.Pod{{ready("a", "10.0.0.1"), Pod("b").Label("app", "web").Node("n1").IP("10.0.0.2").ContainerPort("http", 8081).Ready(t1).Obj(),
				Pod("c").Label("app", "web").Node("n1").IP("10.0.0.3").Ready(t1).Obj()}}},
		{"a headless Service without ports lists its pods with no ports, hostnames for its subdomain",
			Service("db").Selector("app", "web").Headless().Obj(),
			[][]*corev1.Pod{{webPod("a", "10.0.0.1").Hostname("db-0", "db").Ready(t1).Obj(), ready("b", "10.0.0.2")}}},
		{"a pod relabeled out of the selector leaves the Endpoints", web,
			[][]*corev1.Pod{{ready("a", "10.0.0.1"), ready("b", "10.0.0.2")}, {ready("a", "10.0.0.1")}}},
		{"a Service without pods gets an Endpoints without subsets", web, [][]*corev1.Pod{{}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var cur *corev1.Endpoints
			var out strings.Builder
			for i, pods := range tc.steps {
				p := Plan(Input{Service: tc.svc, Pods: pods, Current: cur, TriggerTime: T0.Add(time.Duration(i) * time.Minute)})
				fmt.Fprintf(&out, "# step %d: %d pods\n", i+1, len(pods))
				if len(p.Actions) > 1 {
					t.Fatalf("step %d writes %d times: %v", i+1, len(p.Actions), p.Actions)
				}
				for _, a := range p.Actions {
					switch a.Type {
					case CreateEndpoints:
						out.WriteString("create:\n" + indent(a.Endpoints))
					case UpdateEndpoints:
						out.WriteString("update:\n" + indent(a.Endpoints))
					default:
						t.Fatalf("step %d: %v", i+1, a)
					}
					cur = a.Endpoints
				}
			}
			golden(t, tc.name, out.String())
		})
	}
}

// only returns the Endpoints of p's one action of type t, failing the
// test if p is anything else.
func only(t *testing.T, p Output, typ ActionType) *corev1.Endpoints {
	t.Helper()
	if len(p.Actions) != 1 || p.Actions[0].Type != typ {
		t.Fatalf("plan %v, want one %s", p.Actions, typ)
	}
	return p.Actions[0].Endpoints
}

func TestReconcileDeletesTheEndpointsOfADeletedService(t *testing.T) {
	cur := only(t, Plan(Input{Service: Service("web").Selector("app", "web").Obj()}), CreateEndpoints)
	if del := only(t, Plan(Input{Current: cur}), DeleteEndpoints); del != cur {
		t.Fatalf("deletes %v, want the Endpoints of the Service", del)
	}
	if p := Plan(Input{}); len(p.Actions) != 0 || p.RequeueAfter != 0 {
		t.Fatalf("plan %+v with neither Service nor Endpoints, want nothing", p)
	}
}

func TestReconcileTruncatesAtCapacity(t *testing.T) {
	web := Service("web").Selector("app", "web").Port("http", 80, 8080).Obj()
	pods := func(ready, notReady int) []*corev1.Pod {
		var out []*corev1.Pod
		for i := range ready + notReady {
			b := webPod(fmt.Sprintf("p%04d", i), fmt.Sprintf("10.1.%d.%d", i/250, i%250+1))
			if i < ready {
				b.Ready(t1)
			} else {
				b.NotReady(t1)
			}
			out = append(out, b.Obj())
		}
		return out
	}
	count := func(ep *corev1.Endpoints) (ready, notReady int) {
		for _, s := range ep.Subsets {
			ready += len(s.Addresses)
			notReady += len(s.NotReadyAddresses)
		}
		return ready, notReady
	}
	cases := []struct {
		name                  string
		ready, notReady       int
		wantReady, wantNotRdy int
		truncated             bool
	}{
		{"1000 addresses fit without the annotation", 600, 400, 600, 400, false},
		{"over capacity, not-ready addresses are cut first", 900, 300, 900, 100, true},
		{"over capacity with more than 1000 ready, only ready addresses are kept", 1200, 50, 1000, 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ep := only(t, Plan(Input{Service: web, Pods: pods(tc.ready, tc.notReady)}), CreateEndpoints)
			r, n := count(ep)
			if r != tc.wantReady || n != tc.wantNotRdy {
				t.Errorf("%d ready, %d not ready; want %d, %d", r, n, tc.wantReady, tc.wantNotRdy)
			}
			if got := ep.Annotations[corev1.EndpointsOverCapacity] == Truncated; got != tc.truncated {
				t.Errorf("annotation %q, want truncated=%v", ep.Annotations[corev1.EndpointsOverCapacity], tc.truncated)
			}
			if again := Plan(Input{Service: web, Pods: pods(tc.ready, tc.notReady), Current: ep}); len(again.Actions) != 0 {
				t.Errorf("a second sync writes again: %v", again.Actions)
			}
			if tc.truncated {
				fewer := only(t, Plan(Input{Service: web, Pods: pods(10, 0), Current: ep}), UpdateEndpoints)
				if _, ok := fewer.Annotations[corev1.EndpointsOverCapacity]; ok {
					t.Errorf("the annotation stays once back under capacity")
				}
			}
		})
	}
}

func indent(ep *corev1.Endpoints) string {
	b, err := yaml.Marshal(ep)
	if err != nil {
		panic(err)
	}
	return "  " + strings.ReplaceAll(strings.TrimRight(string(b), "\n"), "\n", "\n  ") + "\n"
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

func TestRepack(t *testing.T) {
	addr := func(ip string) corev1.EndpointAddress { return corev1.EndpointAddress{IP: ip} }
	port := func(name string, n int32) corev1.EndpointPort {
		return corev1.EndpointPort{Name: name, Port: n, Protocol: corev1.ProtocolTCP}
	}
	cases := []struct {
		name string
		in   []corev1.EndpointSubset
		want []corev1.EndpointSubset
	}{
		{"subsets with the same ports merge, addresses sorted numerically",
			[]corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{addr("10.0.0.10")}, Ports: []corev1.EndpointPort{port("a", 80)}},
				{Addresses: []corev1.EndpointAddress{addr("10.0.0.9")}, Ports: []corev1.EndpointPort{port("a", 80)}}},
			[]corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{addr("10.0.0.9"), addr("10.0.0.10")}, Ports: []corev1.EndpointPort{port("a", 80)}}}},
		{"an address not ready in one subset is not ready for that port",
			[]corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{addr("10.0.0.1")}, Ports: []corev1.EndpointPort{port("a", 80)}},
				{NotReadyAddresses: []corev1.EndpointAddress{addr("10.0.0.1")}, Ports: []corev1.EndpointPort{port("a", 80)}}},
			[]corev1.EndpointSubset{{NotReadyAddresses: []corev1.EndpointAddress{addr("10.0.0.1")}, Ports: []corev1.EndpointPort{port("a", 80)}}}},
		{"ports served by the same addresses share a subset, others split",
			[]corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{addr("10.0.0.1"), addr("10.0.0.2")}, Ports: []corev1.EndpointPort{port("b", 81), port("a", 80)}},
				{Addresses: []corev1.EndpointAddress{addr("10.0.0.3")}, Ports: []corev1.EndpointPort{port("a", 80)}}},
			[]corev1.EndpointSubset{
				{Addresses: []corev1.EndpointAddress{addr("10.0.0.1"), addr("10.0.0.2"), addr("10.0.0.3")}, Ports: []corev1.EndpointPort{port("a", 80)}},
				{Addresses: []corev1.EndpointAddress{addr("10.0.0.1"), addr("10.0.0.2")}, Ports: []corev1.EndpointPort{port("b", 81)}}}},
		{"addresses without ports are kept", []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{addr("10.0.0.1")}}},
			[]corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{addr("10.0.0.1")}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Repack(tc.in); !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("Repack:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}
