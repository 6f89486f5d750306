package validation

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The resource.k8s.io/v1 kinds of dynamic resource allocation, checked as
// upstream's pkg/apis/resource/validation: names, list sizes, the unions
// (exactly one of ...), references between requests, immutable fields.
// CEL selectors are stored as written: minik keeps them to their length
// limit but does not compile them (upstream also rejects expressions that
// do not compile or cost too much).

var (
	deviceTaintEffects        = sets.New(resourcev1.DeviceTaintEffectNoSchedule, resourcev1.DeviceTaintEffectNoExecute, resourcev1.DeviceTaintEffectNone)
	deviceTolerationOperators = []resourcev1.DeviceTolerationOperator{resourcev1.DeviceTolerationOpEqual, resourcev1.DeviceTolerationOpExists}
	deviceAllocationModes     = []resourcev1.DeviceAllocationMode{resourcev1.DeviceAllocationModeAll, resourcev1.DeviceAllocationModeExactCount}
	// semver is semver.org 2.0.0, as a device's version attributes must be.
	semver = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)` +
		`(-(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(\.(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*)?` +
		`(\+[0-9a-zA-Z-]+(\.[0-9a-zA-Z-]+)*)?$`)
)

const requestRefMessage = "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"

func validateResourceClaimSpec(spec *resourcev1.ResourceClaimSpec, p *field.Path) field.ErrorList {
	claim, p := &spec.Devices, p.Child("devices")
	refs := requestRefsOf(claim)
	errs := validateSet(claim.Requests, resourcev1.DeviceRequestsMaxSize, validateDeviceRequest,
		func(r resourcev1.DeviceRequest) string { return r.Name }, p.Child("requests"))
	errs = append(errs, validateSlice(claim.Constraints, resourcev1.DeviceConstraintsMaxSize,
		func(c resourcev1.DeviceConstraint, p *field.Path) field.ErrorList {
			errs := validateSet(c.Requests, resourcev1.DeviceRequestsMaxSize, refs.validate, sameString, p.Child("requests"))
			switch {
			case c.MatchAttribute != nil:
				return append(errs, fullyQualifiedName(string(*c.MatchAttribute), p.Child("matchAttribute"))...)
			case c.DistinctAttribute != nil:
				return append(errs, fullyQualifiedName(string(*c.DistinctAttribute), p.Child("distinctAttribute"))...)
			}
			return append(errs, field.Required(p, `exactly one of "matchAttribute" or "distinctAttribute" is required, but multiple fields are set`))
		}, p.Child("constraints"))...)
	return append(errs, validateSlice(claim.Config, resourcev1.DeviceConfigMaxSize,
		func(c resourcev1.DeviceClaimConfiguration, p *field.Path) field.ErrorList {
			errs := validateSet(c.Requests, resourcev1.DeviceRequestsMaxSize, refs.validate, sameString, p.Child("requests"))
			return append(errs, validateDeviceConfiguration(c.DeviceConfiguration, p)...)
		}, p.Child("config"))...)
}

func validateDeviceRequest(r resourcev1.DeviceRequest, p *field.Path) field.ErrorList {
	errs := dnsLabel(r.Name, p.Child("name"))
	switch {
	case r.Exactly == nil && len(r.FirstAvailable) == 0:
		errs = append(errs, field.Required(p, "exactly one of `exactly` or `firstAvailable` is required"))
	case r.Exactly != nil && len(r.FirstAvailable) > 0:
		errs = append(errs, field.Invalid(p, nil, "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set"))
	case r.Exactly != nil:
		e, p := r.Exactly, p.Child("exactly")
		errs = append(errs, validateDeviceChoice(e.DeviceClassName, e.Selectors, e.AllocationMode, e.Count, e.Tolerations, p)...)
	default:
		errs = append(errs, validateSet(r.FirstAvailable, resourcev1.FirstAvailableDeviceRequestMaxSize,
			func(s resourcev1.DeviceSubRequest, p *field.Path) field.ErrorList {
				errs := dnsLabel(s.Name, p.Child("name"))
				return append(errs, validateDeviceChoice(s.DeviceClassName, s.Selectors, s.AllocationMode, s.Count, s.Tolerations, p)...)
			}, func(s resourcev1.DeviceSubRequest) string { return s.Name }, p.Child("firstAvailable"))...)
	}
	return errs
}

// validateDeviceChoice checks what an exact request and a subrequest
// share: the class, selectors, how many devices and the tolerations.
func validateDeviceChoice(class string, selectors []resourcev1.DeviceSelector, mode resourcev1.DeviceAllocationMode, count int64,
	tolerations []resourcev1.DeviceToleration, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if class == "" {
		errs = append(errs, field.Required(p.Child("deviceClassName"), ""))
	} else {
		errs = append(errs, dnsSubdomain(class, p.Child("deviceClassName"))...)
	}
	errs = append(errs, validateSelectors(selectors, p.Child("selectors"))...)
	switch mode {
	case resourcev1.DeviceAllocationModeAll:
		if count != 0 {
			errs = append(errs, field.Invalid(p.Child("count"), count, fmt.Sprintf("must not be specified when allocationMode is '%s'", mode)))
		}
	case resourcev1.DeviceAllocationModeExactCount:
		if count <= 0 {
			errs = append(errs, field.Invalid(p.Child("count"), count, isNotPositiveErrorMsg))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("allocationMode"), mode, deviceAllocationModes))
	}
	for i, t := range tolerations {
		errs = append(errs, validateDeviceToleration(t, p.Child("tolerations").Index(i))...)
	}
	return errs
}

func validateSelectors(selectors []resourcev1.DeviceSelector, p *field.Path) field.ErrorList {
	return validateSlice(selectors, resourcev1.DeviceSelectorsMaxSize, func(s resourcev1.DeviceSelector, p *field.Path) field.ErrorList {
		switch {
		case s.CEL == nil:
			return field.ErrorList{field.Required(p.Child("cel"), "")}
		case len(s.CEL.Expression) > resourcev1.CELSelectorExpressionMaxLength:
			return field.ErrorList{field.TooLong(p.Child("cel", "expression"), "", resourcev1.CELSelectorExpressionMaxLength)}
		}
		return nil
	}, p)
}

func validateDeviceConfiguration(c resourcev1.DeviceConfiguration, p *field.Path) field.ErrorList {
	if c.Opaque == nil {
		return field.ErrorList{field.Required(p.Child("opaque"), "")}
	}
	p = p.Child("opaque")
	errs := validateCSIDriverName(c.Opaque.Driver, p.Child("driver"))
	return append(errs, jsonObject(c.Opaque.Parameters, resourcev1.OpaqueParametersMaxLength, p.Child("parameters"))...)
}

// jsonObject requires raw to hold a JSON object of at most max bytes.
func jsonObject(raw runtime.RawExtension, max int, p *field.Path) field.ErrorList {
	var v any
	switch {
	case len(raw.Raw) == 0:
		return field.ErrorList{field.Required(p, "")}
	case len(raw.Raw) > max:
		return field.ErrorList{field.TooLong(p, "", max)}
	}
	if err := json.Unmarshal(raw.Raw, &v); err != nil {
		return field.ErrorList{field.Invalid(p, "<value omitted>", fmt.Sprintf("error parsing data as JSON: %v", err))}
	}
	switch v.(type) {
	case nil:
		return field.ErrorList{field.Required(p, "")}
	case map[string]any:
		return nil
	}
	return field.ErrorList{field.Invalid(p, "<value omitted>", "must be a valid JSON object")}
}

// requestRefs are the request names of a claim, each with its
// subrequests: what constraints, configs and results may refer to.
type requestRefs map[string]sets.Set[string]

func requestRefsOf(claim *resourcev1.DeviceClaim) requestRefs {
	refs := requestRefs{}
	for _, r := range claim.Requests {
		subs := sets.New[string]()
		for _, s := range r.FirstAvailable {
			subs.Insert(s.Name)
		}
		refs[r.Name] = subs
	}
	return refs
}

// validate checks "request" or "request/subrequest".
func (refs requestRefs) validate(ref string, p *field.Path) field.ErrorList {
	parts := strings.Split(ref, "/")
	if len(parts) > 2 {
		return field.ErrorList{field.Invalid(p, ref, requestRefMessage)}
	}
	var errs field.ErrorList
	for _, part := range parts {
		errs = append(errs, dnsLabel(part, p)...)
	}
	subs, ok := refs[parts[0]]
	if !ok || len(parts) == 2 && !subs.Has(parts[1]) {
		errs = append(errs, field.Invalid(p, ref, requestRefMessage))
	}
	return errs
}

// validateResourceClaimUpdate: a claim's spec never changes.
func validateResourceClaimUpdate(c, old *resourcev1.ResourceClaim) field.ErrorList {
	return immutable(c.Spec, old.Spec, specPath)
}

func validateResourceClaimStatus(c, old *resourcev1.ResourceClaim) field.ErrorList {
	status, p := &c.Status, statusPath
	errs := validateSet(status.ReservedFor, resourcev1.ResourceClaimReservedForMaxSize,
		func(r resourcev1.ResourceClaimConsumerReference, p *field.Path) field.ErrorList {
			var errs field.ErrorList
			for _, f := range []struct{ value, name string }{{r.Resource, "resource"}, {r.Name, "name"}, {string(r.UID), "uid"}} {
				if f.value == "" {
					errs = append(errs, field.Required(p.Child(f.name), ""))
				}
			}
			return errs
		}, func(r resourcev1.ResourceClaimConsumerReference) string { return string(r.UID) }, p.Child("reservedFor"))
	if len(status.ReservedFor) > 0 && status.Allocation == nil {
		errs = append(errs, field.Forbidden(p.Child("reservedFor"), "may not be specified when `allocated` is not set"))
	}
	if len(status.ReservedFor) > 0 && c.DeletionTimestamp != nil {
		had := sets.New(old.Status.ReservedFor...)
		for _, r := range status.ReservedFor {
			if !had.Has(r) {
				errs = append(errs, field.Forbidden(p.Child("reservedFor"), "new entries may not be added while `deallocationRequested` or `deletionTimestamp` are set"))
				break
			}
		}
	}
	switch a := status.Allocation; {
	case a != nil && old.Status.Allocation != nil:
		errs = append(errs, immutable(*a, *old.Status.Allocation, p.Child("allocation"))...)
	case a != nil:
		errs = append(errs, validateAllocation(a, requestRefsOf(&c.Spec.Devices), p.Child("allocation"))...)
	}
	return errs
}

func validateAllocation(a *resourcev1.AllocationResult, refs requestRefs, p *field.Path) field.ErrorList {
	dp := p.Child("devices")
	errs := validateSlice(a.Devices.Results, resourcev1.AllocationResultsMaxSize,
		func(r resourcev1.DeviceRequestAllocationResult, p *field.Path) field.ErrorList {
			errs := refs.validate(r.Request, p.Child("request"))
			errs = append(errs, validateCSIDriverName(r.Driver, p.Child("driver"))...)
			errs = append(errs, poolName(r.Pool, p.Child("pool"))...)
			errs = append(errs, dnsLabel(r.Device, p.Child("device"))...)
			for i, t := range r.Tolerations {
				errs = append(errs, validateDeviceToleration(t, p.Child("tolerations").Index(i))...)
			}
			return errs
		}, dp.Child("results"))
	errs = append(errs, validateSlice(a.Devices.Config, 2*resourcev1.DeviceConfigMaxSize,
		func(c resourcev1.DeviceAllocationConfiguration, p *field.Path) field.ErrorList {
			var errs field.ErrorList
			switch c.Source {
			case "":
				errs = append(errs, field.Required(p.Child("source"), ""))
			case resourcev1.AllocationConfigSourceClaim, resourcev1.AllocationConfigSourceClass:
			default:
				errs = append(errs, field.NotSupported(p.Child("source"), c.Source,
					[]resourcev1.AllocationConfigSource{resourcev1.AllocationConfigSourceClaim, resourcev1.AllocationConfigSourceClass}))
			}
			errs = append(errs, validateSet(c.Requests, resourcev1.DeviceRequestsMaxSize, refs.validate, sameString, p.Child("requests"))...)
			return append(errs, validateDeviceConfiguration(c.DeviceConfiguration, p)...)
		}, dp.Child("config"))...)
	if a.NodeSelector != nil {
		errs = append(errs, validateNodeSelector(a.NodeSelector, p.Child("nodeSelector"))...)
	}
	return errs
}

func validateResourceClaimTemplateUpdate(t, old *resourcev1.ResourceClaimTemplate) field.ErrorList {
	return immutable(t.Spec, old.Spec, specPath)
}

func validateDeviceClass(c *resourcev1.DeviceClass) field.ErrorList {
	spec, p := &c.Spec, specPath
	errs := validateSelectors(spec.Selectors, p.Child("selectors"))
	errs = append(errs, validateSlice(spec.Config, resourcev1.DeviceConfigMaxSize,
		func(c resourcev1.DeviceClassConfiguration, p *field.Path) field.ErrorList {
			return validateDeviceConfiguration(c.DeviceConfiguration, p)
		}, p.Child("config"))...)
	if name := spec.ExtendedResourceName; name != nil && !IsExtendedResourceName(corev1.ResourceName(*name)) {
		errs = append(errs, field.Invalid(p.Child("extendedResourceName"), *name, "must be a valid extended resource name"))
	}
	return errs
}

func validateResourceSlice(s, old *resourcev1.ResourceSlice) field.ErrorList {
	spec, p := &s.Spec, specPath
	errs := validateCSIDriverName(spec.Driver, p.Child("driver"))
	errs = append(errs, poolName(spec.Pool.Name, p.Child("pool", "name"))...)
	if spec.Pool.ResourceSliceCount <= 0 {
		errs = append(errs, field.Invalid(p.Child("pool", "resourceSliceCount"), spec.Pool.ResourceSliceCount, isNotPositiveErrorMsg))
	}
	if spec.Pool.Generation < 0 {
		errs = append(errs, field.Invalid(p.Child("pool", "generation"), spec.Pool.Generation, "must be greater than or equal to zero"))
	}
	if old != nil {
		errs = append(errs, immutable(spec.Pool.Name, old.Spec.Pool.Name, p.Child("pool", "name"))...)
		errs = append(errs, immutable(spec.Driver, old.Spec.Driver, p.Child("driver"))...)
		errs = append(errs, immutable(spec.NodeName, old.Spec.NodeName, p.Child("nodeName"))...)
	}
	var set []string
	if n := spec.NodeName; n != nil && *n != "" {
		set = append(set, "`nodeName`")
		errs = append(errs, dnsSubdomain(*n, p.Child("nodeName"))...)
	} else if n != nil {
		errs = append(errs, field.Invalid(p.Child("nodeName"), *n, "must be either unset or set to a non-empty string"))
	}
	if spec.NodeSelector != nil {
		set = append(set, "`nodeSelector`")
		errs = append(errs, validateNodeSelector(spec.NodeSelector, p.Child("nodeSelector"))...)
		if len(spec.NodeSelector.NodeSelectorTerms) != 1 {
			errs = append(errs, field.Invalid(p.Child("nodeSelector", "nodeSelectorTerms"), spec.NodeSelector.NodeSelectorTerms,
				"must have exactly one node selector term"))
		}
	}
	for _, f := range []struct {
		value *bool
		name  string
	}{{spec.AllNodes, "allNodes"}, {spec.PerDeviceNodeSelection, "perDeviceNodeSelection"}} {
		if f.value != nil && *f.value {
			set = append(set, "`"+f.name+"`")
		} else if f.value != nil {
			errs = append(errs, field.Invalid(p.Child(f.name), false, "must be either unset or set to true"))
		}
	}
	const oneOf = "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"
	switch len(set) {
	case 0:
		errs = append(errs, field.Required(p, oneOf))
	case 1:
	default:
		errs = append(errs, field.Invalid(p, "{"+strings.Join(set, ", ")+"}", oneOf+", but multiple fields are set"))
	}
	if spec.SharedCounters != nil && spec.Devices != nil {
		errs = append(errs, field.Invalid(p, "", "only one of `sharedCounters` or `devices` is allowed"))
	}
	maxDevices := resourcev1.ResourceSliceMaxDevices
	for _, d := range spec.Devices {
		if len(d.Taints) > 0 || len(d.ConsumesCounters) > 0 {
			maxDevices = resourcev1.ResourceSliceMaxDevicesWithAdvancedFeatures
		}
	}
	perDevice := spec.PerDeviceNodeSelection != nil && *spec.PerDeviceNodeSelection
	errs = append(errs, validateSet(spec.Devices, maxDevices, func(d resourcev1.Device, p *field.Path) field.ErrorList {
		return validateDevice(d, perDevice, p)
	}, func(d resourcev1.Device) string { return d.Name }, p.Child("devices"))...)
	return append(errs, validateSet(spec.SharedCounters, resourcev1.ResourceSliceMaxCounterSets,
		func(c resourcev1.CounterSet, p *field.Path) field.ErrorList {
			if c.Name == "" {
				return field.ErrorList{field.Required(p.Child("name"), "")}
			}
			errs := dnsLabel(c.Name, p.Child("name"))
			if len(c.Counters) == 0 {
				errs = append(errs, field.Required(p.Child("counters"), ""))
			}
			return errs
		}, func(c resourcev1.CounterSet) string { return c.Name }, p.Child("sharedCounters"))...)
}

func validateDevice(d resourcev1.Device, perDeviceNodeSelection bool, p *field.Path) field.ErrorList {
	errs := dnsLabel(d.Name, p.Child("name"))
	if n := len(d.Attributes) + len(d.Capacity); n > resourcev1.ResourceSliceMaxAttributesAndCapacitiesPerDevice {
		errs = append(errs, field.Invalid(p, n, fmt.Sprintf("the total number of attributes and capacities must not exceed %d",
			resourcev1.ResourceSliceMaxAttributesAndCapacitiesPerDevice)))
	}
	for name, a := range d.Attributes {
		errs = append(errs, deviceQualifiedName(string(name), p.Child("attributes"))...)
		errs = append(errs, validateDeviceAttribute(a, p.Child("attributes").Key(string(name)))...)
	}
	for name := range d.Capacity {
		errs = append(errs, deviceQualifiedName(string(name), p.Child("capacity"))...)
	}
	errs = append(errs, validateSlice(d.Taints, resourcev1.DeviceTaintsMaxLength, validateDeviceTaint, p.Child("taints"))...)
	placement := d.NodeName != nil || d.NodeSelector != nil || d.AllNodes != nil
	switch {
	case perDeviceNodeSelection:
		n := 0
		for _, set := range []bool{d.NodeName != nil && *d.NodeName != "", d.NodeSelector != nil, d.AllNodes != nil && *d.AllNodes} {
			if set {
				n++
			}
		}
		if n != 1 {
			errs = append(errs, field.Required(p, "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` is set to true in the ResourceSlice spec"))
		}
	case placement:
		errs = append(errs, field.Invalid(p, nil, "`nodeName`, `nodeSelector` and `allNodes` can only be set if `perDeviceNodeSelection` is set to true in the ResourceSlice spec"))
	}
	return errs
}

