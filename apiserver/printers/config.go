package printers

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// namespaceRow prints NAME STATUS AGE.
func namespaceRow(ns *corev1.Namespace, now time.Time) metav1.TableRow {
	return row(ns.Name, string(ns.Status.Phase), since(ns.CreationTimestamp.Time, now))
}

// leaseRow prints NAME HOLDER AGE.
func leaseRow(l *coordinationv1.Lease, now time.Time) metav1.TableRow {
	holder := ""
	if l.Spec.HolderIdentity != nil {
		holder = *l.Spec.HolderIdentity
	}
	return row(l.Name, holder, since(l.CreationTimestamp.Time, now))
}

// priorityClassRow prints NAME VALUE GLOBAL-DEFAULT AGE PREEMPTIONPOLICY.
func priorityClassRow(pc *schedulingv1.PriorityClass, now time.Time) metav1.TableRow {
	policy := ""
	if pc.PreemptionPolicy != nil {
		policy = string(*pc.PreemptionPolicy)
	}
	return row(pc.Name, int64(pc.Value), pc.GlobalDefault, since(pc.CreationTimestamp.Time, now), policy)
}

// configMapRow prints NAME DATA AGE; DATA counts text and binary keys.
func configMapRow(cm *corev1.ConfigMap, now time.Time) metav1.TableRow {
	return row(cm.Name, int64(len(cm.Data)+len(cm.BinaryData)), since(cm.CreationTimestamp.Time, now))
}

// secretRow prints NAME TYPE DATA AGE.
func secretRow(s *corev1.Secret, now time.Time) metav1.TableRow {
	// Upstream folds stringData into data before printing; count both keys
	// once in case the object was not normalized on write.
	keys := len(s.Data)
	for k := range s.StringData {
		if _, ok := s.Data[k]; !ok {
			keys++
		}
	}
	return row(s.Name, string(s.Type), int64(keys), since(s.CreationTimestamp.Time, now))
}

// serviceAccountRow prints NAME SECRETS AGE.
func serviceAccountRow(sa *corev1.ServiceAccount, now time.Time) metav1.TableRow {
	return row(sa.Name, int64(len(sa.Secrets)), since(sa.CreationTimestamp.Time, now))
}

// podDisruptionBudgetRow prints NAME MIN-AVAILABLE MAX-UNAVAILABLE
// ALLOWED-DISRUPTIONS AGE; an unset bound prints as N/A.
func podDisruptionBudgetRow(pdb *policyv1.PodDisruptionBudget, now time.Time) metav1.TableRow {
	minAvailable, maxUnavailable := "N/A", "N/A"
	if pdb.Spec.MinAvailable != nil {
		minAvailable = pdb.Spec.MinAvailable.String()
	}
	if pdb.Spec.MaxUnavailable != nil {
		maxUnavailable = pdb.Spec.MaxUnavailable.String()
	}
	return row(pdb.Name, minAvailable, maxUnavailable, int64(pdb.Status.DisruptionsAllowed), since(pdb.CreationTimestamp.Time, now))
}
