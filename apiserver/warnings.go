package apiserver

import (
	"fmt"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"minik/apiserver/validation"
)

// networkPolicyNotEnforced is the warning every NetworkPolicy create and
// update carries: like an upstream cluster whose network plugin does not
// implement policies, minik keeps them and no pod traffic is filtered.
const networkPolicyNotEnforced = "minik stores NetworkPolicies but does not enforce them: pod traffic is not filtered"

// writeWarnings returns the texts of the "299" Warning headers that a
// valid create (old is nil) or update of obj through its main resource
// carries, as upstream's strategies add WarningsOnCreate and
// WarningsOnUpdate once validation passed. Reads and lists carry none.
func writeWarnings(obj, old runtime.Object) []string {
	switch o := obj.(type) {
	case *networkingv1.NetworkPolicy:
		return []string{networkPolicyNotEnforced}
	case *networkingv1.Ingress:
		// Upstream's ingress strategy, on create only.
		if _, ok := o.Annotations[validation.IngressClassAnnotation]; ok && old == nil && o.Spec.IngressClassName == nil {
			return []string{fmt.Sprintf("annotation %q is deprecated, please use 'spec.ingressClassName' instead", validation.IngressClassAnnotation)}
		}
	}
	return nil
}
