package volumes

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/internal/volumeutil"
)

func TestResolveSubPath(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "vol")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(root, "data", "inner"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "app.conf"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"escape": outside, "escape-abs": "/etc", "inside": filepath.Join(root, "data")} {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("../../data", filepath.Join(root, "data", "inner", "up")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, sub string
		want      string // path relative to root, or "" when refused
		err       string
	}{
		{name: "an existing directory resolves inside the volume", sub: "data", want: "data"},
		{name: "a file can be a subPath", sub: "app.conf", want: "app.conf"},
		{name: "a missing subPath is created as a directory", sub: "new/deeper", want: "new/deeper"},
		{name: "a symlink within the volume is followed", sub: "inside/inner", want: "data/inner"},
		{name: "a relative symlink that stays inside is followed", sub: "data/inner/up", want: "data"},
		{name: "an absolute subPath is refused", sub: "/etc", err: "must be a relative path"},
		{name: "a '..' element is refused", sub: "data/../../outside", err: "must not contain '..'"},
		{name: "a symlink pointing out is refused", sub: "escape", err: "outside the volume"},
		{name: "a symlink to an absolute path outside is refused", sub: "escape-abs", err: "outside the volume"},
		{name: "creating below a symlink that points out is refused", sub: "escape/made-here", err: "outside the volume"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ResolveSubPath(root, tt.sub)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want one containing %q (path %q)", err, tt.err, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			realRoot, _ := filepath.EvalSymlinks(root)
			if want := filepath.Join(realRoot, tt.want); got != want {
				t.Errorf("got %s, want %s", got, want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(outside, "made-here")); !os.IsNotExist(err) {
		t.Errorf("a directory was created outside the volume: %v", err)
	}
}

func TestReclaimable(t *testing.T) {
	dir := "/var/lib/minik/local-path/pvc-1"
	pv := func(edit func(*corev1.PersistentVolume)) *corev1.PersistentVolume {
		v := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pvc-1", Annotations: map[string]string{
			volumeutil.AnnProvisionedBy: volumeutil.LocalPathProvisioner, volumeutil.AnnSelectedNode: "n1"}},
			Spec: corev1.PersistentVolumeSpec{PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
				PersistentVolumeSource: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: dir}}},
			Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeReleased}}
		if edit != nil {
			edit(v)
		}
		return v
	}
	tests := []struct {
		name string
		pv   *corev1.PersistentVolume
		want bool
	}{
		{"a released local-path volume of this node with Delete is reclaimed", pv(nil), true},
		{"a bound volume is kept", pv(func(v *corev1.PersistentVolume) { v.Status.Phase = corev1.VolumeBound }), false},
		{"a Retain volume is kept", pv(func(v *corev1.PersistentVolume) {
			v.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
		}), false},
		{"another node's volume is not ours", pv(func(v *corev1.PersistentVolume) { v.Annotations[volumeutil.AnnSelectedNode] = "n2" }), false},
		{"a volume made by hand is not ours", pv(func(v *corev1.PersistentVolume) { delete(v.Annotations, volumeutil.AnnProvisionedBy) }), false},
		{"a volume whose path is elsewhere is not removed", pv(func(v *corev1.PersistentVolume) { v.Spec.Local.Path = "/data" }), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := reclaimable(tt.pv, "n1", dir); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
