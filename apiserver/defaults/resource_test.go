package defaults

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

func TestResourceClaimDefaults(t *testing.T) {
	exact := resourcev1.DeviceAllocationModeExactCount
	tests := []struct {
		name string
		in   resourcev1.DeviceRequest
		want resourcev1.DeviceRequest
	}{
		{
			name: "an exact request allocates one device, and a toleration without operator is Equal",
			in: resourcev1.DeviceRequest{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu",
				Tolerations: []resourcev1.DeviceToleration{{Key: "k", Value: "v"}}}},
			want: resourcev1.DeviceRequest{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu", AllocationMode: exact, Count: 1,
				Tolerations: []resourcev1.DeviceToleration{{Key: "k", Value: "v", Operator: resourcev1.DeviceTolerationOpEqual}}}},
		},
		{
			name: "a request for all devices gets no count",
			in: resourcev1.DeviceRequest{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu",
				AllocationMode: resourcev1.DeviceAllocationModeAll}},
			want: resourcev1.DeviceRequest{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu",
				AllocationMode: resourcev1.DeviceAllocationModeAll}},
		},
		{
			name: "each subrequest is defaulted, and a count given is kept",
			in: resourcev1.DeviceRequest{Name: "gpu", FirstAvailable: []resourcev1.DeviceSubRequest{
				{Name: "big", DeviceClassName: "big"}, {Name: "small", DeviceClassName: "small", Count: 2}}},
			want: resourcev1.DeviceRequest{Name: "gpu", FirstAvailable: []resourcev1.DeviceSubRequest{
				{Name: "big", DeviceClassName: "big", AllocationMode: exact, Count: 1},
				{Name: "small", DeviceClassName: "small", AllocationMode: exact, Count: 2}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			claim := &resourcev1.ResourceClaim{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{tt.in}}}}
			Object(claim)
			if diff := cmp.Diff(tt.want, claim.Spec.Devices.Requests[0]); diff != "" {
				t.Errorf("claim (-want +got):\n%s", diff)
			}
			template := &resourcev1.ResourceClaimTemplate{Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{
				Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{tt.in}}}}}
			Object(template)
			if diff := cmp.Diff(tt.want, template.Spec.Spec.Devices.Requests[0]); diff != "" {
				t.Errorf("template (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCSIDriverDefaults(t *testing.T) {
	tests := []struct {
		name string
		in   storagev1.CSIDriverSpec
		want storagev1.CSIDriverSpec
	}{
		{
			name: "a bare driver needs attaching, gets no pod info, and serves persistent volumes",
			want: storagev1.CSIDriverSpec{AttachRequired: ptr.To(true), PodInfoOnMount: ptr.To(false), StorageCapacity: ptr.To(false),
				FSGroupPolicy:        ptr.To(storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy),
				VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent},
				RequiresRepublish:    ptr.To(false), SELinuxMount: ptr.To(false), PreventPodSchedulingIfMissing: ptr.To(false)},
		},
		{
			name: "what the driver says is kept",
			in: storagev1.CSIDriverSpec{AttachRequired: ptr.To(false), PodInfoOnMount: ptr.To(true), FSGroupPolicy: ptr.To(storagev1.FileFSGroupPolicy),
				VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecycleEphemeral}},
			want: storagev1.CSIDriverSpec{AttachRequired: ptr.To(false), PodInfoOnMount: ptr.To(true), StorageCapacity: ptr.To(false),
				FSGroupPolicy:        ptr.To(storagev1.FileFSGroupPolicy),
				VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecycleEphemeral},
				RequiresRepublish:    ptr.To(false), SELinuxMount: ptr.To(false), PreventPodSchedulingIfMissing: ptr.To(false)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &storagev1.CSIDriver{Spec: tt.in}
			Object(d)
			if diff := cmp.Diff(tt.want, d.Spec); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestDeviceTaintTimes(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	stamp := metav1.NewTime(now.Truncate(time.Second))
	earlier := metav1.NewTime(now.Add(-time.Hour).Truncate(time.Second))
	rule := func(effect resourcev1.DeviceTaintEffect, added *metav1.Time) *resourcev1.DeviceTaintRule {
		return &resourcev1.DeviceTaintRule{Spec: resourcev1.DeviceTaintRuleSpec{Taint: resourcev1.DeviceTaint{Key: "k", Effect: effect, TimeAdded: added}}}
	}
	sliceTaint := func(added *metav1.Time) *resourcev1.ResourceSlice {
		return &resourcev1.ResourceSlice{Spec: resourcev1.ResourceSliceSpec{Devices: []resourcev1.Device{{Name: "d",
			Taints: []resourcev1.DeviceTaint{{Key: "k", Effect: resourcev1.DeviceTaintEffectNoSchedule, TimeAdded: added}}}}}}
	}
	tests := []struct {
		name     string
		obj, old runtime.Object
		want     runtime.Object
	}{
		{name: "a new rule's taint is added now, to the second",
			obj: rule(resourcev1.DeviceTaintEffectNoSchedule, nil), want: rule(resourcev1.DeviceTaintEffectNoSchedule, &stamp)},
		{name: "a time the client gives is kept",
			obj: rule(resourcev1.DeviceTaintEffectNoSchedule, &earlier), want: rule(resourcev1.DeviceTaintEffectNoSchedule, &earlier)},
		{name: "an update that keeps the effect keeps the time", old: rule(resourcev1.DeviceTaintEffectNoSchedule, &earlier),
			obj: rule(resourcev1.DeviceTaintEffectNoSchedule, &earlier), want: rule(resourcev1.DeviceTaintEffectNoSchedule, &earlier)},
		{name: "a new effect starts now", old: rule(resourcev1.DeviceTaintEffectNoSchedule, &earlier),
			obj: rule(resourcev1.DeviceTaintEffectNoExecute, &earlier), want: rule(resourcev1.DeviceTaintEffectNoExecute, &stamp)},
		{name: "a slice's device taints are stamped too",
			obj: sliceTaint(nil), want: sliceTaint(&stamp)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			DeviceTaintTimes(tt.obj, tt.old, now)
			if diff := cmp.Diff(tt.want, tt.obj); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
