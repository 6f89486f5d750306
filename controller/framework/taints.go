package framework

import (
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
)

// Tolerates reports whether tol tolerates taint, by Kubernetes' own rules
// (k8s.io/api's Toleration.ToleratesTaint; the alpha Lt and Gt operators
// off, as by default).
func Tolerates(tol *corev1.Toleration, taint *corev1.Taint) bool {
	return tol.ToleratesTaint(logr.Discard(), taint, false)
}

// ToleratesAll reports whether tols tolerate every taint in taints whose
// effect is in effects (all effects if none given).
func ToleratesAll(tols []corev1.Toleration, taints []corev1.Taint, effects ...corev1.TaintEffect) bool {
	for i := range taints {
		t := &taints[i]
		if len(effects) > 0 && !containsEffect(effects, t.Effect) {
			continue
		}
		ok := false
		for j := range tols {
			if Tolerates(&tols[j], t) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

func containsEffect(es []corev1.TaintEffect, e corev1.TaintEffect) bool {
	for _, x := range es {
		if x == e {
			return true
		}
	}
	return false
}
