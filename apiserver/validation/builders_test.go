package validation

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"minik/apiserver/defaults"
)

// want is one expected error: its type, its field path, and a substring
// of its detail ("" matches any detail).
type want struct {
	typ    field.ErrorType
	field  string
	detail string
}

// assertErrors fails unless got holds exactly the wanted errors, in any
// order.
func assertErrors(t *testing.T, got field.ErrorList, wants []want) {
	t.Helper()
	used := make([]bool, len(got))
	for _, w := range wants {
		found := false
		for i, g := range got {
			if !used[i] && g.Type == w.typ && g.Field == w.field && strings.Contains(g.Detail, w.detail) {
				used[i], found = true, true
				break
			}
		}
		if !found {
			t.Errorf("missing error %s %s containing %q", w.typ, w.field, w.detail)
		}
	}
	for i, g := range got {
		if !used[i] {
			t.Errorf("unexpected error: %s", g.Error())
		}
	}
	if t.Failed() {
		t.Logf("all errors:\n%s", describe(got))
	}
}

func describe(errs field.ErrorList) string {
	var b strings.Builder
	for _, e := range errs {
		b.WriteString("  " + e.Error() + "\n")
	}
	return b.String()
}

func rl(pairs ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i+1 < len(pairs); i += 2 {
		l[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return l
}

var web = map[string]string{"app": "web"}

func ctr(name, image string) corev1.Container { return corev1.Container{Name: name, Image: image} }

// podBuilder builds a pod as the apiserver sees it after defaulting:
// makePod().Spec(..).Obj(). Spec edits run before defaulting, After edits
// after it, to produce values defaulting would otherwise fill in.
type podBuilder struct {
	pod   corev1.Pod
	after []func(*corev1.Pod)
}

func makePod() *podBuilder {
	return &podBuilder{pod: corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Labels: web},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{ctr("app", "nginx:1.25")}},
	}}
}

func (b *podBuilder) Spec(edit func(*corev1.PodSpec)) *podBuilder {
	edit(&b.pod.Spec)
	return b
}

func (b *podBuilder) Meta(edit func(*metav1.ObjectMeta)) *podBuilder {
	edit(&b.pod.ObjectMeta)
	return b
}

func (b *podBuilder) After(edit func(*corev1.Pod)) *podBuilder {
	b.after = append(b.after, edit)
	return b
}

func (b *podBuilder) Obj() *corev1.Pod {
	p := b.pod.DeepCopy()
	defaults.Object(p)
	for _, edit := range b.after {
		edit(p)
	}
	return p
}

// stored returns the pod as storage would hand it back for an update.
func stored(p *corev1.Pod) *corev1.Pod {
	p = p.DeepCopy()
	p.ResourceVersion = "7"
	p.UID = "uid-1"
	return p
}

func templateSpec(labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{ctr("app", "nginx:1.25")}},
	}
}

func objMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: "default", ResourceVersion: "1", UID: "uid-1"}
}

// The workload builders return a valid, defaulted object with edits
// applied after defaulting.

func replicationController(edits ...func(*corev1.ReplicationController)) *corev1.ReplicationController {
	t := templateSpec(web)
	o := &corev1.ReplicationController{ObjectMeta: objMeta("rc"), Spec: corev1.ReplicationControllerSpec{Template: &t}}
	return defaulted(o, edits)
}

func replicaSet(edits ...func(*appsv1.ReplicaSet)) *appsv1.ReplicaSet {
	o := &appsv1.ReplicaSet{ObjectMeta: objMeta("rs"), Spec: appsv1.ReplicaSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: web}, Template: templateSpec(web),
	}}
	return defaulted(o, edits)
}

func deployment(edits ...func(*appsv1.Deployment)) *appsv1.Deployment {
	o := &appsv1.Deployment{ObjectMeta: objMeta("d"), Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: web}, Template: templateSpec(web),
	}}
	return defaulted(o, edits)
}

func daemonSet(edits ...func(*appsv1.DaemonSet)) *appsv1.DaemonSet {
	o := &appsv1.DaemonSet{ObjectMeta: objMeta("ds"), Spec: appsv1.DaemonSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: web}, Template: templateSpec(web),
	}}
	return defaulted(o, edits)
}

// job returns a Job through the whole create pipeline, generated selector
// included.
func job(edits ...func(*batchv1.Job)) *batchv1.Job {
	t := templateSpec(nil)
	t.Spec.RestartPolicy = corev1.RestartPolicyNever
	o := &batchv1.Job{ObjectMeta: objMeta("pi"), Spec: batchv1.JobSpec{Template: t}}
	o.UID = types.UID("0a1b2c3d-0000-0000-0000-000000000001")
	defaults.Object(o)
	defaults.OnCreate(o)
	for _, e := range edits {
		e(o)
	}
	return o
}

// defaulted is o as the apiserver stores it (defaults.Object), then
// changed by each of a builder's edits in turn.
func defaulted[T runtime.Object](o T, edits []func(T)) T {
	defaults.Object(o)
	for _, e := range edits {
		e(o)
	}
	return o
}
