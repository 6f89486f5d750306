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

func csiDriver(edits ...func(*storagev1.CSIDriver)) *storagev1.CSIDriver {
	d := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "hostpath.csi.k8s.io", ResourceVersion: "1"}}
	return defaulted(d, edits)
}

func csiNode(edits ...func(*storagev1.CSINode)) *storagev1.CSINode {
	n := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "node-1", ResourceVersion: "1"},
		Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: "hostpath.csi.k8s.io", NodeID: "node-1",
			TopologyKeys: []string{"topology.hostpath.csi/node"}, Allocatable: &storagev1.VolumeNodeResources{Count: ptr.To[int32](10)}}}}}
	for _, e := range edits {
		e(n)
	}
	return n
}

func storageCapacity(edits ...func(*storagev1.CSIStorageCapacity)) *storagev1.CSIStorageCapacity {
	c := &storagev1.CSIStorageCapacity{ObjectMeta: metav1.ObjectMeta{Name: "csisc-1", Namespace: "default", ResourceVersion: "1"},
		StorageClassName: "fast", Capacity: ptr.To(resource.MustParse("10Gi")),
		NodeTopology: &metav1.LabelSelector{MatchLabels: map[string]string{"topology.hostpath.csi/node": "node-1"}}}
	for _, e := range edits {
		e(c)
	}
	return c
}

func volumeAttachment(edits ...func(*storagev1.VolumeAttachment)) *storagev1.VolumeAttachment {
	va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "csi-1", ResourceVersion: "1"},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: "hostpath.csi.k8s.io", NodeName: "node-1",
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pv-1")}}}
	for _, e := range edits {
		e(va)
	}
	return va
}

