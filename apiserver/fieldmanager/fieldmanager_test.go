package fieldmanager

import (
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"minik/apiserver/defaults"
	"minik/apiserver/openapi"
	"minik/apiserver/registry"
)

// servedResources lists what the apiserver serves, as OpenAPI resources
// and as the stored kinds.
func servedResources() ([]openapi.Resource, []*registry.Resource) {
	var resources []openapi.Resource
	var kinds []*registry.Resource
	for _, res := range registry.All() {
		var list runtime.Object
		if res.NewList != nil {
			list = res.NewList()
		}
		resources = append(resources, openapi.Resource{Group: res.Group, Version: res.Version, Kind: res.Kind,
			Resource: res.Resource, Namespaced: res.Namespaced, Object: res.New(), List: list,
			Verbs: res.ServedVerbs(), Subresources: res.Subresources})
		if !res.Virtual && res.StorageOf == "" {
			kinds = append(kinds, res)
		}
	}
	return resources, kinds
}

// newTestManager registers every served kind, as the apiserver does.
func newTestManager(t testing.TB) *Manager {
	t.Helper()
	resources, kinds := servedResources()
	m := New(func() (managedfields.TypeConverter, error) {
		models, err := openapi.Models(resources)
		if err != nil {
			return nil, err
		}
		return managedfields.NewTypeConverter(models, false)
	})
	for _, res := range kinds {
		m.Register(Kind{GVK: res.GroupVersion().WithKind(res.Kind), New: res.New, Default: defaults.Object, HasStatus: res.HasStatus})
	}
	return m
}

func TestManagerName(t *testing.T) {
	for _, tc := range []struct{ name, option, userAgent, want string }{
		{"the fieldManager option wins", "deployer", "kubectl/v1.32.0 (linux/amd64) kubernetes/abc", "deployer"},
		{"kubectl's User-Agent gives kubectl", "", "kubectl/v1.32.0 (linux/amd64) kubernetes/abc", "kubectl"},
		{"a plugin of kubectl keeps its own name", "", "kubectl-label/v1.32.0 (linux/amd64) kubernetes/abc", "kubectl-label"},
		{"a User-Agent without a slash is kept whole", "", "curl", "curl"},
		{"unprintable characters are dropped", "", "my\x00agent\n/1.0", "myagent"},
		{"no User-Agent gives no name", "", "", ""},
		{"a long User-Agent is cut at 128 bytes", "", strings.Repeat("a", 200), strings.Repeat("a", 128)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ManagerName(tc.option, tc.userAgent); got != tc.want {
				t.Errorf("ManagerName(%q, %q) = %q, want %q", tc.option, tc.userAgent, got, tc.want)
			}
		})
	}
}

// TestCreateEntriesMatchTheEngine checks the create fast path against
// the engine's Update from an empty object, on objects of every shape
// the fields take: maps, associative lists, sets, atomic lists, pointers
// to structs, quantities, int-or-strings and status.
func TestCreateEntriesMatchTheEngine(t *testing.T) {
	m := newTestManager(t)
	two := int32(2)
	for _, tc := range []struct {
		name string
		obj  runtime.Object
	}{
		{"the bench pod", benchPod()},
		{"the bench pod with other values: its shape is cached", func() runtime.Object {
			p := benchPod()
			p.Name, p.Labels["worker"], p.Spec.Containers[0].Image = "other", "2", "nginx"
			return p
		}()},
		{"the bench pod with another container name: another shape", func() runtime.Object {
			p := benchPod()
			p.Spec.Containers[0].Name = "d"
			return p
		}()},
		{"the bench pod with another label key: another shape", func() runtime.Object {
			p := benchPod()
			p.Labels["tier"] = "web"
			return p
		}()},
		{"a pod with volumes, env, ports, probes and tolerations", func() runtime.Object {
			p := benchPod()
			p.Annotations = map[string]string{"a": "b"}
			p.Finalizers = []string{"x/y"}
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "u2"}}
			c := &p.Spec.Containers[0]
			c.Env = []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}
			c.Ports = []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}}
			c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromString("http")}}}
			c.VolumeMounts = []corev1.VolumeMount{{Name: "v", MountPath: "/v"}}
			p.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}}
			p.Status.Phase = corev1.PodPending
			defaults.Object(p)
			return p
		}()},
		{"a deployment", func() runtime.Object {
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
				Spec: appsv1.DeploymentSpec{Replicas: &two, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
					Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
						Spec: benchPod().Spec}}}
			defaults.Object(d)
			return d
		}()},
		{"a service", func() runtime.Object {
			s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "svc", Namespace: "default"},
				Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
			defaults.Object(s)
			return s
		}()},
		{"a configmap", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "default"}, Data: map[string]string{"a": "1"}}},
		{"an empty configmap owns nothing", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "default"}}},
		{"a node with taints and status", &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"k": "v"}},
			Spec:   corev1.NodeSpec{Taints: []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}},
			Status: corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gvk := gvkOf(t, tc.obj)
			fm, k, err := m.fieldManager(gvk, "")
			if err != nil {
				t.Fatal(err)
			}
			fast, err := k.createEntries(tc.obj.DeepCopyObject(), "creator", "")
			if err != nil {
				t.Fatal(err)
			}
			if again, _ := k.createEntries(tc.obj.DeepCopyObject(), "creator", ""); len(again) != len(fast) ||
				(len(fast) == 1 && string(again[0].FieldsV1.Raw) != string(fast[0].FieldsV1.Raw)) {
				t.Errorf("from the shape cache: %v, first %v", again, fast)
			}
			slowObj, err := fm.Update(k.empty(), withGVK(tc.obj.DeepCopyObject(), gvk), "creator")
			if err != nil {
				t.Fatal(err)
			}
			sameEntries(t, fast, slowObj.(metav1.Object).GetManagedFields())
		})
	}
}