func validateDeviceAttribute(a resourcev1.DeviceAttribute, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	n := 0
	if a.BoolValue != nil {
		n++
	}
	if a.IntValue != nil {
		n++
	}
	if s := a.StringValue; s != nil {
		n++
		if len(*s) > resourcev1.DeviceAttributeMaxValueLength {
			errs = append(errs, field.TooLong(p.Child("string"), "", resourcev1.DeviceAttributeMaxValueLength))
		}
	}
	if v := a.VersionValue; v != nil {
		n++
		if !semver.MatchString(*v) {
			errs = append(errs, field.Invalid(p.Child("version"), *v, "must be a string compatible with semver.org spec 2.0.0"))
		}
		if len(*v) > resourcev1.DeviceAttributeMaxValueLength {
			errs = append(errs, field.TooLong(p.Child("version"), "", resourcev1.DeviceAttributeMaxValueLength))
		}
	}
	for _, list := range []struct {
		set, empty bool
		name       string
	}{{a.BoolValues != nil, len(a.BoolValues) == 0, "bools"}, {a.IntValues != nil, len(a.IntValues) == 0, "ints"},
		{a.StringValues != nil, len(a.StringValues) == 0, "strings"}, {a.VersionValues != nil, len(a.VersionValues) == 0, "versions"}} {
		if !list.set {
			continue
		}
		n++
		if list.empty {
			errs = append(errs, field.Invalid(p.Child(list.name), []any{}, "must not be empty if specified"))
		}
	}
	switch n {
	case 0:
		errs = append(errs, field.Invalid(p, "", "exactly one value must be specified"))
	case 1:
	default:
		errs = append(errs, field.Invalid(p, a, "exactly one value must be specified"))
	}
	return errs
}