func TestCSIKindsCreate(t *testing.T) {
	tests := []struct {
		name       string
		obj        runtime.Object
		namespaced bool
		want       []want
	}{
		{name: "a defaulted CSI driver is valid", obj: csiDriver()},
		{name: "a driver needs attachRequired, reported at upstream's attachedRequired path",
			obj:  csiDriver(func(d *storagev1.CSIDriver) { d.Spec.AttachRequired = nil }),
			want: []want{{field.ErrorTypeRequired, "spec.attachedRequired", ""}}},
		{name: "a driver's name must be a DNS subdomain", obj: csiDriver(func(d *storagev1.CSIDriver) { d.Name = "Not_A_Driver" }),
			want: []want{{field.ErrorTypeInvalid, "metadata.name", "RFC 1123"}}},
		{name: "a driver's token audiences are unique",
			obj: csiDriver(func(d *storagev1.CSIDriver) {
				d.Spec.TokenRequests = []storagev1.TokenRequest{{Audience: "vault"}, {Audience: "vault"}}
			}),
			want: []want{{field.ErrorTypeDuplicate, "spec.tokenRequests[1].audience", ""}}},
		{name: "a token may not expire within 10 minutes",
			obj: csiDriver(func(d *storagev1.CSIDriver) {
				d.Spec.TokenRequests = []storagev1.TokenRequest{{Audience: "vault", ExpirationSeconds: ptr.To[int64](60)}}
			}),
			want: []want{{field.ErrorTypeInvalid, "spec.tokenRequests[0].expirationSeconds", "may not specify a duration less than 10 minutes"}}},
		{name: "an unknown lifecycle mode is rejected",
			obj:  csiDriver(func(d *storagev1.CSIDriver) { d.Spec.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{"Forever"} }),
			want: []want{{field.ErrorTypeNotSupported, "spec.volumeLifecycleModes", `"Persistent", "Ephemeral"`}}},
		{name: "an unknown fsGroup policy is rejected",
			obj:  csiDriver(func(d *storagev1.CSIDriver) { d.Spec.FSGroupPolicy = ptr.To(storagev1.FSGroupPolicy("Sometimes")) }),
			want: []want{{field.ErrorTypeNotSupported, "spec.fsGroupPolicy", "supported values"}}},
		{name: "tokens in secrets need token requests",
			obj:  csiDriver(func(d *storagev1.CSIDriver) { d.Spec.ServiceAccountTokenInSecrets = ptr.To(true) }),
			want: []want{{field.ErrorTypeInvalid, "spec.serviceAccountTokenInSecrets", "no tokenRequests are specified"}}},

		{name: "a CSI node with a registered driver is valid", obj: csiNode()},
		{name: "a driver is registered once per node",
			obj:  csiNode(func(n *storagev1.CSINode) { n.Spec.Drivers = append(n.Spec.Drivers, n.Spec.Drivers[0]) }),
			want: []want{{field.ErrorTypeDuplicate, "spec.drivers[1].name", ""}}},
		{name: "a driver entry needs the node's ID in the driver",
			obj:  csiNode(func(n *storagev1.CSINode) { n.Spec.Drivers[0].NodeID = "" }),
			want: []want{{field.ErrorTypeRequired, "spec.drivers[0].nodeID", ""}}},
		{name: "an empty driver name is required, once",
			obj:  csiNode(func(n *storagev1.CSINode) { n.Spec.Drivers[0].Name = "" }),
			want: []want{{field.ErrorTypeRequired, "spec.drivers[0].name", ""}}},
		{name: "a volume limit may not be negative",
			obj:  csiNode(func(n *storagev1.CSINode) { n.Spec.Drivers[0].Allocatable.Count = ptr.To[int32](-1) }),
			want: []want{{field.ErrorTypeInvalid, "spec.drivers[0].allocatable.count", "must be greater than or equal to 0"}}},
		{name: "topology keys are qualified names, reported at the driver",
			obj:  csiNode(func(n *storagev1.CSINode) { n.Spec.Drivers[0].TopologyKeys = []string{"a/b/c"} }),
			want: []want{{field.ErrorTypeInvalid, "spec.drivers[0]", "a valid label key"}}},

		{name: "a storage capacity is valid", obj: storageCapacity(), namespaced: true},
		{name: "a capacity may not be negative", namespaced: true,
			obj:  storageCapacity(func(c *storagev1.CSIStorageCapacity) { c.Capacity = ptr.To(resource.MustParse("-1Gi")) }),
			want: []want{{field.ErrorTypeInvalid, "capacity", "must be greater than or equal to 0"}}},
		{name: "a capacity names a valid class", namespaced: true,
			obj:  storageCapacity(func(c *storagev1.CSIStorageCapacity) { c.StorageClassName = "" }),
			want: []want{{field.ErrorTypeInvalid, "storageClassName", "RFC 1123"}}},
		{name: "a capacity lives in a namespace", namespaced: true,
			obj:  storageCapacity(func(c *storagev1.CSIStorageCapacity) { c.Namespace = "" }),
			want: []want{{field.ErrorTypeRequired, "metadata.namespace", ""}}},

		{name: "an attachment of a persistent volume is valid", obj: volumeAttachment()},
		{name: "an attachment names exactly one source",
			obj:  volumeAttachment(func(va *storagev1.VolumeAttachment) { va.Spec.Source.PersistentVolumeName = nil }),
			want: []want{{field.ErrorTypeRequired, "spec.source", "must specify exactly one of inlineVolumeSpec and persistentVolumeName"}}},
		{name: "an attachment may not name two sources",
			obj: volumeAttachment(func(va *storagev1.VolumeAttachment) {
				va.Spec.Source.InlineVolumeSpec = &corev1.PersistentVolumeSpec{}
			}),
			want: []want{{field.ErrorTypeForbidden, "spec.source", "must specify exactly one of inlineVolumeSpec and persistentVolumeName"}}},
		{name: "an inline volume must be a CSI volume",
			obj: volumeAttachment(func(va *storagev1.VolumeAttachment) {
				va.Spec.Source = storagev1.VolumeAttachmentSource{InlineVolumeSpec: &corev1.PersistentVolumeSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}}}
			}),
			want: []want{{field.ErrorTypeRequired, "spec.source.inlineVolumeSpec.csi", "has to be specified in the context of inline volumes"}}},
		{name: "an attachment needs an attacher and a node",
			obj: volumeAttachment(func(va *storagev1.VolumeAttachment) {
				va.Spec.Attacher, va.Spec.NodeName = "", ""
			}),
			want: []want{{field.ErrorTypeRequired, "spec.attacher", ""}, {field.ErrorTypeInvalid, "spec.nodeName", "RFC 1123"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertErrors(t, Create(tt.obj, tt.namespaced), tt.want)
		})
	}
}

