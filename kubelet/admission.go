package kubelet

import (
	"fmt"
	"github.com/go-logr/logr"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"

	"minik/kubelet/eviction"
)

// Admission rejection reasons, as Kubernetes' kubelet reports them.
const (
	reasonOutOfCPU                 = "OutOfcpu"
	reasonOutOfMemory              = "OutOfmemory"
	reasonOutOfPods                = "OutOfpods"
	reasonNodeAffinity             = "NodeAffinity"
	reasonUnexpectedAdmissionError = "UnexpectedAdmissionError"
	reasonSysctlForbidden          = "SysctlForbidden"
)

// nodeConditionMessageFmt is the kubelet's message for a pod rejected
// under node pressure (trailing space included).
const nodeConditionMessageFmt = "The node had condition: %v. "

// admitUnderPressure is the eviction manager's admission rule, checked
// before the others as in the kubelet: under MemoryPressure alone the
// node takes every pod but BestEffort ones (unless they tolerate the
// memory-pressure taint); under any other pressure it takes none.
// Critical pods are always taken.
func admitUnderPressure(pod *corev1.Pod, pressure []corev1.NodeConditionType) *admitResult {
	if len(pressure) == 0 || eviction.IsCritical(pod) {
		return nil
	}
	if len(pressure) == 1 && pressure[0] == corev1.NodeMemoryPressure {
		memTaint := corev1.Taint{Key: corev1.TaintNodeMemoryPressure, Effect: corev1.TaintEffectNoSchedule}
		if qosClass(pod) != corev1.PodQOSBestEffort || tolerated(pod, memTaint) {
			return nil
		}
	}
	return &admitResult{eviction.Reason, fmt.Sprintf(nodeConditionMessageFmt, pressure)}
}

// admitResult is a rejection: data, not an error.
type admitResult struct {
	Reason, Message string
}

// safeSysctls may be set by any pod (Kubernetes' safe set).
var safeSysctls = map[string]bool{
	"kernel.shm_rmid_forced":              true,
	"net.ipv4.ip_local_port_range":        true,
	"net.ipv4.tcp_syncookies":             true,
	"net.ipv4.ping_group_range":           true,
	"net.ipv4.ip_unprivileged_port_start": true,
	"net.ipv4.ip_local_reserved_ports":    true,
	"net.ipv4.tcp_keepalive_time":         true,
	"net.ipv4.tcp_fin_timeout":            true,
	"net.ipv4.tcp_keepalive_intvl":        true,
	"net.ipv4.tcp_keepalive_probes":       true,
}

func sysctlAllowed(name string, allowed []string) bool {
	if safeSysctls[name] {
		return true
	}
	for _, a := range allowed {
		if ok, _ := path.Match(a, name); ok || a == name {
			return true
		}
	}
	return false
}

// podRequests sums the pod's requests the way the scheduler does: the
// app containers' sum, or the largest init container if larger.
func podRequests(pod *corev1.Pod) (cpuMilli, memBytes int64) {
	for _, c := range pod.Spec.Containers {
		cpuMilli += c.Resources.Requests.Cpu().MilliValue()
		memBytes += c.Resources.Requests.Memory().Value()
	}
	for _, c := range pod.Spec.InitContainers {
		cpuMilli = max(cpuMilli, c.Resources.Requests.Cpu().MilliValue())
		memBytes = max(memBytes, c.Resources.Requests.Memory().Value())
	}
	return cpuMilli, memBytes
}

