package fieldmanager

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/typed"

	"minik/apiserver/defaults"
	"minik/apiserver/openapi"
)

// TestStructConverterTypesAsTheValidatingOne checks that a built-in object
// typed without the validation walk has the same fields, and compares
// with another the same way, as when typed by the engine's converter.
func TestStructConverterTypesAsTheValidatingOne(t *testing.T) {
	plain := must(plainConverter(t)())
	fast := newStructConverter(plain)

	pod := benchPod()
	pod.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "A", Value: "2"}} // duplicate keys are allowed
	pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}}
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}
	defaults.Object(pod)
	scheduled := pod.DeepCopy()
	scheduled.Status.NominatedNodeName = "n1"
	scheduled.Status.Conditions = append(scheduled.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "PreemptionByScheduler"})
	two := int32(2)
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{Replicas: &two, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}, Spec: pod.Spec}}}
	defaults.Object(deploy)
	scaled := deploy.DeepCopy()
	scaled.Spec.Replicas = nil
	scaled.Spec.Template.Spec.Containers[0].Image = "nginx"

	for _, pair := range [][2]runtime.Object{{pod, scheduled}, {deploy, scaled}} {
		gvk := gvkOf(t, pair[0])
		old, cur := withGVK(pair[0], gvk), withGVK(pair[1], gvk)
		if _, err := fast.ObjectToTyped(old, typed.AllowDuplicates); err != nil { // the first is validated
			t.Fatal(err)
		}
		typedBy := func(tc managedfields.TypeConverter) (oldSet, curSet string, cmp *typed.Comparison) {
			a, err := tc.ObjectToTyped(old, typed.AllowDuplicates)
			if err != nil {
				t.Fatal(err)
			}
			b, err := tc.ObjectToTyped(cur, typed.AllowDuplicates)
			if err != nil {
				t.Fatal(err)
			}
			as, err := a.ToFieldSet()
			if err != nil {
				t.Fatal(err)
			}
			bs, err := b.ToFieldSet()
			if err != nil {
				t.Fatal(err)
			}
			if cmp, err = a.Compare(b); err != nil {
				t.Fatal(err)
			}
			return as.String(), bs.String(), cmp
		}
		wantOld, wantCur, wantCmp := typedBy(plain)
		gotOld, gotCur, gotCmp := typedBy(fast)
		if gotOld != wantOld || gotCur != wantCur {
			t.Errorf("%v: fields differ:\n%s\n%s\nengine:\n%s\n%s", gvk, gotOld, gotCur, wantOld, wantCur)
		}
		if gotCmp.String() != wantCmp.String() {
			t.Errorf("%v: comparison %s, engine %s", gvk, gotCmp, wantCmp)
		}
		if gotCmp.IsSame() {
			t.Errorf("%v: the change was not seen", gvk)
		}
	}
}

// plainConverter is the engine's converter for every served kind, as
// New's builtin gets it.
func plainConverter(t testing.TB) func() (managedfields.TypeConverter, error) {
	resources, _ := servedResources()
	models, err := openapi.Models(resources)
	if err != nil {
		t.Fatal(err)
	}
	tc, err := managedfields.NewTypeConverter(models, false)
	return func() (managedfields.TypeConverter, error) { return tc, err }
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
