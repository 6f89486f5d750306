package framework

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestServicesOfLabels(t *testing.T) {
	svc := func(ns, name string, sel map[string]string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ServiceSpec{Selector: sel}}
	}
	all := []*corev1.Service{
		svc("default", "web", map[string]string{"app": "web"}),
		svc("default", "front", map[string]string{"app": "web", "tier": "front"}),
		svc("default", "everything", map[string]string{}),
		svc("default", "manual", nil),
		svc("other", "web", map[string]string{"app": "web"}),
	}
	index := map[string][]*corev1.Service{}
	for _, s := range all {
		for _, k := range serviceSelectorKeys(s) {
			index[k] = append(index[k], s)
		}
	}
	byIndex := func(v string) []*corev1.Service { return index[v] }
	cases := []struct {
		name   string
		labels map[string]string
		want   []string
	}{
		{"a pod is in every Service whose whole selector it matches, and in those selecting everything",
			map[string]string{"app": "web", "tier": "front", "x": "y"}, []string{"everything", "front", "web"}},
		{"a Service whose selector the pod only partly matches does not count", map[string]string{"app": "web"}, []string{"everything", "web"}},
		{"a selectorless Service selects no pod; Services of other namespaces neither", map[string]string{"x": "y"}, []string{"everything"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, s := range servicesOfLabels(byIndex, "default", tc.labels) {
				got = append(got, s.Name)
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
