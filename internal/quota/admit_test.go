package quota

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func list(pairs ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(pairs); i += 2 {
		out[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

func quotaOf(name string, hard, used corev1.ResourceList) *corev1.ResourceQuota {
	return &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec: corev1.ResourceQuotaSpec{Hard: hard}, Status: corev1.ResourceQuotaStatus{Hard: hard, Used: used}}
}

func pod(req, lim corev1.ResourceList) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Requests: req, Limits: lim}}}}}
}

func claim(class, storage string) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"},
		Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{Requests: list("storage", storage)}}}
	if class != "" {
		c.Spec.StorageClassName = &class
	}
	return c
}

func TestAdmit(t *testing.T) {
	now := time.Unix(1000, 0)
	tests := []struct {
		name     string
		resource string
		group    string
		obj      runtime.Object
		old      runtime.Object // an update's previous object
		quotas   []*corev1.ResourceQuota
		wantErr  string
		wantUsed corev1.ResourceList // of the first charged quota
	}{
		{
			name: "a pod within the quota is charged", resource: "pods",
			obj:      pod(list("cpu", "100m"), nil),
			quotas:   []*corev1.ResourceQuota{quotaOf("q", list("pods", "2", "requests.cpu", "1"), list("pods", "1", "requests.cpu", "100m"))},
			wantUsed: list("pods", "2", "requests.cpu", "200m"),
		},
		{
			name: "the pod one past the limit is refused with upstream's message", resource: "pods",
			obj:     pod(nil, nil),
			quotas:  []*corev1.ResourceQuota{quotaOf("q", list("pods", "2"), list("pods", "2"))},
			wantErr: "exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2",
		},
		{
			name: "a quota on cpu needs every container to request cpu", resource: "pods",
			obj:     pod(nil, nil),
			quotas:  []*corev1.ResourceQuota{quotaOf("q", list("requests.cpu", "1", "limits.memory", "1Gi"), list("requests.cpu", "0", "limits.memory", "0"))},
			wantErr: "failed quota: q: must specify limits.memory for: app; requests.cpu for: app",
		},
		{
			name: "a quota whose usage is not computed yet refuses", resource: "pods",
			obj:     pod(nil, nil),
			quotas:  []*corev1.ResourceQuota{quotaOf("q", list("pods", "2"), nil)},
			wantErr: "status unknown for quota: q, resources: pods",
		},
		{
			name: "an object count charges count/<resource>.<group>", resource: "deployments", group: "apps",
			obj:     &corev1.ConfigMap{},
			quotas:  []*corev1.ResourceQuota{quotaOf("q", list("count/deployments.apps", "1"), list("count/deployments.apps", "1"))},
			wantErr: "exceeded quota: q, requested: count/deployments.apps=1, used: count/deployments.apps=1, limited: count/deployments.apps=1",
		},
		{
			name: "a NodePort Service counts its node ports", resource: "services",
			obj: &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort,
				Ports: []corev1.ServicePort{{Port: 80}, {Port: 443}}}},
			quotas:  []*corev1.ResourceQuota{quotaOf("q", list("services.nodeports", "2", "services", "5"), list("services.nodeports", "1", "services", "0"))},
			wantErr: "exceeded quota: q, requested: services.nodeports=2, used: services.nodeports=1, limited: services.nodeports=2",
		},
		{
			name: "a Service turned NodePort is charged its node ports, not its count again", resource: "services",
			obj:      &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80}}}},
			old:      &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Ports: []corev1.ServicePort{{Port: 80}}}},
			quotas:   []*corev1.ResourceQuota{quotaOf("q", list("services.nodeports", "2", "services", "1"), list("services.nodeports", "0", "services", "1"))},
			wantUsed: list("services.nodeports", "1", "services", "1"),
		},
		{
			name: "a Service turned NodePort past the limit is refused", resource: "services",
			obj:     &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80}}}},
			old:     &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Ports: []corev1.ServicePort{{Port: 80}}}},
			quotas:  []*corev1.ResourceQuota{quotaOf("q", list("services.nodeports", "0"), list("services.nodeports", "0"))},
			wantErr: "exceeded quota: q, requested: services.nodeports=1, used: services.nodeports=0, limited: services.nodeports=0",
		},
		{
			name: "a NodePort Service turned ClusterIP charges nothing (the controller frees its ports)", resource: "services",
			obj:    &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Ports: []corev1.ServicePort{{Port: 80}}}},
			old:    &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80}}}},
			quotas: []*corev1.ResourceQuota{quotaOf("q", list("services.nodeports", "0"), list("services.nodeports", "1"))},
		},
		{
			name: "a claim grown by a resize is charged the growth", resource: "persistentvolumeclaims",
			obj:      claim("gold", "3Gi"),
			old:      claim("gold", "1Gi"),
			quotas:   []*corev1.ResourceQuota{quotaOf("q", list("requests.storage", "4Gi", "persistentvolumeclaims", "1"), list("requests.storage", "1Gi", "persistentvolumeclaims", "1"))},
			wantUsed: list("requests.storage", "3Gi", "persistentvolumeclaims", "1"),
		},
		{
			name: "a claim grown past the limit is refused with upstream's message", resource: "persistentvolumeclaims",
			obj:     claim("gold", "3Gi"),
			old:     claim("gold", "1Gi"),
			quotas:  []*corev1.ResourceQuota{quotaOf("q", list("gold.storageclass.storage.k8s.io/requests.storage", "2Gi"), list("gold.storageclass.storage.k8s.io/requests.storage", "1Gi"))},
			wantErr: "exceeded quota: q, requested: gold.storageclass.storage.k8s.io/requests.storage=2Gi, used: gold.storageclass.storage.k8s.io/requests.storage=1Gi, limited: gold.storageclass.storage.k8s.io/requests.storage=2Gi",
		},
		{
			name: "the legacy name of a core count is charged", resource: "configmaps",
			obj:      &corev1.ConfigMap{},
			quotas:   []*corev1.ResourceQuota{quotaOf("q", list("configmaps", "3"), list("configmaps", "1"))},
			wantUsed: list("configmaps", "2"),
		},
		{
			name: "a claim is charged its count and storage request, and both again under its class", resource: "persistentvolumeclaims",
			obj: claim("gold", "1Gi"),
			quotas: []*corev1.ResourceQuota{quotaOf("q",
				list("persistentvolumeclaims", "2", "requests.storage", "5Gi", "gold.storageclass.storage.k8s.io/requests.storage", "2Gi",
					"gold.storageclass.storage.k8s.io/persistentvolumeclaims", "2", "silver.storageclass.storage.k8s.io/requests.storage", "1Gi"),
				list("persistentvolumeclaims", "1", "requests.storage", "1Gi", "gold.storageclass.storage.k8s.io/requests.storage", "1Gi",
					"gold.storageclass.storage.k8s.io/persistentvolumeclaims", "1", "silver.storageclass.storage.k8s.io/requests.storage", "0"))},
			wantUsed: list("persistentvolumeclaims", "2", "requests.storage", "2Gi", "gold.storageclass.storage.k8s.io/requests.storage", "2Gi",
				"gold.storageclass.storage.k8s.io/persistentvolumeclaims", "2", "silver.storageclass.storage.k8s.io/requests.storage", "0"),
		},
		{
			name: "the claim one past the limit is refused with upstream's message", resource: "persistentvolumeclaims",
			obj:     claim("", "1Gi"),
			quotas:  []*corev1.ResourceQuota{quotaOf("q", list("persistentvolumeclaims", "1", "requests.storage", "1Gi"), list("persistentvolumeclaims", "1", "requests.storage", "1Gi"))},
			wantErr: "exceeded quota: q, requested: persistentvolumeclaims=1,requests.storage=1Gi, used: persistentvolumeclaims=1,requests.storage=1Gi, limited: persistentvolumeclaims=1,requests.storage=1Gi",
		},
		{
			name: "a quota on requests.storage does not concern pods", resource: "pods",
			obj:    pod(nil, nil),
			quotas: []*corev1.ResourceQuota{quotaOf("q", list("requests.storage", "1Gi"), nil)},
		},
		{
			name: "a quota scoped to BestEffort does not cover a pod with requests", resource: "pods",
			obj: pod(list("cpu", "1"), nil),
			quotas: []*corev1.ResourceQuota{func() *corev1.ResourceQuota {
				q := quotaOf("q", list("pods", "0"), list("pods", "0"))
				q.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}
				return q
			}()},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			charged, err := Admit(tt.resource, tt.group, tt.obj, tt.old, tt.quotas, now)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantUsed == nil {
				if len(charged) != 0 {
					t.Fatalf("charged %d quotas, want none", len(charged))
				}
				return
			}
			if len(charged) != 1 || String(charged[0].Status.Used) != String(tt.wantUsed) {
				t.Fatalf("charged %v, want used %s", charged, String(tt.wantUsed))
			}
			if String(tt.quotas[0].Status.Used) == String(tt.wantUsed) {
				t.Fatal("the quota read was changed in place")
			}
		})
	}
}
