package printers

import (
	"strings"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The resource.k8s.io (dynamic resource allocation) kinds, printed as
// upstream prints them. DeviceClass and ResourceClaimTemplate have only
// NAME and AGE, the default printer's columns.

var resourceClaimColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "State", Type: "string", Description: "A summary of the current state (allocated, pending, reserved, etc.)."},
	ageColumn,
}

var resourceSliceColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Node", Type: "string", Description: resourcev1.ResourceSliceSpec{}.SwaggerDoc()["nodeName"]},
	{Name: "Driver", Type: "string", Description: resourcev1.ResourceSliceSpec{}.SwaggerDoc()["driver"]},
	{Name: "Pool", Type: "string", Description: resourcev1.ResourcePool{}.SwaggerDoc()["name"]},
	ageColumn,
}

// deviceTaintRuleColumns leave out the device selector, which may hold
// long CEL expressions; the taint says more.
var deviceTaintRuleColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Key", Type: "string", Description: resourcev1.DeviceTaint{}.SwaggerDoc()["key"]},
	{Name: "Value", Type: "string", Description: resourcev1.DeviceTaint{}.SwaggerDoc()["value"]},
	{Name: "Effect", Type: "string", Description: resourcev1.DeviceTaint{}.SwaggerDoc()["effect"]},
	{Name: "TimeAdded", Type: "string", Description: resourcev1.DeviceTaint{}.SwaggerDoc()["timeAdded"]},
	ageColumn,
}

// resourceClaimRow prints NAME STATE AGE; STATE joins "deleted",
// "pending" (not allocated, not deleted), "allocated" and "reserved".
func resourceClaimRow(c *resourcev1.ResourceClaim, now time.Time) metav1.TableRow {
	var states []string
	if c.DeletionTimestamp != nil {
		states = append(states, "deleted")
	}
	switch {
	case c.Status.Allocation != nil:
		states = append(states, "allocated")
		if len(c.Status.ReservedFor) > 0 {
			states = append(states, "reserved")
		}
	case c.DeletionTimestamp == nil:
		states = append(states, "pending")
	}
	return row(c.Name, strings.Join(states, ","), since(c.CreationTimestamp.Time, now))
}

// resourceSliceRow prints NAME NODE DRIVER POOL AGE.
func resourceSliceRow(s *resourcev1.ResourceSlice, now time.Time) metav1.TableRow {
	node := ""
	if s.Spec.NodeName != nil {
		node = *s.Spec.NodeName
	}
	return row(s.Name, node, s.Spec.Driver, s.Spec.Pool.Name, since(s.CreationTimestamp.Time, now))
}

// deviceTaintRuleRow prints NAME KEY VALUE EFFECT TIMEADDED AGE; TIMEADDED
// is an age too.
func deviceTaintRuleRow(r *resourcev1.DeviceTaintRule, now time.Time) metav1.TableRow {
	added := ""
	if t := r.Spec.Taint.TimeAdded; t != nil {
		added = since(t.Time, now)
	}
	taint := r.Spec.Taint
	return row(r.Name, taint.Key, taint.Value, string(taint.Effect), added, since(r.CreationTimestamp.Time, now))
}