func validateDeviceTaintRule(r, old *resourcev1.DeviceTaintRule) field.ErrorList {
	var errs field.ErrorList
	if s, p := r.Spec.DeviceSelector, specPath.Child("deviceSelector"); s != nil {
		if s.Driver != nil {
			errs = append(errs, validateCSIDriverName(*s.Driver, p.Child("driver"))...)
		}
		if s.Pool != nil {
			errs = append(errs, poolName(*s.Pool, p.Child("pool"))...)
		}
		if s.Device != nil {
			errs = append(errs, dnsLabel(*s.Device, p.Child("device"))...)
		}
	}
	taint, p := r.Spec.Taint, specPath.Child("taint")
	errs = append(errs, deviceTaintKeyValue(taint, p)...)
	if old == nil || old.Spec.Taint.Effect != taint.Effect { // an effect stored before stays valid
		errs = append(errs, deviceTaintEffect(taint.Effect, p)...)
	}
	return errs
}

func validateDeviceTaintRuleStatus(r *resourcev1.DeviceTaintRule) field.ErrorList {
	p := statusPath.Child("conditions")
	errs := metav1validation.ValidateConditions(r.Status.Conditions, p)
	if n := len(r.Status.Conditions); n > resourcev1.DeviceTaintRuleStatusMaxConditions {
		errs = append(errs, field.TooMany(p, n, resourcev1.DeviceTaintRuleStatusMaxConditions))
	}
	return errs
}

