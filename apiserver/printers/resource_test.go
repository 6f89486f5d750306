package printers

import (
	"testing"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestResourceTablesMatchGolden(t *testing.T) {
	deleted := objectMeta("going", time.Minute)
	deleted.DeletionTimestamp = agoPtr(time.Second)
	deletedAllocated := objectMeta("going-allocated", time.Minute)
	deletedAllocated.DeletionTimestamp = agoPtr(time.Second)
	allocation := &resourcev1.AllocationResult{}
	assertGoldenTables(t, []goldenTable{
		{
			name: "claims sum up their state: pending, allocated, reserved, deleted",
			kind: "ResourceClaim",
			objs: []runtime.Object{
				&resourcev1.ResourceClaim{ObjectMeta: objectMeta("waiting", time.Hour)},
				&resourcev1.ResourceClaim{ObjectMeta: objectMeta("allocated", time.Hour), Status: resourcev1.ResourceClaimStatus{Allocation: allocation}},
				&resourcev1.ResourceClaim{ObjectMeta: objectMeta("in-use", time.Hour), Status: resourcev1.ResourceClaimStatus{Allocation: allocation,
					ReservedFor: []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: "web", UID: "1"}}}},
				&resourcev1.ResourceClaim{ObjectMeta: deleted},
				&resourcev1.ResourceClaim{ObjectMeta: deletedAllocated, Status: resourcev1.ResourceClaimStatus{Allocation: allocation}},
			},
			golden: "resourceclaim.golden",
		},
		{
			name: "slices show their node, driver and pool",
			kind: "ResourceSlice",
			objs: []runtime.Object{
				&resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "node-1-gpu-x7k2", CreationTimestamp: ago(time.Hour)},
					Spec: resourcev1.ResourceSliceSpec{NodeName: ptr("node-1"), Driver: "gpu.example.com", Pool: resourcev1.ResourcePool{Name: "node-1"}}},
				&resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "network-attached", CreationTimestamp: ago(time.Minute)},
					Spec: resourcev1.ResourceSliceSpec{AllNodes: ptr(true), Driver: "nas.example.com", Pool: resourcev1.ResourcePool{Name: "rack/a"}}},
			},
			golden: "resourceslice.golden",
		},
		{
			name: "taint rules show the taint and when it was added",
			kind: "DeviceTaintRule",
			objs: []runtime.Object{
				&resourcev1.DeviceTaintRule{ObjectMeta: metav1.ObjectMeta{Name: "broken-gpu", CreationTimestamp: ago(time.Hour)},
					Spec: resourcev1.DeviceTaintRuleSpec{Taint: resourcev1.DeviceTaint{Key: "example.com/broken", Value: "fan",
						Effect: resourcev1.DeviceTaintEffectNoExecute, TimeAdded: agoPtr(10 * time.Minute)}}},
				&resourcev1.DeviceTaintRule{ObjectMeta: metav1.ObjectMeta{Name: "maintenance", CreationTimestamp: ago(time.Minute)},
					Spec: resourcev1.DeviceTaintRuleSpec{Taint: resourcev1.DeviceTaint{Key: "maintenance", Effect: resourcev1.DeviceTaintEffectNoSchedule}}},
			},
			golden: "devicetaintrule.golden",
		},
		{
			name: "device classes have only a name and an age",
			kind: "DeviceClass",
			objs: []runtime.Object{
				&resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu.example.com", CreationTimestamp: ago(time.Hour)}},
			},
			golden: "deviceclass.golden",
		},
	})
}
