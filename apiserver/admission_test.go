package apiserver

import (
	"testing"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"minik/internal/volumeutil"
)

// storageClassAt is a StorageClass created at t, marked default or not.
func storageClassAt(name string, t time.Time, isDefault bool) *storagev1.StorageClass {
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(t)}}
	if isDefault {
		sc.Annotations = map[string]string{volumeutil.IsDefaultClassAnnotation: "true"}
	}
	return sc
}

func TestNewestDefault(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		items []runtime.Object
		want  string // "" for none
	}{
		{name: "no classes, no default"},
		{name: "a class not marked default is not picked",
			items: []runtime.Object{storageClassAt("a", t0, false)}},
		{name: "the one class marked default is picked",
			items: []runtime.Object{storageClassAt("a", t0, false), storageClassAt("b", t0, true)}, want: "b"},
		{name: "of several defaults the newest is picked, whatever its name",
			items: []runtime.Object{storageClassAt("a", t0.Add(time.Second), true), storageClassAt("b", t0.Add(2*time.Second), true),
				storageClassAt("c", t0, true)}, want: "b"},
		{name: "of defaults created in the same second the first by name is picked",
			items: []runtime.Object{storageClassAt("b", t0, true), storageClassAt("a", t0, true)}, want: "a"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			name := ""
			if got := newestDefault(tc.items, volumeutil.IsDefaultClass); got != nil {
				name = got.Name
			}
			if name != tc.want {
				t.Errorf("picked %q, want %q", name, tc.want)
			}
		})
	}
}