func validateDeviceTaint(t resourcev1.DeviceTaint, p *field.Path) field.ErrorList {
	return append(deviceTaintKeyValue(t, p), deviceTaintEffect(t.Effect, p)...)
}

func deviceTaintKeyValue(t resourcev1.DeviceTaint, p *field.Path) field.ErrorList {
	errs := metav1validation.ValidateLabelName(t.Key, p.Child("key"))
	if t.Value != "" {
		errs = append(errs, labelValue(t.Value, p.Child("value"))...)
	}
	return errs
}

func deviceTaintEffect(effect resourcev1.DeviceTaintEffect, p *field.Path) field.ErrorList {
	switch {
	case effect == "":
		return field.ErrorList{field.Required(p.Child("effect"), "")}
	case !deviceTaintEffects.Has(effect):
		return field.ErrorList{field.NotSupported(p.Child("effect"), effect, sets.List(deviceTaintEffects))}
	}
	return nil
}

func validateDeviceToleration(t resourcev1.DeviceToleration, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if t.Key != "" {
		errs = append(errs, metav1validation.ValidateLabelName(t.Key, p.Child("key"))...)
	}
	switch t.Operator {
	case resourcev1.DeviceTolerationOpExists:
		if t.Value != "" {
			errs = append(errs, field.Invalid(p.Child("value"), t.Value, "must be empty for operator `Exists`"))
		}
	case resourcev1.DeviceTolerationOpEqual:
		errs = append(errs, labelValue(t.Value, p.Child("value"))...)
	case "":
		errs = append(errs, field.Required(p.Child("operator"), ""))
	default:
		errs = append(errs, field.NotSupported(p.Child("operator"), t.Operator, deviceTolerationOperators))
	}
	if t.Effect != "" && !deviceTaintEffects.Has(t.Effect) {
		errs = append(errs, field.NotSupported(p.Child("effect"), t.Effect, sets.List(deviceTaintEffects)))
	}
	return errs
}

