package volume

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"minik/client"
	"minik/controller/framework"
	"minik/internal/volumeutil"
)

// TestSyncRunsThePlanThroughTheSink drives a pass over caches filled by
// hand and a FakeSink: no apiserver. The pass binds claim data to volume
// fit and lets a deleted claim, old, go.
func TestSyncRunsThePlanThroughTheSink(t *testing.T) {
	old := claim("old", "1Gi").obj()
	old.DeletionTimestamp, old.Finalizers = &metav1.Time{Time: t0}, []string{volumeutil.PVCProtectionFinalizer}
	claims := []*corev1.PersistentVolumeClaim{claim("data", "1Gi").obj(), old}
	volumes := []*corev1.PersistentVolume{vol("fit", "2Gi").obj()}
	all := []string{"UpdateVolume fit", "UpdateVolumeStatus fit", "UpdateClaim data", "UpdateClaimStatus data", "UpdateClaim old"}
	gr := schema.GroupResource{Resource: "persistentvolumes"}
	cases := []struct {
		name     string
		refuse   error // the sink refuses UpdateVolume fit with it
		wantDone []string
		wantErr  string
	}{
		{name: "a claim binds its volume, both sides in order, and a deleted claim loses its finalizer", wantDone: all},
		{name: "a refused write fails the pass but does not hold back the other writes",
			refuse: errors.New("refused"), wantDone: all[1:], wantErr: "refused"},
		{name: "a conflict ends the pass: the cache is behind",
			refuse: apierrors.NewConflict(gr, "fit", errors.New("changed")), wantErr: "changed"},
		{name: "an object gone meanwhile is skipped without an error",
			refuse: apierrors.NewNotFound(gr, "fit"), wantDone: all[1:]},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inf := framework.NewInformers(&client.Client{}, slog.New(slog.DiscardHandler))
			inf.PersistentVolumeClaims.Replace(claims)
			inf.PersistentVolumes.Replace(volumes)
			sink := &framework.FakeSink[Action]{Fail: func(a Action) error {
				if a.Type == UpdateVolume && a.Volume.Name == "fit" {
					return tc.refuse
				}
				return nil
			}}
			vc := New(&client.Client{}, inf, nil, slog.New(slog.DiscardHandler))
			vc.sink = func() framework.Sink[Action] { return sink }
			_, err := vc.sync(context.Background(), passKey)
			if (err == nil) != (tc.wantErr == "") || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("sync error %v, want one containing %q", err, tc.wantErr)
			}
			var done []string
			for _, a := range sink.Done() {
				var name string
				if a.Claim != nil {
					name = a.Claim.Name
				} else {
					name = a.Volume.Name
				}
				done = append(done, string(a.Type)+" "+name)
			}
			if !slices.Equal(done, tc.wantDone) {
				t.Errorf("actions done %v, want %v", done, tc.wantDone)
			}
		})
	}
}
