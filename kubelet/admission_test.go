package kubelet

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

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
			if res := admit(tc.node, tc.pod, tc.running, tc.sysctls); res != nil {
				got = res.Reason
			}
			if got != tc.want {
				t.Errorf("admit = %q, want %q", got, tc.want)
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
