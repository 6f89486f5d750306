package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"minik/internal/testcluster"
)

// csiAndDRAObjects is one object of each storage.k8s.io CSI kind and
// resource.k8s.io kind that upstream components (kube-scheduler first)
// watch, as a user would apply them.
const csiAndDRAObjects = `
apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {name: hostpath.csi.k8s.io}
spec: {podInfoOnMount: true}
---
apiVersion: storage.k8s.io/v1
kind: CSINode
metadata: {name: node-1}
spec:
  drivers:
  - {name: hostpath.csi.k8s.io, nodeID: node-1, topologyKeys: [topology.hostpath.csi/node], allocatable: {count: 10}}
---
apiVersion: storage.k8s.io/v1
kind: CSIStorageCapacity
metadata: {name: csisc-node-1}
storageClassName: local-path
capacity: 100Gi
nodeTopology: {matchLabels: {topology.hostpath.csi/node: node-1}}
---
apiVersion: storage.k8s.io/v1
kind: VolumeAttachment
metadata: {name: csi-0001}
spec: {attacher: hostpath.csi.k8s.io, nodeName: node-1, source: {persistentVolumeName: pv-1}}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  selectors:
  - cel: {expression: 'device.driver == "gpu.example.com"'}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: node-1-gpu}
spec:
  driver: gpu.example.com
  nodeName: node-1
  pool: {name: node-1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    attributes: {model: {string: T4}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: gpu}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.example.com}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: gpu}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: gpu.example.com}
---
apiVersion: resource.k8s.io/v1
kind: DeviceTaintRule
metadata: {name: broken-gpu}
spec:
  deviceSelector: {driver: gpu.example.com, device: gpu-0}
  taint: {key: example.com/broken, value: fan, effect: NoSchedule}
`

