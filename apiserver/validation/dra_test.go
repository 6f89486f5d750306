package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"minik/apiserver/defaults"
)

func gpuRequest(name string) resourcev1.DeviceRequest {
	return resourcev1.DeviceRequest{Name: name, Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.example.com"}}
}

func resourceClaim(edits ...func(*resourcev1.ResourceClaim)) *resourcev1.ResourceClaim {
	c := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "gpu", Namespace: "default", ResourceVersion: "1"},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{gpuRequest("gpu")}}}}
	for _, e := range edits {
		e(c)
	}
	defaults.Object(c)
	return c
}

func resourceSlice(edits ...func(*resourcev1.ResourceSlice)) *resourcev1.ResourceSlice {
	s := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "node-1-gpu", ResourceVersion: "1"},
		Spec: resourcev1.ResourceSliceSpec{Driver: "gpu.example.com", NodeName: ptr.To("node-1"),
			Pool: resourcev1.ResourcePool{Name: "node-1", ResourceSliceCount: 1},
			Devices: []resourcev1.Device{{Name: "gpu-0", Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
				"model": {StringValue: ptr.To("T4")}, "gpu.example.com/driverVersion": {VersionValue: ptr.To("1.2.3")}}}}}}
	for _, e := range edits {
		e(s)
	}
	return s
}

func deviceClass(edits ...func(*resourcev1.DeviceClass)) *resourcev1.DeviceClass {
	c := &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu.example.com", ResourceVersion: "1"},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
			Expression: `device.driver == "gpu.example.com"`}}}}}
	for _, e := range edits {
		e(c)
	}
	return c
}

func deviceTaintRule(edits ...func(*resourcev1.DeviceTaintRule)) *resourcev1.DeviceTaintRule {
	r := &resourcev1.DeviceTaintRule{ObjectMeta: metav1.ObjectMeta{Name: "broken", ResourceVersion: "1"},
		Spec: resourcev1.DeviceTaintRuleSpec{DeviceSelector: &resourcev1.DeviceTaintSelector{Driver: ptr.To("gpu.example.com"), Device: ptr.To("gpu-0")},
			Taint: resourcev1.DeviceTaint{Key: "example.com/broken", Effect: resourcev1.DeviceTaintEffectNoSchedule}}}
	for _, e := range edits {
		e(r)
	}
	return r
}

