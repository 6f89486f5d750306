package framework

import corev1 "k8s.io/api/core/v1"

// Tolerates reports whether tol tolerates taint: the effects match (or tol
// has none), the keys match (or tol has none, with Exists), and the values
// match under Equal (Exists matches any value).
func Tolerates(tol *corev1.Toleration, taint *corev1.Taint) bool {
	if tol.Effect != "" && tol.Effect != taint.Effect {
		return false
	}
	if tol.Key != "" && tol.Key != taint.Key {
		return false
	}
	switch tol.Operator {
	case corev1.TolerationOpExists:
		return true
	case "", corev1.TolerationOpEqual:
		return tol.Value == taint.Value
	}
	return false
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
