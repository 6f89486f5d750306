package kubelet

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"minik/kubelet/internal/podtest"
	"minik/kubelet/podstep"
	"minik/scheduler/framework"
	"minik/scheduler/plugins/nodeaffinity"
	"minik/scheduler/plugins/nodename"
	"minik/scheduler/plugins/noderesources"
)

var makePod = podtest.MakePod

func nodeWith(cpu, mem string, pods int64) *corev1.Node {
	n := &corev1.Node{}
	n.Name = "n1"
	n.Labels = map[string]string{"zone": "a"}
	n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem),
		corev1.ResourcePods: *resource.NewQuantity(pods, resource.DecimalSI)}
	return n
}

func requesting(cpu, mem string) *corev1.Pod {
	p := makePod("a").Obj()
	p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	return p
}

func TestAdmit(t *testing.T) {
	withPort := func(port int32) *corev1.Pod {
		p := makePod("a").Obj()
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: port}}
		return p
	}
	for _, tc := range []struct {
		name    string
		node    *corev1.Node
		pod     *corev1.Pod
		running []*corev1.Pod
		sysctls []string
		want    string // reason, "" to admit
	}{
		{"a pod that fits is admitted", nodeWith("2", "1Gi", 10), requesting("500m", "100Mi"), nil, nil, ""},
		{"too much cpu is OutOfcpu", nodeWith("1", "1Gi", 10), requesting("600m", "1Mi"), []*corev1.Pod{requesting("500m", "1Mi")}, nil, reasonOutOfCPU},
		{"too much memory is OutOfmemory", nodeWith("4", "1Gi", 10), requesting("1m", "800Mi"), []*corev1.Pod{requesting("1m", "300Mi")}, nil, reasonOutOfMemory},
		{"one pod too many is OutOfpods", nodeWith("4", "1Gi", 1), makePod("a").Obj(), []*corev1.Pod{makePod("b").Obj()}, nil, reasonOutOfPods},
		{"an unmatched nodeSelector is NodeAffinity", nodeWith("4", "1Gi", 10), func() *corev1.Pod {
			p := makePod("a").Obj()
			p.Spec.NodeSelector = map[string]string{"zone": "b"}
			return p
		}(), nil, nil, reasonNodeAffinity},
		{"a taken host port is refused", nodeWith("4", "1Gi", 10), withPort(8080), []*corev1.Pod{withPort(8080)}, nil, reasonUnexpectedAdmissionError},
		{"an untolerated NoExecute taint is refused", func() *corev1.Node {
			n := nodeWith("4", "1Gi", 10)
			n.Spec.Taints = []corev1.Taint{{Key: "k", Value: "v", Effect: corev1.TaintEffectNoExecute}}
			return n
		}(), makePod("a").Obj(), nil, nil, reasonUnexpectedAdmissionError},
		{"an unsafe sysctl is forbidden", nodeWith("4", "1Gi", 10), func() *corev1.Pod {
			p := makePod("a").Obj()
			p.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "net.core.somaxconn", Value: "1024"}}}
			return p
		}(), nil, nil, reasonSysctlForbidden},
		{"an allowed unsafe sysctl is admitted", nodeWith("4", "1Gi", 10), func() *corev1.Pod {
			p := makePod("a").Obj()
			p.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "net.core.somaxconn", Value: "1024"}}}
			return p
		}(), nil, []string{"net.core.*"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if res := admit(tc.node, tc.pod, podInfos(tc.running), tc.sysctls); res != nil {
				got = res.Reason
			}
			if got != tc.want {
				t.Errorf("admit = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestAdmitAgreesWithTheScheduler pins the cases where the kubelet's own
// copies of the API's rules disagreed with the scheduler's: each pod the
// kubelet admits, the scheduler's filters place on that node, and each it
// rejects for affinity or resources, they refuse.
func TestAdmitAgreesWithTheScheduler(t *testing.T) {
	labelled := func() *corev1.Node {
		n := nodeWith("1", "1Gi", 10)
		n.Labels["cores"] = "5000"
		return n
	}
	affinity := func(op corev1.NodeSelectorOperator, values ...string) *corev1.Pod {
		p := makePod("a").Obj()
		p.Spec.NodeName = "n1"
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "cores", Operator: op, Values: values}}}}}}}
		return p
	}
	withOverhead := requesting("400m", "1Mi")
	withOverhead.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")}
	always := corev1.ContainerRestartPolicyAlways
	withSidecar := requesting("100m", "1Mi")
	withSidecar.Spec.InitContainers = []corev1.Container{{Name: "proxy", RestartPolicy: &always,
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("600m")}}}}
	elsewhere := makePod("a").Obj()
	elsewhere.Spec.NodeName = "n2"
	noSchedule := nodeWith("1", "1Gi", 10)
	noSchedule.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}
	half := []*corev1.Pod{requesting("500m", "1Mi")}
	for _, tc := range []struct {
		name    string
		node    *corev1.Node
		pod     *corev1.Pod
		running []*corev1.Pod
		want    string // reason, "" to admit
		filter  framework.FilterPlugin
	}{
		{"Gt compares integers: 5000 > 3 is admitted", labelled(), affinity(corev1.NodeSelectorOpGt, "3"), nil, "", nodeaffinity.New()},
		{"Gt with a quantity value (1k) matches no node", labelled(), affinity(corev1.NodeSelectorOpGt, "1k"), nil, reasonNodeAffinity, nodeaffinity.New()},
		{"Lt with a quantity value (1M) matches no node", labelled(), affinity(corev1.NodeSelectorOpLt, "1M"), nil, reasonNodeAffinity, nodeaffinity.New()},
		{"an empty operator matches no node", labelled(), affinity("", "5000"), nil, reasonNodeAffinity, nodeaffinity.New()},
		{"In on the label's value is admitted", labelled(), affinity(corev1.NodeSelectorOpIn, "5000"), nil, "", nodeaffinity.New()},
		{"spec.overhead counts: 400m + 200m overhead does not fit in 500m", nodeWith("1", "1Gi", 10), withOverhead, half, reasonOutOfCPU, noderesources.New()},
		{"a sidecar's request counts with the containers'", nodeWith("1", "1Gi", 10), withSidecar, half, reasonOutOfCPU, noderesources.New()},
		{"without overhead the same pod fits", nodeWith("1", "1Gi", 10), requesting("400m", "1Mi"), half, "", noderesources.New()},
		{"a pod bound to another node is refused", nodeWith("1", "1Gi", 10), elsewhere, nil, reasonNodeName, nodename.New()},
		{"a NoSchedule taint is the scheduler's: the kubelet admits", noSchedule, makePod("a").Obj(), nil, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if res := admit(tc.node, tc.pod, podInfos(tc.running), nil); res != nil {
				got = res.Reason
			}
			if got != tc.want {
				t.Errorf("admit = %q, want %q", got, tc.want)
			}
			if tc.filter == nil {
				return
			}
			ni := framework.NewNodeInfo(tc.running...)
			ni.SetNode(tc.node)
			if st := tc.filter.Filter(framework.NewCycleState(), tc.pod, ni); st.IsSuccess() != (tc.want == "") {
				t.Errorf("the scheduler's %s says %v, the kubelet %q", tc.filter.Name(), st, got)
			}
		})
	}
}

