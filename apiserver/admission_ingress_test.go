package apiserver

import (
	"context"
	"errors"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"minik/apiserver/validation"
)

// ingressClassAt is an IngressClass created at t, annotated as default
// with the value isDefault ("" for no annotation).
func ingressClassAt(name string, t time.Time, isDefault string) *networkingv1.IngressClass {
	ic := &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(t)},
		Spec: networkingv1.IngressClassSpec{Controller: "example.com/" + name}}
	if isDefault != "" {
		ic.Annotations = map[string]string{networkingv1.AnnotationIsDefaultIngressClass: isDefault}
	}
	return ic
}

func TestDefaultIngressClass(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	nginx := ingressClassAt("nginx", t0, "true")
	tests := []struct {
		name      string
		ing       *networkingv1.Ingress
		classes   []runtime.Object
		readErr   error
		want      *string // spec.ingressClassName after admission
		wantErr   error
		wantReads int
	}{
		{name: "an Ingress without a class gets the default class",
			ing: &networkingv1.Ingress{}, classes: []runtime.Object{ingressClassAt("traefik", t0, ""), nginx},
			want: ptr.To("nginx"), wantReads: 1},
		{name: "without a default class an Ingress keeps none",
			ing: &networkingv1.Ingress{}, classes: []runtime.Object{ingressClassAt("traefik", t0, "")}, wantReads: 1},
		{name: "only the value \"true\" marks the default, not \"True\"",
			ing: &networkingv1.Ingress{}, classes: []runtime.Object{ingressClassAt("traefik", t0, "True")}, wantReads: 1},
		{name: "of several default classes the newest is chosen, the create is not refused",
			ing: &networkingv1.Ingress{}, classes: []runtime.Object{nginx, ingressClassAt("traefik", t0.Add(time.Second), "true")},
			want: ptr.To("traefik"), wantReads: 1},
		{name: "a class named in the spec is kept, and no class is read",
			ing:     &networkingv1.Ingress{Spec: networkingv1.IngressSpec{IngressClassName: ptr.To("traefik")}},
			classes: []runtime.Object{nginx}, want: ptr.To("traefik")},
		{name: "an empty class name in the spec is kept: it is set",
			ing:     &networkingv1.Ingress{Spec: networkingv1.IngressSpec{IngressClassName: ptr.To("")}},
			classes: []runtime.Object{nginx}, want: ptr.To("")},
		{name: "an Ingress with the class annotation gets no class, whatever the annotation says",
			ing:     &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{validation.IngressClassAnnotation: ""}}},
			classes: []runtime.Object{nginx}},
		{name: "a failed read of the classes fails the create",
			ing: &networkingv1.Ingress{}, readErr: errors.New("etcd is down"), wantErr: errors.New("etcd is down"), wantReads: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reads := 0
			classes := func(context.Context) ([]runtime.Object, error) {
				reads++
				return tc.classes, tc.readErr
			}
			err := admitDefaultIngressClass(t.Context(), tc.ing, classes)
			if (err == nil) != (tc.wantErr == nil) || err != nil && err.Error() != tc.wantErr.Error() {
				t.Errorf("error %v, want %v", err, tc.wantErr)
			}
			if got := tc.ing.Spec.IngressClassName; !ptr.Equal(got, tc.want) {
				t.Errorf("ingressClassName %v, want %v", showName(got), showName(tc.want))
			}
			if reads != tc.wantReads {
				t.Errorf("the classes were read %d times, want %d", reads, tc.wantReads)
			}
		})
	}
}

// showName prints a class name or <nil>.
func showName(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return "\"" + *p + "\""
}