func TestDRAKindsCreate(t *testing.T) {
	tests := []struct {
		name       string
		obj        runtime.Object
		namespaced bool
		want       []want
	}{
		{name: "a defaulted claim for one device is valid", obj: resourceClaim(), namespaced: true},
		{name: "a request names exactly or firstAvailable", namespaced: true,
			obj:  resourceClaim(func(c *resourcev1.ResourceClaim) { c.Spec.Devices.Requests[0].Exactly = nil }),
			want: []want{{field.ErrorTypeRequired, "spec.devices.requests[0]", "exactly one of `exactly` or `firstAvailable` is required"}}},
		{name: "request names are unique DNS labels", namespaced: true,
			obj: resourceClaim(func(c *resourcev1.ResourceClaim) {
				c.Spec.Devices.Requests = []resourcev1.DeviceRequest{gpuRequest("a"), gpuRequest("a"), gpuRequest("B_1")}
			}),
			want: []want{{field.ErrorTypeDuplicate, "spec.devices.requests[1]", ""}, {field.ErrorTypeInvalid, "spec.devices.requests[2].name", "RFC 1123 label"}}},
		{name: "an exact request needs a device class", namespaced: true,
			obj:  resourceClaim(func(c *resourcev1.ResourceClaim) { c.Spec.Devices.Requests[0].Exactly.DeviceClassName = "" }),
			want: []want{{field.ErrorTypeRequired, "spec.devices.requests[0].exactly.deviceClassName", ""}}},
		{name: "allocating all devices takes no count", namespaced: true,
			obj: resourceClaim(func(c *resourcev1.ResourceClaim) {
				c.Spec.Devices.Requests[0].Exactly.AllocationMode, c.Spec.Devices.Requests[0].Exactly.Count = resourcev1.DeviceAllocationModeAll, 2
			}),
			want: []want{{field.ErrorTypeInvalid, "spec.devices.requests[0].exactly.count", "must not be specified when allocationMode is 'All'"}}},
		{name: "an unknown allocation mode is rejected", namespaced: true,
			obj:  resourceClaim(func(c *resourcev1.ResourceClaim) { c.Spec.Devices.Requests[0].Exactly.AllocationMode = "Some" }),
			want: []want{{field.ErrorTypeNotSupported, "spec.devices.requests[0].exactly.allocationMode", `"All", "ExactCount"`}}},
		{name: "a selector needs a CEL expression", namespaced: true,
			obj: resourceClaim(func(c *resourcev1.ResourceClaim) {
				c.Spec.Devices.Requests[0].Exactly.Selectors = []resourcev1.DeviceSelector{{}}
			}),
			want: []want{{field.ErrorTypeRequired, "spec.devices.requests[0].exactly.selectors[0].cel", ""}}},
		{name: "a CEL expression is at most 10 KiB", namespaced: true,
			obj: resourceClaim(func(c *resourcev1.ResourceClaim) {
				c.Spec.Devices.Requests[0].Exactly.Selectors = []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: strings.Repeat("x", 10*1024+1)}}}
			}),
			want: []want{{field.ErrorTypeTooLong, "spec.devices.requests[0].exactly.selectors[0].cel.expression", ""}}},
		{name: "a toleration with Exists has no value", namespaced: true,
			obj: resourceClaim(func(c *resourcev1.ResourceClaim) {
				c.Spec.Devices.Requests[0].Exactly.Tolerations = []resourcev1.DeviceToleration{{Key: "k", Operator: resourcev1.DeviceTolerationOpExists, Value: "v"}}
			}),
			want: []want{{field.ErrorTypeInvalid, "spec.devices.requests[0].exactly.tolerations[0].value", "must be empty for operator `Exists`"}}},
		{name: "subrequests are tried in order and named uniquely", namespaced: true,
			obj: resourceClaim(func(c *resourcev1.ResourceClaim) {
				c.Spec.Devices.Requests[0] = resourcev1.DeviceRequest{Name: "gpu", FirstAvailable: []resourcev1.DeviceSubRequest{
					{Name: "big", DeviceClassName: "big.example.com"}, {Name: "big", DeviceClassName: "small.example.com"}}}
			}),
			want: []want{{field.ErrorTypeDuplicate, "spec.devices.requests[0].firstAvailable[1]", ""}}},
		{name: "constraints name requests of the claim", namespaced: true,
			obj: resourceClaim(func(c *resourcev1.ResourceClaim) {
				c.Spec.Devices.Constraints = []resourcev1.DeviceConstraint{{Requests: []string{"gpu", "nic"},
					MatchAttribute: ptr.To(resourcev1.FullyQualifiedName("example.com/numa"))}}
			}),
			want: []want{{field.ErrorTypeInvalid, "spec.devices.constraints[0].requests[1]", "must be the name of a request in the claim"}}},
		{name: "a matched attribute is fully qualified", namespaced: true,
			obj: resourceClaim(func(c *resourcev1.ResourceClaim) {
				c.Spec.Devices.Constraints = []resourcev1.DeviceConstraint{{MatchAttribute: ptr.To(resourcev1.FullyQualifiedName("numa"))}}
			}),
			want: []want{{field.ErrorTypeInvalid, "spec.devices.constraints[0].matchAttribute", "a fully qualified name must be a domain and a name separated by a slash"}}},
		{name: "opaque configuration is a JSON object for a named driver", namespaced: true,
			obj: resourceClaim(func(c *resourcev1.ResourceClaim) {
				c.Spec.Devices.Config = []resourcev1.DeviceClaimConfiguration{{DeviceConfiguration: resourcev1.DeviceConfiguration{
					Opaque: &resourcev1.OpaqueDeviceConfiguration{Driver: "gpu.example.com", Parameters: runtime.RawExtension{Raw: []byte(`[1]`)}}}}}
			}),
			want: []want{{field.ErrorTypeInvalid, "spec.devices.config[0].opaque.parameters", "must be a valid JSON object"}}},
		{name: "more than 32 requests are reported once", namespaced: true,
			obj: resourceClaim(func(c *resourcev1.ResourceClaim) {
				c.Spec.Devices.Requests = make([]resourcev1.DeviceRequest, 33)
			}),
			want: []want{{field.ErrorTypeTooMany, "spec.devices.requests", "must have at most 32 items"}}},
		{name: "a claim template checks its claim's spec and labels", namespaced: true,
			obj: &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: "gpu", Namespace: "default"},
				Spec: resourcev1.ResourceClaimTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "-"}},
					Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{Name: "gpu"}}}}}},
			want: []want{{field.ErrorTypeInvalid, "spec.metadata.labels", ""},
				{field.ErrorTypeRequired, "spec.spec.devices.requests[0]", "exactly one of `exactly` or `firstAvailable` is required"}}},

		{name: "a node's slice of devices is valid", obj: resourceSlice()},
		{name: "a slice says where its devices are: exactly one placement",
			obj:  resourceSlice(func(s *resourcev1.ResourceSlice) { s.Spec.AllNodes = ptr.To(true) }),
			want: []want{{field.ErrorTypeInvalid, "spec", "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set"}}},
		{name: "a slice without a placement is rejected",
			obj:  resourceSlice(func(s *resourcev1.ResourceSlice) { s.Spec.NodeName = nil }),
			want: []want{{field.ErrorTypeRequired, "spec", "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"}}},
		{name: "a slice names its driver and a pool of at least one slice",
			obj: resourceSlice(func(s *resourcev1.ResourceSlice) {
				s.Spec.Driver, s.Spec.Pool.ResourceSliceCount = "", 0
			}),
			want: []want{{field.ErrorTypeRequired, "spec.driver", ""}, {field.ErrorTypeInvalid, "spec.pool.resourceSliceCount", "must be greater than zero"}}},
		{name: "device names are unique",
			obj: resourceSlice(func(s *resourcev1.ResourceSlice) {
				s.Spec.Devices = append(s.Spec.Devices, resourcev1.Device{Name: "gpu-0"})
			}),
			want: []want{{field.ErrorTypeDuplicate, "spec.devices[1]", ""}}},
		{name: "an attribute holds exactly one value",
			obj: resourceSlice(func(s *resourcev1.ResourceSlice) {
				s.Spec.Devices[0].Attributes["model"] = resourcev1.DeviceAttribute{StringValue: ptr.To("T4"), IntValue: ptr.To[int64](4)}
			}),
			want: []want{{field.ErrorTypeInvalid, "spec.devices[0].attributes[model]", "exactly one value must be specified"}}},
		{name: "a version attribute is semver",
			obj: resourceSlice(func(s *resourcev1.ResourceSlice) {
				s.Spec.Devices[0].Attributes["gpu.example.com/driverVersion"] = resourcev1.DeviceAttribute{VersionValue: ptr.To("v1")}
			}),
			want: []want{{field.ErrorTypeInvalid, "spec.devices[0].attributes[gpu.example.com/driverVersion].version", "semver.org spec 2.0.0"}}},
		{name: "a device taint names a known effect",
			obj: resourceSlice(func(s *resourcev1.ResourceSlice) {
				s.Spec.Devices[0].Taints = []resourcev1.DeviceTaint{{Key: "broken", Effect: "Evict"}}
			}),
			want: []want{{field.ErrorTypeNotSupported, "spec.devices[0].taints[0].effect", `"NoExecute", "NoSchedule", "None"`}}},

		{name: "a device class with a selector is valid", obj: deviceClass()},
		{name: "a class's extended resource name is a vendor resource",
			obj:  deviceClass(func(c *resourcev1.DeviceClass) { c.Spec.ExtendedResourceName = ptr.To("gpu") }),
			want: []want{{field.ErrorTypeInvalid, "spec.extendedResourceName", "must be a valid extended resource name"}}},

		{name: "a taint rule for one device is valid", obj: deviceTaintRule()},
		{name: "a taint needs a key and an effect",
			obj: deviceTaintRule(func(r *resourcev1.DeviceTaintRule) {
				r.Spec.Taint = resourcev1.DeviceTaint{}
			}),
			want: []want{{field.ErrorTypeInvalid, "spec.taint.key", "name part must be non-empty"}, {field.ErrorTypeInvalid, "spec.taint.key", "name part must consist of alphanumeric characters"},
				{field.ErrorTypeRequired, "spec.taint.effect", ""}}},
		{name: "the selected pool's name is checked",
			obj:  deviceTaintRule(func(r *resourcev1.DeviceTaintRule) { r.Spec.DeviceSelector.Pool = ptr.To("Pool A") }),
			want: []want{{field.ErrorTypeInvalid, "spec.deviceSelector.pool", "RFC 1123 subdomain"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertErrors(t, Create(tt.obj, tt.namespaced), tt.want)
		})
	}
}

