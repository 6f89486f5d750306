package cache_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/scheduler/cache"
	"minik/scheduler/framework"
	"minik/scheduler/internal/st"
)

func requestedCPU(snap *cache.Snapshot, node string) int64 { return snap.Get(node).Requested.MilliCPU }

func TestAssumedPodsCountAtOnce(t *testing.T) {
	cases := []struct {
		name    string
		steps   func(c *cache.Cache, pod *corev1.Pod)
		wantCPU int64
		assumed bool
	}{
		{"an assumed pod counts against its node before the bind returns",
			func(c *cache.Cache, p *corev1.Pod) { _ = c.AssumePodInfo(framework.NewPodInfo(p)) }, 1000, true},
		{"a forgotten pod (failed bind) no longer counts",
			func(c *cache.Cache, p *corev1.Pod) { _ = c.AssumePodInfo(framework.NewPodInfo(p)); c.ForgetPod(p) }, 0, false},
		{"the informer's add confirms the assumed pod without counting it twice",
			func(c *cache.Cache, p *corev1.Pod) { _ = c.AssumePodInfo(framework.NewPodInfo(p)); c.AddPod(p) }, 1000, false},
		{"a deleted pod stops counting",
			func(c *cache.Cache, p *corev1.Pod) { c.AddPod(p); c.RemovePod(p) }, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := cache.New()
			c.AddNode(st.MakeNode().Name("n").Obj())
			pod := st.MakePod().Node("n").Req("cpu", "1").Obj()
			tc.steps(c, pod)
			snap := cache.NewEmptySnapshot()
			c.UpdateSnapshot(snap)
			if got := requestedCPU(snap, "n"); got != tc.wantCPU {
				t.Fatalf("requested cpu %dm, want %dm", got, tc.wantCPU)
			}
			if c.IsAssumedPod(pod) != tc.assumed {
				t.Fatalf("assumed=%v, want %v", c.IsAssumedPod(pod), tc.assumed)
			}
		})
	}
}

func TestSnapshotCopiesOnlyChangedNodes(t *testing.T) {
	c := cache.New()
	for _, name := range []string{"a", "b", "c"} {
		c.AddNode(st.MakeNode().Name(name).Obj())
	}
	snap := cache.NewEmptySnapshot()
	c.UpdateSnapshot(snap)
	before := map[string]framework.NodeInfo{}
	for _, ni := range snap.List() {
		before[ni.Node().Name] = *ni
	}
	c.AddPod(st.MakePod().Node("b").Req("cpu", "1").Obj())
	c.UpdateSnapshot(snap)

	cases := []struct {
		name    string
		node    string
		changed bool
	}{
		{"the node that got a pod is copied again", "b", true},
		{"an untouched node keeps its copy", "a", false},
		{"another untouched node keeps its copy", "c", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ni := snap.Get(tc.node)
			if changed := ni.Generation != before[tc.node].Generation; changed != tc.changed {
				t.Fatalf("generation %d → %d, want changed=%v", before[tc.node].Generation, ni.Generation, tc.changed)
			}
		})
	}
	t.Run("the snapshot lists nodes sorted by name and drops removed ones", func(t *testing.T) {
		c.RemoveNode(st.MakeNode().Name("a").Obj())
		c.AddNode(st.MakeNode().Name("0").Obj())
		c.UpdateSnapshot(snap)
		var got []string
		for _, ni := range snap.List() {
			got = append(got, ni.Node().Name)
		}
		if len(got) != 3 || got[0] != "0" || got[1] != "b" || got[2] != "c" || snap.Get("a") != nil {
			t.Fatalf("nodes %v", got)
		}
	})
	t.Run("a copy in the snapshot does not change when the cache does", func(t *testing.T) {
		b := snap.Get("b")
		pods := len(b.Pods)
		c.AddPod(st.MakePod().Name("second").Node("b").Obj())
		if len(b.Pods) != pods {
			t.Fatal("snapshot copy changed before UpdateSnapshot")
		}
	})
}

