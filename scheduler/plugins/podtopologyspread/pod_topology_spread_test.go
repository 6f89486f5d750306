package podtopologyspread

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/scheduler/internal/st"
)

func TestFilter(t *testing.T) {
	nodes := []*corev1.Node{
		st.MakeNode().Name("a1").Label("zone", "a").Obj(),
		st.MakeNode().Name("a2").Label("zone", "a").Obj(),
		st.MakeNode().Name("b1").Label("zone", "b").Obj(),
		st.MakeNode().Name("nozone").Obj(),
	}
	web := func(name, node string) *corev1.Pod {
		return st.MakePod().Name(name).Label("app", "web").Node(node).Obj()
	}
	cases := []struct {
		name     string
		existing []*corev1.Pod
		pod      *corev1.Pod
		want     map[string]string
	}{
		{"with zone a ahead by one, maxSkew 1 allows only zone b",
			[]*corev1.Pod{web("w1", "a1")}, st.MakePod().Label("app", "web").Spread(1, "zone", corev1.DoNotSchedule, "app", "web").Obj(),
			map[string]string{"a1": ErrReasonConstraintsNotMatch, "a2": ErrReasonConstraintsNotMatch, "b1": "", "nozone": ErrReasonNodeLabelNotMatch}},
		{"maxSkew 2 allows the fuller zone too",
			[]*corev1.Pod{web("w1", "a1")}, st.MakePod().Label("app", "web").Spread(2, "zone", corev1.DoNotSchedule, "app", "web").Obj(),
			map[string]string{"a1": "", "b1": ""}},
		{"a pod that does not match its own selector does not add to the skew",
			[]*corev1.Pod{web("w1", "a1")}, st.MakePod().Label("app", "other").Spread(1, "zone", corev1.DoNotSchedule, "app", "web").Obj(),
			map[string]string{"a1": "", "b1": ""}},
		{"terminating pods do not count",
			[]*corev1.Pod{st.MakePod().Name("w1").Label("app", "web").Node("a1").Terminating().Obj()},
			st.MakePod().Label("app", "web").Spread(1, "zone", corev1.DoNotSchedule, "app", "web").Obj(),
			map[string]string{"a1": "", "b1": ""}},
		{"ScheduleAnyway constraints do not filter",
			[]*corev1.Pod{web("w1", "a1"), web("w2", "a2")}, st.MakePod().Label("app", "web").Spread(1, "zone", corev1.ScheduleAnyway, "app", "web").Obj(),
			map[string]string{"a1": "", "nozone": ""}},
		{"nodes excluded by the nodeSelector are not domains",
			[]*corev1.Pod{web("w1", "a1")},
			st.MakePod().Label("app", "web").NodeSelector("zone", "a").Spread(1, "zone", corev1.DoNotSchedule, "app", "web").Obj(),
			map[string]string{"a2": ""}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			snap := st.NewSnapshot(nodes, tc.existing)
			for node, reason := range tc.want {
				if got := st.Filter(New(), tc.pod, snap, node); got.Message() != reason {
					t.Errorf("node %s: got %v, want %q", node, got, reason)
				}
			}
		})
	}
}

func TestScore(t *testing.T) {
	nodes := []*corev1.Node{
		st.MakeNode().Name("a1").Label("zone", "a").Obj(),
		st.MakeNode().Name("b1").Label("zone", "b").Obj(),
		st.MakeNode().Name("c1").Label("zone", "c").Obj(),
	}
	pods := []*corev1.Pod{
		st.MakePod().Name("w1").Label("app", "web").Node("a1").Owner("rs1").Obj(),
		st.MakePod().Name("w2").Label("app", "web").Node("a1").Owner("rs1").Obj(),
		st.MakePod().Name("w3").Label("app", "web").Node("b1").Owner("rs1").Obj(),
	}
	cases := []struct {
		name  string
		pod   *corev1.Pod
		order []string // best first, strictly
	}{
		{"ScheduleAnyway prefers the zone with fewest matching pods",
			st.MakePod().Label("app", "web").Spread(1, "zone", corev1.ScheduleAnyway, "app", "web").Obj(), []string{"c1", "b1", "a1"}},
		{"pods of one controller spread by default, by hostname and zone",
			st.MakePod().Label("app", "web").Owner("rs1").Obj(), []string{"c1", "b1", "a1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, status := st.Scores(New(), tc.pod, st.NewSnapshot(nodes, pods))
			if !status.IsSuccess() {
				t.Fatal(status)
			}
			for i := 1; i < len(tc.order); i++ {
				if got[tc.order[i-1]] <= got[tc.order[i]] {
					t.Fatalf("scores %v, want strictly decreasing along %v", got, tc.order)
				}
			}
			if got[tc.order[0]] != 100 {
				t.Fatalf("best node scores %d, want 100", got[tc.order[0]])
			}
		})
	}
	t.Run("a pod without constraints, controller or Service is not scored", func(t *testing.T) {
		got, _ := st.Scores(New(), st.MakePod().Label("app", "web").Obj(), st.NewSnapshot(nodes, pods))
		for n, s := range got {
			if s != 0 {
				t.Fatalf("node %s scored %d", n, s)
			}
		}
	})
}