// poolName: DNS subdomains separated by slashes, 253 characters in all.
func poolName(name string, p *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	var errs field.ErrorList
	if len(name) > resourcev1.PoolNameMaxLength {
		errs = append(errs, field.TooLong(p, "", resourcev1.PoolNameMaxLength))
	}
	for _, part := range strings.Split(name, "/") {
		errs = append(errs, dnsSubdomain(part, p)...)
	}
	return errs
}

// deviceQualifiedName: a C identifier, optionally after a driver-like
// domain and a slash ("dra.example.com/model").
func deviceQualifiedName(name string, p *field.Path) field.ErrorList {
	domain, id, qualified := strings.Cut(name, "/")
	if !qualified {
		return cIdentifier(name, p)
	}
	var errs field.ErrorList
	if domain == "" {
		errs = append(errs, field.Invalid(p, "", "the domain must not be empty"))
	} else {
		errs = append(errs, validateCSIDriverName(domain, p)...)
	}
	if id == "" {
		return append(errs, field.Invalid(p, "", "the name must not be empty"))
	}
	return append(errs, cIdentifier(id, p)...)
}

func fullyQualifiedName(name string, p *field.Path) field.ErrorList {
	errs := deviceQualifiedName(name, p)
	if !strings.Contains(name, "/") {
		errs = append(errs, field.Invalid(p, name, "a fully qualified name must be a domain and a name separated by a slash"))
	}
	return errs
}