func TestCSIKindsUpdate(t *testing.T) {
	tests := []struct {
		name     string
		obj, old runtime.Object
		ns       bool
		want     []want
	}{
		{name: "a driver's attachRequired is immutable, at upstream's path", old: csiDriver(),
			obj:  csiDriver(func(d *storagev1.CSIDriver) { d.Spec.AttachRequired = ptr.To(false) }),
			want: []want{{field.ErrorTypeInvalid, "spec.attachedRequired", "field is immutable"}}},
		{name: "a driver may start publishing capacities", old: csiDriver(),
			obj: csiDriver(func(d *storagev1.CSIDriver) { d.Spec.StorageCapacity = ptr.To(true) })},
		{name: "a registered driver's volume limit may change", old: csiNode(),
			obj: csiNode(func(n *storagev1.CSINode) { n.Spec.Drivers[0].Allocatable.Count = ptr.To[int32](20) })},
		{name: "a registered driver's node ID may not change", old: csiNode(),
			obj:  csiNode(func(n *storagev1.CSINode) { n.Spec.Drivers[0].NodeID = "other" }),
			want: []want{{field.ErrorTypeInvalid, "spec.drivers", "field is immutable"}}},
		{name: "a capacity's amount may change", ns: true, old: storageCapacity(),
			obj: storageCapacity(func(c *storagev1.CSIStorageCapacity) { c.Capacity = ptr.To(resource.MustParse("5Gi")) })},
		{name: "a capacity's class may not change", ns: true, old: storageCapacity(),
			obj:  storageCapacity(func(c *storagev1.CSIStorageCapacity) { c.StorageClassName = "slow" }),
			want: []want{{field.ErrorTypeInvalid, "storageClassName", "field is immutable"}}},
		{name: "an attachment's spec may not change", old: volumeAttachment(),
			obj:  volumeAttachment(func(va *storagev1.VolumeAttachment) { va.Spec.NodeName = "node-2" }),
			want: []want{{field.ErrorTypeInvalid, "spec", "field is immutable"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertErrors(t, Update(tt.obj, tt.old, tt.ns), tt.want)
		})
	}
}

func TestCSIKindsStatusUpdate(t *testing.T) {
	tests := []struct {
		name     string
		obj, old runtime.Object
		want     []want
	}{
		{name: "an attacher reports the volume attached", old: volumeAttachment(),
			obj: volumeAttachment(func(va *storagev1.VolumeAttachment) { va.Status.Attached = true })},
		{name: "an attach error code may not be negative", old: volumeAttachment(),
			obj: volumeAttachment(func(va *storagev1.VolumeAttachment) {
				va.Status.AttachError = &storagev1.VolumeError{Message: "no", ErrorCode: ptr.To[int32](-1)}
			}),
			want: []want{{field.ErrorTypeInvalid, "status.attachError.errorCode", "must be between 0 and 2147483647, inclusive"}}},
		{name: "a node's storage health names a known status", old: csiNode(),
			obj: csiNode(func(n *storagev1.CSINode) {
				n.Status.StorageHealth = []storagev1.StorageHealth{{Name: "hostpath.csi.k8s.io",
					HealthConditions: []storagev1.StorageHealthCondition{{Status: "Fine", Reason: "Checked"}}}}
			}),
			want: []want{{field.ErrorTypeNotSupported, "status.storageHealth[0].healthConditions[0].status", "supported values"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertErrors(t, StatusUpdate(tt.obj, tt.old), tt.want)
		})
	}
}
