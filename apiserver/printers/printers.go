// Package printers turns API objects into the metav1.Table that
// `kubectl get` asks for with Accept: application/json;as=Table;v=v1;g=meta.k8s.io.
//
// Columns and cell values follow upstream Kubernetes'
// pkg/printers/internalversion, printed the way its apiserver prints them:
// always with the wide (priority 1) columns, so `kubectl get -o wide` can
// show them and plain `kubectl get` hides them.
package printers

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// The includeObject values of metav1.TableOptions; "" means IncludeMetadata.
const (
	IncludeNone     = string(metav1.IncludeNone)
	IncludeMetadata = string(metav1.IncludeMetadata)
	IncludeObject   = string(metav1.IncludeObject)
)

// ErrUnknownIncludeObject is returned by ToTable for an includeObject value
// other than None, Metadata, Object or "". Callers answer it with 400 Bad Request.
var ErrUnknownIncludeObject = errors.New("unrecognized includeObject value")

// rowFunc prints one object. It returns the cells and row conditions; ToTable
// fills in the row's Object.
type rowFunc func(obj runtime.Object, now time.Time) (metav1.TableRow, error)

type printer struct {
	columns []metav1.TableColumnDefinition
	row     rowFunc
}

// byKind maps a Kind to its printer. Event covers both core/v1 and
// events.k8s.io/v1 Events; the row function tells them apart by Go type.
var byKind = map[string]printer{
	"Pod":                            {podColumns, typed(podRow)},
	"Node":                           {nodeColumns, typed(nodeRow)},
	"Namespace":                      {namespaceColumns, typed(namespaceRow)},
	"ReplicationController":          {replicationControllerColumns, typed(replicationControllerRow)},
	"ReplicaSet":                     {replicaSetColumns, typed(replicaSetRow)},
	"Deployment":                     {deploymentColumns, typed(deploymentRow)},
	"DaemonSet":                      {daemonSetColumns, typed(daemonSetRow)},
	"Job":                            {jobColumns, typed(jobRow)},
	"StatefulSet":                    {statefulSetColumns, typed(statefulSetRow)},
	"ControllerRevision":             {controllerRevisionColumns, typed(controllerRevisionRow)},
	"CronJob":                        {cronJobColumns, typed(cronJobRow)},
	"Event":                          {eventColumns, eventRow},
	"Lease":                          {leaseColumns, typed(leaseRow)},
	"PriorityClass":                  {priorityClassColumns, typed(priorityClassRow)},
	"ConfigMap":                      {configMapColumns, typed(configMapRow)},
	"Secret":                         {secretColumns, typed(secretRow)},
	"ServiceAccount":                 {serviceAccountColumns, typed(serviceAccountRow)},
	"PodDisruptionBudget":            {podDisruptionBudgetColumns, typed(podDisruptionBudgetRow)},
	"Role":                           {roleColumns, roleRow},
	"ClusterRole":                    {roleColumns, roleRow},
	"RoleBinding":                    {roleBindingColumns, roleBindingRow},
	"ClusterRoleBinding":             {roleBindingColumns, roleBindingRow},
	"Service":                        {serviceColumns, typed(serviceRow)},
	"Endpoints":                      {endpointsColumns, typed(endpointsRow)},
	"EndpointSlice":                  {endpointSliceColumns, typed(endpointSliceRow)},
	"LimitRange":                     {limitRangeColumns, typed(limitRangeRow)},
	"ResourceQuota":                  {resourceQuotaColumns, typed(resourceQuotaRow)},
	"PersistentVolume":               {persistentVolumeColumns, typed(persistentVolumeRow)},
	"PersistentVolumeClaim":          {persistentVolumeClaimColumns, typed(persistentVolumeClaimRow)},
	"StorageClass":                   {storageClassColumns, typed(storageClassRow)},
	"CSIDriver":                      {csiDriverColumns, typed(csiDriverRow)},
	"CSINode":                        {csiNodeColumns, typed(csiNodeRow)},
	"CSIStorageCapacity":             {csiStorageCapacityColumns, typed(csiStorageCapacityRow)},
	"VolumeAttachment":               {volumeAttachmentColumns, typed(volumeAttachmentRow)},
	"ResourceClaim":                  {resourceClaimColumns, typed(resourceClaimRow)},
	"ResourceSlice":                  {resourceSliceColumns, typed(resourceSliceRow)},
	"DeviceTaintRule":                {deviceTaintRuleColumns, typed(deviceTaintRuleRow)},
	"NetworkPolicy":                  {networkPolicyColumns, typed(networkPolicyRow)},
	"Ingress":                        {ingressColumns, typed(ingressRow)},
	"IngressClass":                   {ingressClassColumns, typed(ingressClassRow)},
	"ValidatingWebhookConfiguration": {webhookConfigurationColumns, typed(validatingWebhookConfigurationRow)},
	"MutatingWebhookConfiguration":   {webhookConfigurationColumns, typed(mutatingWebhookConfigurationRow)},
	"HorizontalPodAutoscaler":        {horizontalPodAutoscalerColumns, horizontalPodAutoscalerRow},
	"NodeMetrics":                    {resourceMetricsColumns, typed(nodeMetricsRow)},
	"PodMetrics":                     {resourceMetricsColumns, typed(podMetricsRow)},
	"CustomResourceDefinition":       {crdColumns, crdRow},
}