func TestAdmitUnderPressure(t *testing.T) {
	burstable := requesting("100m", "10Mi")
	tolerant := makePod("a").Obj()
	tolerant.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	static := makePod("a").Obj()
	static.Annotations = map[string]string{annotationConfigSource: "file"}
	critical := makePod("a").Obj()
	prio := int32(2000001000)
	critical.Spec.Priority = &prio
	mem, disk, pid := corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure
	for _, tc := range []struct {
		name     string
		pod      *corev1.Pod
		pressure []corev1.NodeConditionType
		want     string // the rejection message, "" to admit
	}{
		{"without pressure every pod is admitted", makePod("a").Obj(), nil, ""},
		{"under MemoryPressure a BestEffort pod is rejected", makePod("a").Obj(), []corev1.NodeConditionType{mem},
			"The node had condition: [MemoryPressure]. "},
		{"under MemoryPressure a Burstable pod is admitted", burstable, []corev1.NodeConditionType{mem}, ""},
		{"a BestEffort pod tolerating the memory-pressure taint is admitted", tolerant, []corev1.NodeConditionType{mem}, ""},
		{"under DiskPressure every pod is rejected", burstable, []corev1.NodeConditionType{disk},
			"The node had condition: [DiskPressure]. "},
		{"under PIDPressure every pod is rejected", burstable, []corev1.NodeConditionType{pid},
			"The node had condition: [PIDPressure]. "},
		{"memory and disk pressure reject a Burstable pod", burstable, []corev1.NodeConditionType{disk, mem},
			"The node had condition: [DiskPressure MemoryPressure]. "},
		{"a static pod is critical and admitted", static, []corev1.NodeConditionType{disk}, ""},
		{"a system-node-critical pod is admitted", critical, []corev1.NodeConditionType{disk}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if res := admitUnderPressure(tc.pod, tc.pressure); res != nil {
				if res.Reason != "Evicted" {
					t.Errorf("reason %q, want Evicted", res.Reason)
				}
				got = res.Message
			}
			if got != tc.want {
				t.Errorf("admitUnderPressure = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestExpand(t *testing.T) {
	env := []corev1.EnvVar{{Name: "A", Value: "x"}}
	for _, tc := range []struct{ in, want string }{
		{"$(A)-y", "x-y"},
		{"$$(A)", "$(A)"},
		{"$(B)", "$(B)"},
		{"plain", "plain"},
	} {
		if got := expand(tc.in, env); got != tc.want {
			t.Errorf("expand(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestAdmittedPodsCountThePodsAdmissionJustLetIn(t *testing.T) {
	running := newPodNamed("running")
	let := newPodNamed("just-admitted")
	w := &podWorker{pod: running, state: podstep.NewState(time.Time{})}
	w.state.Admitted = true
	k := &Kubelet{workers: map[types.UID]*podWorker{running.UID: w}, admitting: map[types.UID]*corev1.Pod{let.UID: let}}
	names := func(pods []*framework.PodInfo) []string {
		var out []string
		for _, p := range pods {
			out = append(out, p.Pod.Name)
		}
		slices.Sort(out)
		return out
	}
	steps := []struct {
		name   string
		do     func()
		except types.UID
		want   []string
	}{
		{"a pod admitted but not yet recorded by its step counts", func() {}, "", []string{"just-admitted", "running"}},
		{"the pod being admitted does not count against itself", func() {}, let.UID, []string{"running"}},
		{"once its step recorded the answer, it counts through its worker only", func() { k.admitted(let.UID) }, "", []string{"running"}},
	}
	for _, s := range steps {
		s.do()
		if got := names(k.admittedPods(s.except)); !slices.Equal(got, s.want) {
			t.Errorf("%s: admitted pods %v, want %v", s.name, got, s.want)
		}
	}
}

// newPodNamed is a pod with one container and a UID of its name.
func newPodNamed(name string) *corev1.Pod {
	p := makePod("c").Obj()
	p.Name, p.UID = name, types.UID("uid-"+name)
	return p
}

// podInfos is the scheduler's view of pods, as admission takes them.
func podInfos(pods []*corev1.Pod) []*framework.PodInfo {
	out := make([]*framework.PodInfo, len(pods))
	for i, p := range pods {
		out[i] = framework.NewPodInfo(p)
	}
	return out
}

func TestAdmissionReusesAPodsInfoUntilThePodChanges(t *testing.T) {
	w := &podWorker{pod: newPodNamed("a")}
	first := w.podInfoLocked()
	if again := w.podInfoLocked(); again != first {
		t.Fatal("the pod's info was made again though the pod did not change")
	}
	w.pod = newPodNamed("a") // an update from the apiserver is a new object
	if changed := w.podInfoLocked(); changed == first || changed.Pod != w.pod {
		t.Fatal("the pod's info was not made again for the pod's new object")
	}
}