func TestKubectlServesCSIAndDRAKinds(t *testing.T) {
	c := testcluster.StartAPIOnly(t)

	t.Run("apply creates one of each kind", func(t *testing.T) {
		out := c.MustKubectl(t, csiAndDRAObjects, "apply", "-f", "-")
		for _, want := range []string{"csidriver.storage.k8s.io/hostpath.csi.k8s.io created", "csinode.storage.k8s.io/node-1 created",
			"csistoragecapacity.storage.k8s.io/csisc-node-1 created", "volumeattachment.storage.k8s.io/csi-0001 created",
			"deviceclass.resource.k8s.io/gpu.example.com created", "resourceslice.resource.k8s.io/node-1-gpu created",
			"resourceclaim.resource.k8s.io/gpu created", "resourceclaimtemplate.resource.k8s.io/gpu created",
			"devicetaintrule.resource.k8s.io/broken-gpu created"} {
			if !strings.Contains(out, want) {
				t.Errorf("apply misses %q:\n%s", want, out)
			}
		}
		// The claim and its template say "configured" again, as against
		// kube-apiserver: their requests are an atomic list whose items
		// the server defaults (allocationMode, count), so kubectl's patch
		// replaces the list; the server defaults it back to the same.
		out = c.MustKubectl(t, csiAndDRAObjects, "apply", "-f", "-")
		if strings.Count(out, "unchanged") != 7 || !strings.Contains(out, "resourceclaim.resource.k8s.io/gpu configured") {
			t.Errorf("a second apply should change nothing but the defaulted lists:\n%s", out)
		}
	})
	t.Run("get prints upstream's columns", func(t *testing.T) {
		for _, tc := range []struct{ resource, header, row string }{
			{"csidrivers", "NAME ATTACHREQUIRED PODINFOONMOUNT STORAGECAPACITY TOKENREQUESTS REQUIRESREPUBLISH MODES AGE",
				"hostpath.csi.k8s.io true true false <unset> false Persistent"},
			{"csinodes", "NAME DRIVERS AGE", "node-1 1"},
			{"csistoragecapacities", "NAME STORAGECLASSNAME CAPACITY", "csisc-node-1 local-path 100Gi"},
			{"volumeattachments", "NAME ATTACHER PV NODE ATTACHED AGE", "csi-0001 hostpath.csi.k8s.io pv-1 node-1 false"},
			{"deviceclasses", "NAME AGE", "gpu.example.com"},
			{"resourceslices", "NAME NODE DRIVER POOL AGE", "node-1-gpu node-1 gpu.example.com node-1"},
			{"resourceclaims", "NAME STATE AGE", "gpu pending"},
			{"resourceclaimtemplates", "NAME AGE", "gpu"},
			{"devicetaintrules", "NAME KEY VALUE EFFECT TIMEADDED AGE", "broken-gpu example.com/broken fan NoSchedule"},
		} {
			out := strings.Join(strings.Fields(c.MustKubectl(t, "", "get", tc.resource)), " ")
			if !strings.HasPrefix(out, tc.header) || !strings.Contains(out, tc.row) {
				t.Errorf("kubectl get %s:\n%s\nwant header %q and row %q", tc.resource, out, tc.header, tc.row)
			}
		}
	})
	t.Run("the server filled in upstream's defaults", func(t *testing.T) {
		for _, tc := range []struct{ args, want string }{
			{"csidriver hostpath.csi.k8s.io -o jsonpath={.spec.attachRequired},{.spec.fsGroupPolicy},{.spec.volumeLifecycleModes[0]}", "true,ReadWriteOnceWithFSType,Persistent"},
			{"resourceclaim gpu -o jsonpath={.spec.devices.requests[0].exactly.allocationMode},{.spec.devices.requests[0].exactly.count}", "ExactCount,1"},
			{"deviceclass gpu.example.com -o jsonpath={.metadata.generation}", "1"},
		} {
			if got := c.MustKubectl(t, "", append([]string{"get"}, strings.Fields(tc.args)...)...); got != tc.want {
				t.Errorf("kubectl get %s = %q, want %q", tc.args, got, tc.want)
			}
		}
		if got := c.MustKubectl(t, "", "get", "devicetaintrule", "broken-gpu", "-o", "jsonpath={.spec.taint.timeAdded}"); got == "" {
			t.Error("the taint has no timeAdded")
		}
	})
	t.Run("a changed device class counts a new generation", func(t *testing.T) {
		c.MustKubectl(t, "", "patch", "deviceclass", "gpu.example.com", "--type=merge", "-p", `{"spec":{"extendedResourceName":"example.com/gpu"}}`)
		if got := c.MustKubectl(t, "", "get", "deviceclass", "gpu.example.com", "-o", "jsonpath={.metadata.generation}"); got != "2" {
			t.Errorf("generation = %q, want 2", got)
		}
	})
	t.Run("an invalid object is refused with upstream's causes", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		const bad = `{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "bad"},
			"spec": {"devices": {"requests": [{"name": "gpu"}]}}}`
		out, err := c.Kubectl(ctx, bad, "apply", "-f", "-")
		if err == nil || !strings.Contains(out, `The ResourceClaim "bad" is invalid: spec.devices.requests[0]: Required value: exactly one of `+"`exactly` or `firstAvailable` is required") {
			t.Errorf("want 422 with the cause, got %v:\n%s", err, out)
		}
		out, err = c.Kubectl(ctx, "", "patch", "resourceclaim", "gpu", "--type=merge", "-p", `{"spec":{"devices":{"requests":[{"name":"two","exactly":{"deviceClassName":"gpu.example.com"}}]}}}`)
		if err == nil || !strings.Contains(out, "spec: Invalid value") || !strings.Contains(out, "field is immutable") {
			t.Errorf("a claim's spec is immutable, got %v:\n%s", err, out)
		}
	})
	t.Run("server-side apply owns the fields it sets", func(t *testing.T) {
		const rule = `{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": "ssa"},
			"spec": {"taint": {"key": "example.com/ssa", "effect": "NoSchedule"}}}`
		if out := c.MustKubectl(t, rule, "apply", "--server-side", "--field-manager", "ops", "-f", "-"); !strings.Contains(out, "devicetaintrule.resource.k8s.io/ssa serverside-applied") {
			t.Fatalf("apply --server-side: %s", out)
		}
		if got := c.MustKubectl(t, "", "get", "devicetaintrule", "ssa", "-o", "jsonpath={.metadata.managedFields[0].manager}"); got != "ops" {
			t.Errorf("manager = %q, want ops", got)
		}
	})
	t.Run("api-resources and explain know the kinds", func(t *testing.T) {
		out := c.MustKubectl(t, "", "api-resources", "--api-group=resource.k8s.io", "-o", "name")
		for _, want := range []string{"deviceclasses.resource.k8s.io", "devicetaintrules.resource.k8s.io", "resourceclaims.resource.k8s.io",
			"resourceclaimtemplates.resource.k8s.io", "resourceslices.resource.k8s.io"} {
			if !strings.Contains(out, want) {
				t.Errorf("api-resources misses %s:\n%s", want, out)
			}
		}
		if out := c.MustKubectl(t, "", "explain", "resourceclaim.spec.devices.requests.exactly"); !strings.Contains(out, "deviceClassName") {
			t.Errorf("explain:\n%s", out)
		}
	})
	t.Run("the scheduler may read what upstream's scheduler reads", func(t *testing.T) {
		for _, r := range []string{"csinodes.storage.k8s.io", "csidrivers.storage.k8s.io", "csistoragecapacities.storage.k8s.io",
			"volumeattachments.storage.k8s.io", "resourceclaims.resource.k8s.io", "resourceslices.resource.k8s.io",
			"deviceclasses.resource.k8s.io", "devicetaintrules.resource.k8s.io"} {
			if out := c.MustKubectl(t, "", "auth", "can-i", "watch", r, "--as", "system:kube-scheduler", "-A"); strings.TrimSpace(out) != "yes" {
				t.Errorf("system:kube-scheduler watch %s: %q", r, out)
			}
		}
	})
}

