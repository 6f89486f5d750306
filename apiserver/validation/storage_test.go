package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func storageList(q string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(q)}
}

func pv(edits ...func(*corev1.PersistentVolume)) *corev1.PersistentVolume {
	v := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1", ResourceVersion: "1"},
		Spec: corev1.PersistentVolumeSpec{Capacity: storageList("1Gi"), AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data/pv-1"}}}}
	return defaulted(v, edits)
}

func pvc(edits ...func(*corev1.PersistentVolumeClaim)) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default", ResourceVersion: "1"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: storageList("1Gi")}}}
	return defaulted(c, edits)
}

func storageClass(edits ...func(*storagev1.StorageClass)) *storagev1.StorageClass {
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast", ResourceVersion: "1"}, Provisioner: "example.com/fast"}
	return defaulted(sc, edits)
}

func TestStorageCreate(t *testing.T) {
	local := corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/data/x"}}
	tests := []struct {
		name       string
		obj        runtime.Object
		namespaced bool
		want       []want
	}{
		{name: "a defaulted hostPath volume is valid", obj: pv()},
		{name: "a volume without access modes is rejected", obj: pv(func(v *corev1.PersistentVolume) { v.Spec.AccessModes = nil }),
			want: []want{{field.ErrorTypeRequired, "spec.accessModes", ""}}},
		{name: "ReadWriteOncePod may not be combined with another mode",
			obj: pv(func(v *corev1.PersistentVolume) {
				v.Spec.AccessModes = append(v.Spec.AccessModes, corev1.ReadWriteOncePod)
			}),
			want: []want{{field.ErrorTypeForbidden, "spec.accessModes", "may not use ReadWriteOncePod with other access modes"}}},
		{name: "a volume without capacity is rejected", obj: pv(func(v *corev1.PersistentVolume) { v.Spec.Capacity = nil }),
			want: []want{{field.ErrorTypeRequired, "spec.capacity", ""}, {field.ErrorTypeNotSupported, "spec.capacity", "supported values"}}},
		{name: "a zero capacity is rejected", obj: pv(func(v *corev1.PersistentVolume) { v.Spec.Capacity = storageList("0") }),
			want: []want{{field.ErrorTypeInvalid, "spec.capacity[storage]", "must be greater than zero"}}},
		{name: "a volume without a source is rejected", obj: pv(func(v *corev1.PersistentVolume) { v.Spec.HostPath = nil }),
			want: []want{{field.ErrorTypeRequired, "spec", "must specify a volume type"}}},
		{name: "a volume with two sources is rejected", obj: pv(func(v *corev1.PersistentVolume) { v.Spec.Local = &corev1.LocalVolumeSource{Path: "/x"} }),
			want: []want{{field.ErrorTypeForbidden, "spec.local", "may not specify more than 1 volume type"}}},
		{name: "a local volume needs node affinity", obj: pv(func(v *corev1.PersistentVolume) { v.Spec.PersistentVolumeSource = local }),
			want: []want{{field.ErrorTypeRequired, "spec.nodeAffinity", "Local volume requires node affinity"}}},
		{name: "an unknown reclaim policy is rejected", obj: pv(func(v *corev1.PersistentVolume) { v.Spec.PersistentVolumeReclaimPolicy = "Keep" }),
			want: []want{{field.ErrorTypeNotSupported, "spec.persistentVolumeReclaimPolicy", "supported values"}}},

		{name: "a defaulted claim is valid", obj: pvc(), namespaced: true},
		{name: "a claim without access modes is rejected", namespaced: true, obj: pvc(func(c *corev1.PersistentVolumeClaim) { c.Spec.AccessModes = nil }),
			want: []want{{field.ErrorTypeRequired, "spec.accessModes", "at least 1 access mode is required"}}},
		{name: "a claim without a storage request is rejected", namespaced: true, obj: pvc(func(c *corev1.PersistentVolumeClaim) { c.Spec.Resources.Requests = nil }),
			want: []want{{field.ErrorTypeRequired, "spec.resources[storage]", ""}}},
		{name: "a claim asking for a negative size is rejected", namespaced: true,
			obj:  pvc(func(c *corev1.PersistentVolumeClaim) { c.Spec.Resources.Requests = storageList("-1Gi") }),
			want: []want{{field.ErrorTypeInvalid, "spec.resources[storage]", "must be greater than zero"}}},
		{name: "a claim with an invalid class name is rejected", namespaced: true,
			obj:  pvc(func(c *corev1.PersistentVolumeClaim) { c.Spec.StorageClassName = ptr.To("Not_A_Name") }),
			want: []want{{field.ErrorTypeInvalid, "spec.storageClassName", "RFC 1123"}}},

		{name: "a defaulted storage class is valid", obj: storageClass()},
		{name: "a class without a provisioner is rejected", obj: storageClass(func(sc *storagev1.StorageClass) { sc.Provisioner = "" }),
			want: []want{{field.ErrorTypeRequired, "provisioner", ""}}},
		{name: "a class may not recycle", obj: storageClass(func(sc *storagev1.StorageClass) { sc.ReclaimPolicy = ptr.To(corev1.PersistentVolumeReclaimRecycle) }),
			want: []want{{field.ErrorTypeNotSupported, "reclaimPolicy", "supported values"}}},
		{name: "a class with an unknown binding mode is rejected", obj: storageClass(func(sc *storagev1.StorageClass) { sc.VolumeBindingMode = ptr.To(storagev1.VolumeBindingMode("Later")) }),
			want: []want{{field.ErrorTypeNotSupported, "volumeBindingMode", "supported values"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertErrors(t, Create(tt.obj, tt.namespaced), tt.want)
		})
	}
}

func TestStorageUpdate(t *testing.T) {
	bound := func(c *corev1.PersistentVolumeClaim) { c.Status.Phase = corev1.ClaimBound }
	tests := []struct {
		name     string
		obj, old runtime.Object
		ns       bool
		want     []want
	}{
		{name: "the binder may set a claim's volumeName once", ns: true, old: pvc(),
			obj: pvc(func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = "pv-1" })},
		{name: "a claim's volumeName may not change once set", ns: true,
			old:  pvc(func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = "pv-1" }),
			obj:  pvc(func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = "pv-2" }),
			want: []want{{field.ErrorTypeForbidden, "spec", "spec is immutable after creation"}}},
		{name: "a bound claim may ask for more storage", ns: true, old: pvc(bound),
			obj: pvc(bound, func(c *corev1.PersistentVolumeClaim) { c.Spec.Resources.Requests = storageList("2Gi") })},
		{name: "a claim may not shrink", ns: true, old: pvc(bound),
			obj:  pvc(bound, func(c *corev1.PersistentVolumeClaim) { c.Spec.Resources.Requests = storageList("500Mi") }),
			want: []want{{field.ErrorTypeForbidden, "spec.resources.requests.storage", "field can not be less than previous value"}}},
		{name: "a claim's access modes are immutable", ns: true, old: pvc(),
			obj: pvc(func(c *corev1.PersistentVolumeClaim) {
				c.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
			}),
			want: []want{{field.ErrorTypeForbidden, "spec", "spec is immutable after creation"}}},
		{name: "the binder may set a volume's claimRef", old: pv(),
			obj: pv(func(v *corev1.PersistentVolume) {
				v.Spec.ClaimRef = &corev1.ObjectReference{Namespace: "default", Name: "data"}
			})},
		{name: "a volume's source is immutable", old: pv(),
			obj:  pv(func(v *corev1.PersistentVolume) { v.Spec.HostPath.Path = "/elsewhere" }),
			want: []want{{field.ErrorTypeForbidden, "spec.persistentvolumesource", "spec.persistentvolumesource is immutable after creation"}}},
		{name: "a class's provisioner is immutable", old: storageClass(),
			obj:  storageClass(func(sc *storagev1.StorageClass) { sc.Provisioner = "example.com/slow" }),
			want: []want{{field.ErrorTypeForbidden, "provisioner", "updates to provisioner are forbidden."}}},
		{name: "a class's annotations may change", old: storageClass(),
			obj: storageClass(func(sc *storagev1.StorageClass) {
				sc.Annotations = map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}
			})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertErrors(t, Update(tt.obj, tt.old, tt.ns), tt.want)
		})
	}
}