// sameEntries checks managedFields entries against the engine's, all but
// their timestamps.
func sameEntries(t *testing.T, got, engine []metav1.ManagedFieldsEntry) {
	t.Helper()
	if len(got) != len(engine) {
		t.Fatalf("%d entries, engine %d: %v vs %v", len(got), len(engine), got, engine)
	}
	for i := range got {
		g, e := got[i], engine[i]
		if g.Manager != e.Manager || g.Operation != e.Operation || g.APIVersion != e.APIVersion ||
			g.FieldsType != e.FieldsType || g.Subresource != e.Subresource || string(g.FieldsV1.Raw) != string(e.FieldsV1.Raw) {
			t.Errorf("entry %d\n%+v %s\nengine\n%+v %s", i, g, g.FieldsV1.Raw, e, e.FieldsV1.Raw)
		}
	}
}

func gvkOf(t *testing.T, obj runtime.Object) schema.GroupVersionKind {
	t.Helper()
	switch obj.(type) {
	case *corev1.Pod:
		return corev1.SchemeGroupVersion.WithKind("Pod")
	case *appsv1.Deployment:
		return appsv1.SchemeGroupVersion.WithKind("Deployment")
	case *corev1.Service:
		return corev1.SchemeGroupVersion.WithKind("Service")
	case *corev1.ConfigMap:
		return corev1.SchemeGroupVersion.WithKind("ConfigMap")
	case *corev1.Node:
		return corev1.SchemeGroupVersion.WithKind("Node")
	case *corev1.Namespace:
		return corev1.SchemeGroupVersion.WithKind("Namespace")
	}
	t.Fatalf("no kind for %T", obj)
	return schema.GroupVersionKind{}
}

func withGVK(obj runtime.Object, gvk schema.GroupVersionKind) runtime.Object {
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return obj
}

// TestRegisteredKindAppliesAndConflicts registers a kind at run time with
// its own converter, as a CustomResourceDefinition would, and applies to
// it from two managers.
func TestRegisteredKindAppliesAndConflicts(t *testing.T) {
	m := newTestManager(t)
	gvk := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	obj := func(props map[string]spec.Schema) spec.Schema {
		return spec.Schema{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"object"}, Properties: props}}
	}
	str := spec.Schema{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"string"}}}
	num := spec.Schema{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"integer"}}}
	widget := obj(map[string]spec.Schema{"apiVersion": str, "kind": str,
		"metadata": {SchemaProps: spec.SchemaProps{Ref: spec.MustCreateRef("#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")}},
		"spec":     obj(map[string]spec.Schema{"size": num, "color": str}), "status": obj(map[string]spec.Schema{"ready": num})})
	widget.Extensions = spec.Extensions{"x-kubernetes-group-version-kind": []any{map[string]any{"group": "example.com", "version": "v1", "kind": "Widget"}}}
	models := map[string]*spec.Schema{"com.example.v1.Widget": &widget}
	resources, _ := servedResources()
	builtin, err := openapi.Models(resources)
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range builtin {
		models[name] = s
	}
	tc, err := managedfields.NewTypeConverter(models, false)
	if err != nil {
		t.Fatal(err)
	}
	m.Register(Kind{GVK: gvk, New: func() runtime.Object { return &unstructured.Unstructured{} }, Converter: tc,
		HasStatus: true, Fields: []string{"apiVersion", "kind", "metadata", "spec", "status"}})
	config := func(size int64, color string) map[string]any {
		return map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w"},
			"spec": map[string]any{"size": size, "color": color}, "status": map[string]any{"ready": int64(1)}}
	}
	live, err := m.Apply(gvk, "", nil, config(1, "red"), "a", false)
	if err != nil {
		t.Fatal(err)
	}
	// The main resource resets status (the apiserver keeps the stored
	// one), so the applier does not own it.
	if e := live.(metav1.Object).GetManagedFields(); len(e) != 1 || strings.Contains(string(e[0].FieldsV1.Raw), "status") {
		t.Errorf("an apply to the main resource owns status: %v", e)
	}
	for _, tc := range []struct {
		name, manager string
		force         bool
		wantErr       string
	}{
		{"the same values from another manager share the fields", "b", false, ""},
		{"another size conflicts with both owners", "c", false, `Apply failed with 2 conflicts: conflicts with "a":` + "\n- .spec.size\n" + `conflicts with "b":` + "\n- .spec.size"},
		{"force takes the field over", "c", true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			size := int64(1)
			if tc.manager == "c" {
				size = 2
			}
			out, err := m.Apply(gvk, "", live, config(size, "red"), tc.manager, tc.force)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			live = out
		})
	}
	var owners []string
	for _, e := range live.(metav1.Object).GetManagedFields() {
		if strings.Contains(string(e.FieldsV1.Raw), `"f:size"`) {
			owners = append(owners, e.Manager)
		}
	}
	if strings.Join(owners, ",") != "c" {
		t.Errorf("owners of spec.size %v, want only c", owners)
	}
	m.Unregister(gvk)
	if _, err := m.Apply(gvk, "", live, config(3, "red"), "a", true); err == nil {
		t.Errorf("apply to an unregistered kind succeeded")
	}
}

