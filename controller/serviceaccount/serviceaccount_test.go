package serviceaccount

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPlanNamespace(t *testing.T) {
	active := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
	terminating := active.DeepCopy()
	terminating.Status.Phase = corev1.NamespaceTerminating
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "a"}}
	good := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: RootCAConfigMap, Namespace: "a",
		Annotations: map[string]string{"kubernetes.io/description": rootCADescription}}, Data: map[string]string{"ca.crt": "CA"}}
	stale := good.DeepCopy()
	stale.Data["ca.crt"] = "OLD"
	for _, c := range []struct {
		name                          string
		ns                            *corev1.Namespace
		sa                            *corev1.ServiceAccount
		cm                            *corev1.ConfigMap
		wantSA, wantCreate, wantFixed bool
	}{
		{"a new namespace gets both", active, nil, nil, true, true, false},
		{"a complete namespace gets nothing", active, sa, good, false, false, false},
		{"a deleted default account comes back", active, nil, good, true, false, false},
		{"a changed CA bundle is put back", active, sa, stale, false, false, true},
		{"a terminating namespace gets nothing", terminating, nil, nil, false, false, false},
		{"a namespace gone from the cache gets nothing", nil, nil, nil, false, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := Plan(c.ns, c.sa, c.cm, "CA")
			if p.CreateDefault != c.wantSA || p.CreateRootCA != c.wantCreate || p.UpdateRootCACM != c.wantFixed {
				t.Errorf("plan %+v, want default=%v create=%v fix=%v", p, c.wantSA, c.wantCreate, c.wantFixed)
			}
			if (c.wantCreate || c.wantFixed) && p.RootCA.Data["ca.crt"] != "CA" {
				t.Errorf("ConfigMap data %v", p.RootCA.Data)
			}
		})
	}
}
