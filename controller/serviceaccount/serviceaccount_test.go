package serviceaccount

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/client"
	"minik/controller/framework"
)

func TestPlan(t *testing.T) {
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
			got := map[ActionType]*corev1.ConfigMap{}
			for _, a := range Plan(c.ns, c.sa, c.cm, "CA").Actions {
				got[a.Type] = a.ConfigMap
			}
			_, sa := got[CreateDefaultServiceAccount]
			create, fixed := got[CreateRootCA], got[UpdateRootCA]
			if sa != c.wantSA || (create != nil) != c.wantCreate || (fixed != nil) != c.wantFixed {
				t.Errorf("actions %v, want default=%v create=%v fix=%v", got, c.wantSA, c.wantCreate, c.wantFixed)
			}
			for _, cm := range []*corev1.ConfigMap{create, fixed} {
				if cm != nil && cm.Data["ca.crt"] != "CA" {
					t.Errorf("ConfigMap data %v", cm.Data)
				}
			}
		})
	}
}

// TestSyncWritesThroughTheSink drives the controller's sync over caches
// filled by hand and a FakeSink: no apiserver.
func TestSyncWritesThroughTheSink(t *testing.T) {
	active := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
	cases := []struct {
		name     string
		fail     ActionType
		wantDone []string
		wantErr  bool
	}{
		{name: "a new namespace gets its default account, then the CA bundle",
			wantDone: []string{"CreateDefaultServiceAccount a", "CreateRootCA a"}},
		{name: "a failed write ends the sync with its error before the next",
			fail: CreateDefaultServiceAccount, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inf := framework.NewInformers(&client.Client{}, slog.New(slog.DiscardHandler))
			inf.Namespaces.Replace([]*corev1.Namespace{active})
			sink := &framework.FakeSink[Action]{Fail: func(a Action) error {
				if a.Type == tc.fail {
					return errors.New("refused")
				}
				return nil
			}}
			ctl := &Controller{inf: inf, rootCA: "CA", sink: sink}
			_, err := ctl.sync(context.Background(), "a")
			if (err != nil) != tc.wantErr {
				t.Fatalf("sync error %v, want an error: %v", err, tc.wantErr)
			}
			var done []string
			for _, a := range sink.Done() {
				done = append(done, a.String())
			}
			if !slices.Equal(done, tc.wantDone) {
				t.Errorf("actions done %v, want %v", done, tc.wantDone)
			}
		})
	}
}
