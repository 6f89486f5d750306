package defaults

import corev1 "k8s.io/api/core/v1"

// LimitRange fills in a Container item's defaults as upstream's
// SetDefaults_LimitRangeItem: a missing default limit is the max, a
// missing default request is the default limit, else the min.
func LimitRange(lr *corev1.LimitRange) {
	for i := range lr.Spec.Limits {
		item := &lr.Spec.Limits[i]
		if item.Type != corev1.LimitTypeContainer {
			continue
		}
		if item.Default == nil {
			item.Default = corev1.ResourceList{}
		}
		if item.DefaultRequest == nil {
			item.DefaultRequest = corev1.ResourceList{}
		}
		for k, v := range item.Max {
			if _, ok := item.Default[k]; !ok {
				item.Default[k] = v.DeepCopy()
			}
		}
		for k, v := range item.Default {
			if _, ok := item.DefaultRequest[k]; !ok {
				item.DefaultRequest[k] = v.DeepCopy()
			}
		}
		for k, v := range item.Min {
			if _, ok := item.DefaultRequest[k]; !ok {
				item.DefaultRequest[k] = v.DeepCopy()
			}
		}
	}
}