func TestDRAKindsUpdate(t *testing.T) {
	tests := []struct {
		name     string
		obj, old runtime.Object
		ns       bool
		want     []want
	}{
		{name: "a claim's spec is immutable", ns: true, old: resourceClaim(),
			obj:  resourceClaim(func(c *resourcev1.ResourceClaim) { c.Spec.Devices.Requests[0].Exactly.Count = 2 }),
			want: []want{{field.ErrorTypeInvalid, "spec", "field is immutable"}}},
		{name: "a claim's labels may change", ns: true, old: resourceClaim(),
			obj: resourceClaim(func(c *resourcev1.ResourceClaim) { c.Labels = map[string]string{"team": "ml"} })},
		{name: "a slice's devices may change", old: resourceSlice(),
			obj: resourceSlice(func(s *resourcev1.ResourceSlice) {
				s.Spec.Devices = append(s.Spec.Devices, resourcev1.Device{Name: "gpu-1"})
			})},
		{name: "a slice stays with its node, driver and pool", old: resourceSlice(),
			obj: resourceSlice(func(s *resourcev1.ResourceSlice) {
				s.Spec.NodeName, s.Spec.Pool.Name = ptr.To("node-2"), "node-2"
			}),
			want: []want{{field.ErrorTypeInvalid, "spec.nodeName", "field is immutable"}, {field.ErrorTypeInvalid, "spec.pool.name", "field is immutable"}}},
		{name: "a taint rule keeps a stored effect without re-checking it",
			old: deviceTaintRule(func(r *resourcev1.DeviceTaintRule) { r.Spec.Taint.Effect = "Retired" }),
			obj: deviceTaintRule(func(r *resourcev1.DeviceTaintRule) { r.Spec.Taint.Effect = "Retired"; r.Spec.Taint.Value = "fan" })},
		{name: "a taint rule's changed effect is checked", old: deviceTaintRule(),
			obj:  deviceTaintRule(func(r *resourcev1.DeviceTaintRule) { r.Spec.Taint.Effect = "Retired" }),
			want: []want{{field.ErrorTypeNotSupported, "spec.taint.effect", "supported values"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertErrors(t, Update(tt.obj, tt.old, tt.ns), tt.want)
		})
	}
}

func TestResourceClaimStatusUpdate(t *testing.T) {
	allocated := func(c *resourcev1.ResourceClaim) {
		c.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{
			{Request: "gpu", Driver: "gpu.example.com", Pool: "node-1", Device: "gpu-0"}}},
			NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{
				{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"node-1"}}}}}}}
	}
	reserved := func(c *resourcev1.ResourceClaim) {
		c.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: "web", UID: "uid-1"}}
	}
	tests := []struct {
		name     string
		obj, old *resourcev1.ResourceClaim
		want     []want
	}{
		{name: "the scheduler allocates a device and reserves the claim for a pod", old: resourceClaim(),
			obj: resourceClaim(allocated, reserved)},
		{name: "a claim is reserved only once allocated", old: resourceClaim(), obj: resourceClaim(reserved),
			want: []want{{field.ErrorTypeForbidden, "status.reservedFor", "may not be specified when `allocated` is not set"}}},
		{name: "an allocation names a request of the claim", old: resourceClaim(),
			obj:  resourceClaim(allocated, func(c *resourcev1.ResourceClaim) { c.Status.Allocation.Devices.Results[0].Request = "nic" }),
			want: []want{{field.ErrorTypeInvalid, "status.allocation.devices.results[0].request", "must be the name of a request in the claim"}}},
		{name: "an allocation never changes", old: resourceClaim(allocated),
			obj:  resourceClaim(allocated, func(c *resourcev1.ResourceClaim) { c.Status.Allocation.Devices.Results[0].Device = "gpu-1" }),
			want: []want{{field.ErrorTypeInvalid, "status.allocation", "field is immutable"}}},
		{name: "a consumer is reserved once", old: resourceClaim(allocated),
			obj: resourceClaim(allocated, reserved, func(c *resourcev1.ResourceClaim) {
				c.Status.ReservedFor = append(c.Status.ReservedFor, c.Status.ReservedFor[0])
			}),
			want: []want{{field.ErrorTypeDuplicate, "status.reservedFor[1]", ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertErrors(t, StatusUpdate(tt.obj, tt.old), tt.want)
		})
	}
}