func TestAffinityListsFollowThePods(t *testing.T) {
	c := cache.New()
	c.AddNode(st.MakeNode().Name("a").Obj())
	c.AddNode(st.MakeNode().Name("b").Obj())
	anti := st.MakePod().Name("anti").Node("b").PodAntiAffinity(st.Term("app", "x", "zone")).Obj()
	snap := cache.NewEmptySnapshot()
	c.UpdateSnapshot(snap)
	cases := []struct {
		name string
		do   func()
		want int
	}{
		{"no pod with anti-affinity: empty list", func() {}, 0},
		{"a pod with required anti-affinity lists its node", func() { c.AddPod(anti) }, 1},
		{"its deletion empties the list", func() { c.RemovePod(anti) }, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.do()
			c.UpdateSnapshot(snap)
			if got := len(snap.HavePodsWithRequiredAntiAffinityList()); got != tc.want {
				t.Fatalf("got %d nodes, want %d", got, tc.want)
			}
		})
	}
}

func TestImageStatesCountNodes(t *testing.T) {
	c := cache.New()
	c.AddNode(st.MakeNode().Name("a").Image("nginx:1", 100).Obj())
	c.AddNode(st.MakeNode().Name("b").Image("docker.io/library/nginx:1", 100).Obj())
	snap := cache.NewEmptySnapshot()
	c.UpdateSnapshot(snap)
	is := snap.Get("a").ImageStates["docker.io/library/nginx:1"]
	if is == nil || is.NumNodes != 2 || is.Size != 100 {
		t.Fatalf("image state %+v: both spellings name one image on 2 nodes", is)
	}
}

// TestImageStatesFollowAnEmptiedImageList: a node whose image list
// becomes empty no longer scores as holding its old images.
func TestImageStatesFollowAnEmptiedImageList(t *testing.T) {
	c := cache.New()
	withImage := st.MakeNode().Name("a").Image("nginx:1", 100).Obj()
	c.AddNode(withImage)
	snap := cache.NewEmptySnapshot()
	c.UpdateSnapshot(snap)
	if len(snap.Get("a").ImageStates) != 1 {
		t.Fatalf("image states %v, want nginx:1", snap.Get("a").ImageStates)
	}
	c.UpdateNode(withImage, st.MakeNode().Name("a").Obj())
	c.UpdateSnapshot(snap)
	if got := snap.Get("a").ImageStates; len(got) != 0 {
		t.Fatalf("image states %v after the node's images went, want none", got)
	}
}

func TestSnapshotServices(t *testing.T) {
	svc := func(name string, sel map[string]string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: corev1.ServiceSpec{Selector: sel}}
	}
	names := func(snap *cache.Snapshot) []string {
		var out []string
		for _, s := range snap.Services("default") {
			out = append(out, s.Name)
		}
		return out
	}
	c := cache.New()
	snap := cache.NewEmptySnapshot()
	steps := []struct {
		name string
		do   func()
		want []string
	}{
		{"Services with a selector are listed by namespace, by name", func() {
			c.SetService(svc("web", map[string]string{"app": "web"}))
			c.SetService(svc("api", map[string]string{"app": "api"}))
		}, []string{"api", "web"}},
		{"a Service without selector selects nothing and is left out", func() { c.SetService(svc("manual", nil)) }, []string{"api", "web"}},
		{"a Service whose selector is removed leaves", func() { c.SetService(svc("web", nil)) }, []string{"api"}},
		{"a deleted Service leaves", func() { c.RemoveService(svc("api", nil)) }, nil},
	}
	for _, st := range steps {
		st.do()
		c.UpdateSnapshot(snap)
		if got := names(snap); !slices.Equal(got, st.want) {
			t.Errorf("%s: snapshot Services %v, want %v", st.name, got, st.want)
		}
	}
}