func cIdentifier(id string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(id) > resourcev1.DeviceMaxIDLength {
		errs = append(errs, field.TooLong(p, "", resourcev1.DeviceMaxIDLength))
	}
	for _, msg := range content.IsCIdentifier(id) {
		errs = append(errs, field.Invalid(p, id, msg))
	}
	return errs
}

func immutable(value, old any, p *field.Path) field.ErrorList {
	return apimachineryvalidation.ValidateImmutableField(value, old, p)
}

// validateSlice checks each item once the list is within max items; a
// longer list is reported alone, as upstream does against oversized input.
func validateSlice[T any](items []T, max int, validate func(T, *field.Path) field.ErrorList, p *field.Path) field.ErrorList {
	if len(items) > max {
		return field.ErrorList{field.TooMany(p, len(items), max)}
	}
	var errs field.ErrorList
	for i, item := range items {
		errs = append(errs, validate(item, p.Index(i))...)
	}
	return errs
}

// validateSet is validateSlice for lists whose items are keyed: a key
// seen twice is a Duplicate.
func validateSet[T any, K comparable](items []T, max int, validate func(T, *field.Path) field.ErrorList, key func(T) K, p *field.Path) field.ErrorList {
	errs := validateSlice(items, max, validate, p)
	if len(items) > max {
		return errs
	}
	seen := sets.New[K]()
	for i, item := range items {
		k := key(item)
		if seen.Has(k) {
			errs = append(errs, field.Duplicate(p.Index(i), k))
		}
		seen.Insert(k)
	}
	return errs
}

func sameString(s string) string { return s }