func service(ns, name string, selector map[string]string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ServiceSpec{Selector: selector}}
}

func ownedBy(p *corev1.Pod, kind string) *corev1.Pod {
	p.OwnerReferences[0].Kind = kind
	return p
}

// TestScoreDefaultSpreadingByService: the system default spreading counts
// the pods of the pod's Services (and controller), as Kubernetes'
// DefaultSelector, the seeds' SelectorSpreadPriority.
func TestScoreDefaultSpreadingByService(t *testing.T) {
	nodes := []*corev1.Node{
		st.MakeNode().Name("a1").Label("zone", "a").Obj(),
		st.MakeNode().Name("b1").Label("zone", "b").Obj(),
		st.MakeNode().Name("c1").Label("zone", "c").Obj(),
	}
	pods := []*corev1.Pod{
		st.MakePod().Name("w1").Label("app", "web").Node("a1").Owner("rs1").Obj(),
		st.MakePod().Name("w2").Label("app", "web").Node("a1").Owner("rs1").Obj(),
		st.MakePod().Name("w3").Label("app", "web").Node("b1").Owner("rs1").Obj(),
		st.MakePod().Name("o1").Label("app", "web").Node("c1").Owner("rs2").Obj(),
		st.MakePod().Name("o2").Label("app", "web").Node("c1").Owner("rs2").Obj(),
		st.MakePod().Name("o3").Label("app", "web").Node("c1").Owner("rs2").Obj(),
		st.MakePod().Name("x1").Label("app", "other").Node("b1").Obj(),
	}
	web := service("default", "web", map[string]string{"app": "web"})
	cases := []struct {
		name     string
		pod      *corev1.Pod
		services []*corev1.Service
		order    []string // best first, strictly; nil: not scored; "=": every node equal
	}{
		{"a pod of a Service without controller spreads over the Service's pods",
			st.MakePod().Label("app", "web").Obj(), []*corev1.Service{web}, []string{"b1", "a1", "c1"}},
		{"a pod of a Service and a ReplicaSet counts only the pods of both",
			st.MakePod().Label("app", "web").Owner("rs1").Obj(), []*corev1.Service{web}, []string{"c1", "b1", "a1"}},
		{"the selectors of the pod's Services are ANDed: no other pod is both web and front",
			st.MakePod().Label("app", "web").Label("tier", "front").Obj(),
			[]*corev1.Service{web, service("default", "front", map[string]string{"tier": "front"})}, []string{"="}},
		{"Services of another namespace, without selector or selecting other pods do not count",
			st.MakePod().Label("app", "web").Obj(),
			[]*corev1.Service{service("other", "web", map[string]string{"app": "web"}), service("default", "manual", nil),
				service("default", "api", map[string]string{"app": "api"})}, nil},
		{"a Job's pods get no default spreading without a Service",
			ownedBy(st.MakePod().Label("app", "web").Owner("rs1").Obj(), "Job"), nil, nil},
		{"a Job's pods in a Service spread over the Service's pods",
			ownedBy(st.MakePod().Label("app", "web").Owner("rs1").Obj(), "Job"), []*corev1.Service{web}, []string{"b1", "a1", "c1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			snap := st.NewSnapshot(nodes, pods)
			snap.SetServices(tc.services)
			got, status := st.Scores(New(), tc.pod, snap)
			if !status.IsSuccess() {
				t.Fatal(status)
			}
			if len(tc.order) == 1 && tc.order[0] == "=" {
				for n, s := range got {
					if s != 100 {
						t.Fatalf("node %s scored %d, want 100 like every node (scores %v)", n, s, got)
					}
				}
				return
			}
			if tc.order == nil {
				for n, s := range got {
					if s != 0 {
						t.Fatalf("node %s scored %d, want no default spreading", n, s)
					}
				}
				return
			}
			for i := 1; i < len(tc.order); i++ {
				if got[tc.order[i-1]] <= got[tc.order[i]] {
					t.Fatalf("scores %v, want strictly decreasing along %v", got, tc.order)
				}
			}
		})
	}
}