// defaultPrinter serves kinds without their own columns.
var defaultPrinter = printer{objectMetaColumns, objectMetaRow}

func printerFor(kind string) printer {
	if p, ok := byKind[kind]; ok {
		return p
	}
	return defaultPrinter
}

// Columns returns the column definitions of kind, so that a caller can
// answer an empty list with headers. Unknown kinds get NAME and AGE.
func Columns(kind string) []metav1.TableColumnDefinition {
	return slices.Clone(printerFor(kind).columns)
}

// ToTable converts objs, all of the given kind, to a Table with one row per
// object. An element of objs may itself be a list (such as *corev1.PodList);
// its items become rows. includeObject is "None", "Metadata" (the default,
// also for "") or "Object" and decides what each row's Object holds. now is
// the reference time for the AGE-like columns. The caller sets ListMeta.
func ToTable(kind string, objs []runtime.Object, includeObject string, now time.Time) (*metav1.Table, error) {
	return printerFor(kind).toTable(kind, objs, includeObject, now)
}

func (p printer) toTable(kind string, objs []runtime.Object, includeObject string, now time.Time) (*metav1.Table, error) {
	embed, err := embedderFor(includeObject)
	if err != nil {
		return nil, err
	}
	items, err := flatten(objs)
	if err != nil {
		return nil, err
	}
	table := &metav1.Table{
		TypeMeta:          metav1.TypeMeta{APIVersion: metav1.SchemeGroupVersion.String(), Kind: "Table"},
		ColumnDefinitions: slices.Clone(p.columns),
		// Not nil: kubectl and upstream both see "rows": [] for an empty list.
		Rows: make([]metav1.TableRow, 0, len(items)),
	}
	for _, obj := range items {
		row, err := p.row(obj, now)
		if err != nil {
			return nil, fmt.Errorf("printing %s: %w", kind, err)
		}
		if row.Object, err = embed(obj); err != nil {
			return nil, fmt.Errorf("printing %s: %w", kind, err)
		}
		table.Rows = append(table.Rows, row)
	}
	return table, nil
}

// typed adapts a printer of one Go type to a rowFunc.
func typed[T runtime.Object](f func(T, time.Time) metav1.TableRow) rowFunc {
	return func(obj runtime.Object, now time.Time) (metav1.TableRow, error) {
		t, ok := obj.(T)
		if !ok {
			var want T
			return metav1.TableRow{}, fmt.Errorf("unexpected object type %T, want %T", obj, want)
		}
		return f(t, now), nil
	}
}

// flatten expands lists into their items.
func flatten(objs []runtime.Object) ([]runtime.Object, error) {
	out := make([]runtime.Object, 0, len(objs))
	for _, obj := range objs {
		if !meta.IsListType(obj) {
			out = append(out, obj)
			continue
		}
		items, err := meta.ExtractList(obj)
		if err != nil {
			return nil, fmt.Errorf("reading items of %T: %w", obj, err)
		}
		out = append(out, items...)
	}
	return out, nil
}

type embedder func(runtime.Object) (runtime.RawExtension, error)

func embedderFor(includeObject string) (embedder, error) {
	switch includeObject {
	case IncludeNone:
		return func(runtime.Object) (runtime.RawExtension, error) { return runtime.RawExtension{}, nil }, nil
	case IncludeMetadata, "":
		return embedMetadata, nil
	case IncludeObject:
		return embedObject, nil
	}
	return nil, fmt.Errorf("%w: %q", ErrUnknownIncludeObject, includeObject)
}

// embedMetadata encodes the object's metadata as a PartialObjectMetadata,
// which is what kubectl reads names, namespaces and labels from.
func embedMetadata(obj runtime.Object) (runtime.RawExtension, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return runtime.RawExtension{}, err
	}
	partial := meta.AsPartialObjectMetadata(m)
	partial.TypeMeta = metav1.TypeMeta{APIVersion: metav1.SchemeGroupVersion.String(), Kind: "PartialObjectMetadata"}
	raw, err := json.Marshal(partial)
	if err != nil {
		return runtime.RawExtension{}, err
	}
	return runtime.RawExtension{Raw: raw}, nil
}

// embedObject encodes the whole object. Objects read from storage often have
// an empty TypeMeta; kubectl needs apiVersion and kind, so a copy gets them.
func embedObject(obj runtime.Object) (runtime.RawExtension, error) {
	if obj.GetObjectKind().GroupVersionKind().Empty() {
		if gvks, _, err := scheme.ObjectKinds(obj); err == nil && len(gvks) > 0 {
			obj = obj.DeepCopyObject()
			obj.GetObjectKind().SetGroupVersionKind(gvks[0])
		}
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return runtime.RawExtension{}, err
	}
	return runtime.RawExtension{Raw: raw}, nil
}

// scheme knows the Go types this package prints, to name them in "Object" rows.
var scheme = newScheme()

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme,
		appsv1.AddToScheme,
		batchv1.AddToScheme,
		coordinationv1.AddToScheme,
		discoveryv1.AddToScheme,
		eventsv1.AddToScheme,
		policyv1.AddToScheme,
		schedulingv1.AddToScheme,
		storagev1.AddToScheme,
		resourcev1.AddToScheme,
	} {
		utilruntime.Must(add(s))
	}
	return s
}
