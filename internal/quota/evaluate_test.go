package quota

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestCountedBy(t *testing.T) {
	tests := []struct {
		name            corev1.ResourceName
		resource, group string
		ok              bool
	}{
		{"count/statefulsets.apps", "statefulsets", "apps", true},
		{"count/cronjobs.batch", "cronjobs", "batch", true},
		{"count/widgets.example.com", "widgets", "example.com", true},
		{"count/persistentvolumeclaims", "persistentvolumeclaims", "", true},
		{"persistentvolumeclaims", "persistentvolumeclaims", "", true},
		{"requests.storage", "persistentvolumeclaims", "", true},
		{"gold.storageclass.storage.k8s.io/requests.storage", "persistentvolumeclaims", "", true},
		{"gold.storageclass.storage.k8s.io/persistentvolumeclaims", "persistentvolumeclaims", "", true},
		{"requests.cpu", "pods", "", true},
		{"requests.hugepages-2Mi", "pods", "", true},
		{"requests.example.com/gpu", "pods", "", true},
		{"services.nodeports", "services", "", true},
		{"requests.kubernetes.io/anything", "", "", false},
		{"storage", "", "", false},
	}
	for _, tt := range tests {
		t.Run(string(tt.name), func(t *testing.T) {
			r, g, ok := CountedBy(tt.name)
			if r != tt.resource || g != tt.group || ok != tt.ok {
				t.Fatalf("CountedBy = %q, %q, %v; want %q, %q, %v", r, g, ok, tt.resource, tt.group, tt.ok)
			}
		})
	}
}

func TestClaimUsage(t *testing.T) {
	now := time.Unix(1000, 0)
	beta := claim("", "1Gi")
	beta.Annotations = map[string]string{corev1.BetaStorageClassAnnotation: "old"}
	grown := claim("gold", "1Gi")
	grown.Status.AllocatedResources = list("storage", "3Gi")
	tests := []struct {
		name string
		pvc  *corev1.PersistentVolumeClaim
		want corev1.ResourceList
	}{
		{"a claim without a class counts its request", claim("", "500Mi"),
			list("count/persistentvolumeclaims", "1", "persistentvolumeclaims", "1", "requests.storage", "500Mi")},
		{"a request in fractions of a byte counts whole bytes", claim("", "1500m"),
			list("count/persistentvolumeclaims", "1", "persistentvolumeclaims", "1", "requests.storage", "2")},
		{"the beta annotation names the class", beta,
			list("count/persistentvolumeclaims", "1", "persistentvolumeclaims", "1", "requests.storage", "1Gi",
				"old.storageclass.storage.k8s.io/persistentvolumeclaims", "1", "old.storageclass.storage.k8s.io/requests.storage", "1Gi")},
		{"an allocation larger than the request counts instead", grown,
			list("count/persistentvolumeclaims", "1", "persistentvolumeclaims", "1", "requests.storage", "3Gi",
				"gold.storageclass.storage.k8s.io/persistentvolumeclaims", "1", "gold.storageclass.storage.k8s.io/requests.storage", "3Gi")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Usage("persistentvolumeclaims", "", tt.pvc, now); String(got) != String(tt.want) {
				t.Fatalf("usage %s, want %s", String(got), String(tt.want))
			}
		})
	}
	t.Run("only pods, Services and claims use more than their count", func(t *testing.T) {
		for _, k := range []struct{ resource, group string }{{"pods", ""}, {"services", ""}, {"persistentvolumeclaims", ""}} {
			if CountsOnly(k.resource, k.group) {
				t.Errorf("CountsOnly(%s) = true", k.resource)
			}
		}
		for _, k := range []struct{ resource, group string }{{"configmaps", ""}, {"statefulsets", "apps"}, {"pods", "example.com"}} {
			if !CountsOnly(k.resource, k.group) {
				t.Errorf("CountsOnly(%s.%s) = false", k.resource, k.group)
			}
		}
	})
}