// TestStatusUpdatesMatchTheEngine checks that a /status write, compared
// without the spec, records what the engine records comparing the whole
// objects: for kinds with a spec, with fields of another writer removed
// and changed, and for a kind without one.
func TestStatusUpdatesMatchTheEngine(t *testing.T) {
	m := newTestManager(t)
	two := int32(2)
	pod := benchPod()
	pod.Status.Phase = corev1.PodPending
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable"}}
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{Replicas: &two, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}, Spec: benchPod().Spec}},
		Status: appsv1.DeploymentStatus{Replicas: 2, ReadyReplicas: 1}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: corev1.NodeSpec{PodCIDR: "10.0.0.0/24"},
		Status: corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", Labels: map[string]string{"team": "a"}}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
	for _, tc := range []struct {
		name   string
		obj    runtime.Object
		change func(runtime.Object)
	}{
		{"a pod: a nomination, a condition changed, the phase removed", pod, func(o runtime.Object) {
			p := o.(*corev1.Pod)
			p.Status.NominatedNodeName = "n1"
			p.Status.Phase = ""
			p.Status.Conditions[0].Message = "0/3 nodes are available"
			p.Labels = map[string]string{"moved": "too"} // a status write moves the metadata
		}},
		{"a deployment: counts", deploy, func(o runtime.Object) {
			d := o.(*appsv1.Deployment)
			d.Status.ReadyReplicas, d.Status.AvailableReplicas = 2, 2
		}},
		{"a node: allocatable", node, func(o runtime.Object) {
			o.(*corev1.Node).Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
		}},
		{"a namespace (its spec is only finalizers)", ns, func(o runtime.Object) {
			o.(*corev1.Namespace).Status.Phase = corev1.NamespaceTerminating
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gvk := gvkOf(t, tc.obj)
			// The creator owns no status; another writer owns the status
			// fields the tested write changes or removes.
			bare := tc.obj.DeepCopyObject()
			reflect.ValueOf(bare).Elem().FieldByName("Status").SetZero()
			live := m.Update(gvk, "", nil, withGVK(bare, gvk), "creator")
			withStatus := live.DeepCopyObject()
			reflect.ValueOf(withStatus).Elem().FieldByName("Status").Set(reflect.ValueOf(tc.obj).Elem().FieldByName("Status"))
			live = m.Update(gvk, "status", live, withStatus, "kubelet")
			obj := live.DeepCopyObject()
			tc.change(obj)
			got := m.Update(gvk, "status", live.DeepCopyObject(), obj.DeepCopyObject(), "scheduler").(metav1.Object).GetManagedFields()
			fm, _, err := m.fieldManager(gvk, "status")
			if err != nil {
				t.Fatal(err)
			}
			wantObj, err := fm.Update(live.DeepCopyObject(), obj.DeepCopyObject(), "scheduler")
			if err != nil {
				t.Fatal(err)
			}
			sameEntries(t, got, wantObj.(metav1.Object).GetManagedFields())
			if len(got) < 2 {
				t.Errorf("want entries of the creator and the tested writer at least, got %v", got)
			}
		})
	}
}