// TestClientGoWatchesCSIAndDRAKinds runs the informers kube-scheduler
// starts for these kinds, in both wire formats, and follows objects
// through create, status update and delete.
func TestClientGoWatchesCSIAndDRAKinds(t *testing.T) {
	forEachEncoding(t, func(t *testing.T, cs *kubernetes.Clientset) {
		ctx := ctxT(t)
		factory := informers.NewSharedInformerFactory(cs, 0)
		seen := make(chan string, 100)
		record := func(kind string) cache.ResourceEventHandlerFuncs {
			return cache.ResourceEventHandlerFuncs{
				AddFunc:    func(any) { seen <- "add " + kind },
				UpdateFunc: func(any, any) { seen <- "update " + kind },
				DeleteFunc: func(any) { seen <- "delete " + kind },
			}
		}
		for kind, inf := range map[string]cache.SharedIndexInformer{
			"CSINode":            factory.Storage().V1().CSINodes().Informer(),
			"CSIDriver":          factory.Storage().V1().CSIDrivers().Informer(),
			"CSIStorageCapacity": factory.Storage().V1().CSIStorageCapacities().Informer(),
			"VolumeAttachment":   factory.Storage().V1().VolumeAttachments().Informer(),
			"ResourceClaim":      factory.Resource().V1().ResourceClaims().Informer(),
			"ResourceSlice":      factory.Resource().V1().ResourceSlices().Informer(),
			"DeviceClass":        factory.Resource().V1().DeviceClasses().Informer(),
			"DeviceTaintRule":    factory.Resource().V1().DeviceTaintRules().Informer(),
		} {
			if _, err := inf.AddEventHandler(record(kind)); err != nil {
				t.Fatal(err)
			}
		}
		factory.Start(ctx.Done())
		for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
			if !ok {
				t.Fatalf("%v never synced", typ)
			}
		}
		expect := func(want string) {
			t.Helper()
			select {
			case got := <-seen:
				if got != want {
					t.Fatalf("informer saw %q, want %q", got, want)
				}
			case <-ctx.Done():
				t.Fatalf("informer never saw %q", want)
			}
		}

		node := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "node-1"},
			Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: "hostpath.csi.k8s.io", NodeID: "node-1"}}}}
		if _, err := cs.StorageV1().CSINodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		expect("add CSINode")
		capacity := &storagev1.CSIStorageCapacity{ObjectMeta: metav1.ObjectMeta{Name: "cap"}, StorageClassName: "fast",
			Capacity: ptr.To(resource.MustParse("1Gi"))}
		if _, err := cs.StorageV1().CSIStorageCapacities("default").Create(ctx, capacity, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		expect("add CSIStorageCapacity")

		claim := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}, Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.example.com"}}}}},
			Status: resourcev1.ResourceClaimStatus{ReservedFor: []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: "x", UID: "1"}}}}
		created, err := cs.ResourceV1().ResourceClaims("default").Create(ctx, claim, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		expect("add ResourceClaim")
		if len(created.Status.ReservedFor) != 0 {
			t.Errorf("a create may not set the status: %+v", created.Status)
		}
		created.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{
			{Request: "gpu", Driver: "gpu.example.com", Pool: "node-1", Device: "gpu-0"}}}}
		allocated, err := cs.ResourceV1().ResourceClaims("default").UpdateStatus(ctx, created, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		expect("update ResourceClaim")
		if allocated.Status.Allocation == nil || allocated.Status.Allocation.Devices.Results[0].Device != "gpu-0" {
			t.Errorf("status update lost the allocation: %+v", allocated.Status)
		}

		slice := func(name, node string) *resourcev1.ResourceSlice {
			return &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: resourcev1.ResourceSliceSpec{
				Driver: "gpu.example.com", NodeName: ptr.To(node), Pool: resourcev1.ResourcePool{Name: node, ResourceSliceCount: 1}}}
		}
		for _, s := range []*resourcev1.ResourceSlice{slice("a", "node-1"), slice("b", "node-2")} {
			if _, err := cs.ResourceV1().ResourceSlices().Create(ctx, s, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			expect("add ResourceSlice")
		}
		// What a kubelet lists: its node's slices.
		mine, err := cs.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: resourcev1.ResourceSliceSelectorNodeName + "=node-2"})
		if err != nil || len(mine.Items) != 1 || mine.Items[0].Name != "b" {
			t.Fatalf("field selector spec.nodeName=node-2: %v %+v", err, mine)
		}

		if err := cs.ResourceV1().ResourceClaims("default").Delete(ctx, "gpu", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		expect("delete ResourceClaim")
		_, err = cs.ResourceV1().ResourceClaims("default").Get(ctx, "gpu", metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			t.Fatalf("get after delete: %v", err)
		}
	})
}
