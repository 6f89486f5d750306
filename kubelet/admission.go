package kubelet

import (
	"fmt"
	"path"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"minik/kubelet/eviction"
	"minik/kubelet/podstep"
	"minik/scheduler/framework"
	"minik/scheduler/plugins/nodeaffinity"
	"minik/scheduler/plugins/nodename"
	"minik/scheduler/plugins/nodeports"
	"minik/scheduler/plugins/noderesources"
)

// Admission rejection reasons, as Kubernetes' kubelet reports them.
const (
	// reasonOutOfPrefix is followed by the resource: OutOfcpu, OutOfpods.
	reasonOutOfPrefix              = "OutOf"
	reasonOutOfCPU                 = reasonOutOfPrefix + "cpu"
	reasonOutOfMemory              = reasonOutOfPrefix + "memory"
	reasonOutOfPods                = reasonOutOfPrefix + "pods"
	reasonNodeAffinity             = "NodeAffinity"
	reasonNodeName                 = "NodeName"
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
func admitUnderPressure(pod *corev1.Pod, pressure []corev1.NodeConditionType) *podstep.Failure {
	if len(pressure) == 0 || eviction.IsCritical(pod) {
		return nil
	}
	if len(pressure) == 1 && pressure[0] == corev1.NodeMemoryPressure {
		memTaint := corev1.Taint{Key: corev1.TaintNodeMemoryPressure, Effect: corev1.TaintEffectNoSchedule}
		if podstep.QOSClass(pod) != corev1.PodQOSBestEffort || tolerated(pod, memTaint) {
			return nil
		}
	}
	return &podstep.Failure{Reason: eviction.Reason, Message: fmt.Sprintf(nodeConditionMessageFmt, pressure)}
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

// admit checks again, on the node, what the scheduler checked, with the
// scheduler's own checks (as upstream's kubelet calls its AdmissionCheck):
// resources and pod count (noderesources), spec.nodeName (nodename), host
// ports (nodeports), nodeSelector and required node affinity
// (nodeaffinity); then the NoExecute taints, the only ones a kubelet
// enforces, and sysctls. running are the pods that still hold the node's
// resources. It returns nil to admit.
func admit(node *corev1.Node, pod *corev1.Pod, running []*framework.PodInfo, allowedSysctls []string) *podstep.Failure {
	ni := framework.NewNodeInfo()
	for _, pi := range running {
		ni.AddPodInfo(pi)
	}
	ni.SetNode(node)
	if lacks := noderesources.Fits(framework.PodRequests(pod, false), ni); len(lacks) > 0 {
		l := lacks[0]
		return &podstep.Failure{Reason: reasonOutOfPrefix + string(l.Name), Message: fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d",
			l.Name, l.Requested, l.Used, l.Allocatable)}
	}
	if !nodename.Fits(pod, node) {
		return &podstep.Failure{Reason: reasonNodeName, Message: "Predicate NodeName failed"}
	}
	if port := nodeports.Conflict(pod, ni); port != nil {
		return &podstep.Failure{Reason: reasonUnexpectedAdmissionError, Message: fmt.Sprintf("host port %d/%s is already in use on the node", port.HostPort, port.Protocol)}
	}
	if !nodeaffinity.Fits(pod, node) {
		return &podstep.Failure{Reason: reasonNodeAffinity, Message: "Predicate NodeAffinity failed"}
	}
	if t, ok := corev1helpers.FindMatchingUntoleratedTaint(logr.Discard(), node.Spec.Taints, pod.Spec.Tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoExecute
	}, false); ok {
		return &podstep.Failure{Reason: reasonUnexpectedAdmissionError, Message: fmt.Sprintf("node has the untolerated taint {%s: %s}", t.Key, t.Value)}
	}
	if sc := pod.Spec.SecurityContext; sc != nil {
		for _, s := range sc.Sysctls {
			if !sysctlAllowed(s.Name, allowedSysctls) {
				return &podstep.Failure{Reason: reasonSysctlForbidden, Message: fmt.Sprintf("forbidden sysctl: %q not allowlisted", s.Name)}
			}
		}
	}
	return nil
}

// tolerated reports whether the pod tolerates taint t (the alpha Lt and
// Gt operators off, as by default).
func tolerated(pod *corev1.Pod, t corev1.Taint) bool {
	return corev1helpers.TolerationsTolerateTaint(logr.Discard(), pod.Spec.Tolerations, &t, false)
}
