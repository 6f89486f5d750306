package defaults

import (
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ResourceClaimSpec fills in upstream's resource.k8s.io/v1 defaults of a
// claim (or a claim template's): a request allocates exactly one device
// unless it says otherwise, and a toleration without an operator means
// Equal. Results in an allocation get the same toleration default.
func ResourceClaimSpec(spec *resourcev1.ResourceClaimSpec) {
	for i := range spec.Devices.Requests {
		r := &spec.Devices.Requests[i]
		if r.Exactly != nil {
			allocationMode(&r.Exactly.AllocationMode, &r.Exactly.Count)
			tolerations(r.Exactly.Tolerations)
		}
		for j := range r.FirstAvailable {
			sub := &r.FirstAvailable[j]
			allocationMode(&sub.AllocationMode, &sub.Count)
			tolerations(sub.Tolerations)
		}
	}
}

// ResourceClaim defaults the claim's spec and the tolerations recorded
// in its allocation.
func ResourceClaim(c *resourcev1.ResourceClaim) {
	ResourceClaimSpec(&c.Spec)
	if a := c.Status.Allocation; a != nil {
		for i := range a.Devices.Results {
			tolerations(a.Devices.Results[i].Tolerations)
		}
	}
}

func allocationMode(mode *resourcev1.DeviceAllocationMode, count *int64) {
	if *mode == "" {
		*mode = resourcev1.DeviceAllocationModeExactCount
	}
	if *mode == resourcev1.DeviceAllocationModeExactCount && *count == 0 {
		*count = 1
	}
}

func tolerations(ts []resourcev1.DeviceToleration) {
	for i := range ts {
		if ts[i].Operator == "" {
			ts[i].Operator = resourcev1.DeviceTolerationOpEqual
		}
	}
}

// DeviceTaintTimes stamps device taints with the time they were added,
// as upstream's SetDefaults_DeviceTaint does when it decodes a
// DeviceTaintRule or a ResourceSlice: now, to the second, where a taint
// has no timeAdded. A DeviceTaintRule whose effect changes gets a new
// timeAdded too unless the client set one (upstream's strategy), so the
// time says when this effect began. old is nil on create. Other types
// are left untouched.
func DeviceTaintTimes(obj, old runtime.Object, now time.Time) {
	stamp := metav1.NewTime(now.Truncate(time.Second))
	switch o := obj.(type) {
	case *resourcev1.DeviceTaintRule:
		taint := &o.Spec.Taint
		if prev, ok := old.(*resourcev1.DeviceTaintRule); ok {
			if taint.Effect != prev.Spec.Taint.Effect && taint.TimeAdded.Equal(prev.Spec.Taint.TimeAdded) {
				taint.TimeAdded = &stamp
			}
		}
		if taint.TimeAdded == nil {
			taint.TimeAdded = &stamp
		}
	case *resourcev1.ResourceSlice:
		for i := range o.Spec.Devices {
			for j := range o.Spec.Devices[i].Taints {
				if t := &o.Spec.Devices[i].Taints[j]; t.TimeAdded == nil {
					t.TimeAdded = &stamp
				}
			}
		}
	}
}