// admit checks again, on the node, what the scheduler checked: resources,
// pod count, host ports, node affinity, NoExecute taints and sysctls.
// running are the pods already admitted and not terminal. It returns nil
// to admit.
func admit(node *corev1.Node, pod *corev1.Pod, running []*corev1.Pod, allowedSysctls []string) *admitResult {
	alloc := node.Status.Allocatable
	if int64(len(running)+1) > alloc.Pods().Value() {
		return &admitResult{reasonOutOfPods, fmt.Sprintf("Node didn't have enough resource: pods, requested: 1, used: %d, capacity: %d", len(running), alloc.Pods().Value())}
	}
	cpu, mem := podRequests(pod)
	var usedCPU, usedMem int64
	ports := map[string]bool{}
	for _, p := range running {
		c, m := podRequests(p)
		usedCPU += c
		usedMem += m
		for _, ctr := range p.Spec.Containers {
			for _, port := range ctr.Ports {
				if port.HostPort != 0 {
					ports[portKey(port)] = true
				}
			}
		}
	}
	if capCPU := alloc.Cpu().MilliValue(); cpu > 0 && usedCPU+cpu > capCPU {
		return &admitResult{reasonOutOfCPU, fmt.Sprintf("Node didn't have enough resource: cpu, requested: %d, used: %d, capacity: %d", cpu, usedCPU, capCPU)}
	}
	if capMem := alloc.Memory().Value(); mem > 0 && usedMem+mem > capMem {
		return &admitResult{reasonOutOfMemory, fmt.Sprintf("Node didn't have enough resource: memory, requested: %d, used: %d, capacity: %d", mem, usedMem, capMem)}
	}
	for _, ctr := range pod.Spec.Containers {
		for _, port := range ctr.Ports {
			if port.HostPort != 0 && ports[portKey(port)] {
				return &admitResult{reasonUnexpectedAdmissionError, fmt.Sprintf("host port %d/%s is already in use on the node", port.HostPort, port.Protocol)}
			}
		}
	}
	if !matchesNode(pod, node) {
		return &admitResult{reasonNodeAffinity, "Predicate NodeAffinity failed"}
	}
	for _, t := range node.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoExecute && !tolerated(pod, t) {
			return &admitResult{reasonUnexpectedAdmissionError, fmt.Sprintf("node has the untolerated taint {%s: %s}", t.Key, t.Value)}
		}
	}
	if sc := pod.Spec.SecurityContext; sc != nil {
		for _, s := range sc.Sysctls {
			if !sysctlAllowed(s.Name, allowedSysctls) {
				return &admitResult{reasonSysctlForbidden, fmt.Sprintf("forbidden sysctl: %q not allowlisted", s.Name)}
			}
		}
	}
	return nil
}

func portKey(p corev1.ContainerPort) string {
	proto := p.Protocol
	if proto == "" {
		proto = corev1.ProtocolTCP
	}
	return fmt.Sprintf("%s/%s/%d", p.HostIP, proto, p.HostPort)
}

// tolerated reports whether the pod tolerates taint t, by Kubernetes'
// own rules (k8s.io/api; the alpha Lt and Gt operators off).
func tolerated(pod *corev1.Pod, t corev1.Taint) bool {
	for i := range pod.Spec.Tolerations {
		if pod.Spec.Tolerations[i].ToleratesTaint(logr.Discard(), &t, false) {
			return true
		}
	}
	return false
}

// matchesNode checks nodeSelector and required node affinity.
func matchesNode(pod *corev1.Pod, node *corev1.Node) bool {
	if len(pod.Spec.NodeSelector) > 0 && !labels.SelectorFromSet(pod.Spec.NodeSelector).Matches(labels.Set(node.Labels)) {
		return false
	}
	aff := pod.Spec.Affinity
	if aff == nil || aff.NodeAffinity == nil || aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return true
	}
	for _, term := range aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		if termMatches(term, node) {
			return true
		}
	}
	return false
}

func termMatches(term corev1.NodeSelectorTerm, node *corev1.Node) bool {
	if len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0 {
		return false
	}
	for _, e := range term.MatchExpressions {
		v, has := node.Labels[e.Key]
		if !requirementMatches(e, v, has) {
			return false
		}
	}
	for _, e := range term.MatchFields {
		if e.Key == "metadata.name" && !requirementMatches(e, node.Name, true) {
			return false
		}
	}
	return true
}

func requirementMatches(e corev1.NodeSelectorRequirement, v string, has bool) bool {
	in := false
	for _, x := range e.Values {
		in = in || x == v
	}
	switch e.Operator {
	case corev1.NodeSelectorOpIn:
		return has && in
	case corev1.NodeSelectorOpNotIn:
		return !has || !in
	case corev1.NodeSelectorOpExists:
		return has
	case corev1.NodeSelectorOpDoesNotExist:
		return !has
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if !has || len(e.Values) != 1 {
			return false
		}
		a, err1 := resource.ParseQuantity(v)
		b, err2 := resource.ParseQuantity(e.Values[0])
		if err1 != nil || err2 != nil {
			return false
		}
		if e.Operator == corev1.NodeSelectorOpGt {
			return a.Cmp(b) > 0
		}
		return a.Cmp(b) < 0
	}
	return strings.EqualFold(string(e.Operator), "")
}
