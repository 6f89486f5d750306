package volumes

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// fakeSources serves config maps, secrets and one token from memory.
type fakeSources struct {
	configMaps map[string]*corev1.ConfigMap
	secrets    map[string]*corev1.Secret
	due        time.Time
}

func (f fakeSources) configMap(_ context.Context, _, name string) (*corev1.ConfigMap, error) {
	if cm, ok := f.configMaps[name]; ok {
		return cm, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("configmaps"), name)
}

func (f fakeSources) secret(_ context.Context, _, name string) (*corev1.Secret, error) {
	if s, ok := f.secrets[name]; ok {
		return s, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("secrets"), name)
}

func (f fakeSources) token(_ context.Context, pod *corev1.Pod, audience string, seconds int64, _ time.Time) (string, time.Time, error) {
	return "token-for-" + pod.Spec.ServiceAccountName + "-" + audience, f.due, nil
}

func TestProjectedVolume(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	src := fakeSources{
		configMaps: map[string]*corev1.ConfigMap{"kube-root-ca.crt": {Data: map[string]string{"ca.crt": "CA", "other": "x"}}},
		secrets:    map[string]*corev1.Secret{"creds": {Data: map[string][]byte{"user": []byte("admin"), "pass": []byte("pw")}}},
		due:        now.Add(48 * time.Minute),
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"},
		Spec: corev1.PodSpec{ServiceAccountName: "default", Containers: []corev1.Container{{Name: "c"}}}}
	apiAccess := []corev1.VolumeProjection{
		{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To(int64(3607))}},
		{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
			Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
		{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace",
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
	}
	tests := []struct {
		name      string
		proj      *corev1.ProjectedVolumeSource
		want      map[string]string      // path: content
		modes     map[string]os.FileMode // path: mode, where checked
		wantDue   time.Time
		wantError string
	}{
		{name: "the admission plugin's volume: token, ca.crt and namespace at 0644",
			proj:  &corev1.ProjectedVolumeSource{DefaultMode: ptr.To(int32(0o644)), Sources: apiAccess},
			want:  map[string]string{"token": "token-for-default-", "ca.crt": "CA", "namespace": "ns"},
			modes: map[string]os.FileMode{"token": 0o644, "ca.crt": 0o644, "namespace": 0o644}, wantDue: src.due},
		{name: "defaultMode and an item's own mode",
			proj: &corev1.ProjectedVolumeSource{DefaultMode: ptr.To(int32(0o400)), Sources: []corev1.VolumeProjection{
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"},
					Items: []corev1.KeyToPath{{Key: "user", Path: "u"}, {Key: "pass", Path: "dir/p", Mode: ptr.To(int32(0o600))}}}},
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "vault-token", Audience: "vault"}},
			}},
			want:  map[string]string{"u": "admin", "dir/p": "pw", "vault-token": "token-for-default-vault"},
			modes: map[string]os.FileMode{"u": 0o400, "dir/p": 0o600, "vault-token": 0o400}, wantDue: src.due},
		{name: "a source without items projects every key",
			proj: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}}}}},
			want: map[string]string{"ca.crt": "CA", "other": "x"}, modes: map[string]os.FileMode{"other": 0o644}},
		{name: "a missing optional source is skipped",
			proj: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}, Optional: ptr.To(true)}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
					Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}}}},
			want: map[string]string{"ca.crt": "CA"}},
		{name: "a missing source fails the volume",
			proj: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}}}}},
			wantError: `configmap "nope" not found`},
		{name: "a missing key fails the volume",
			proj: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"},
					Items: []corev1.KeyToPath{{Key: "token", Path: "t"}}}}}},
			wantError: "references non-existent secret key: token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files, due, err := projectVolume(context.Background(), src, pod, tt.proj, "10.0.0.5", "192.168.1.1", now)
			if tt.wantError != "" {
				if err == nil || err.Error() != tt.wantError {
					t.Fatalf("err = %v, want %q", err, tt.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !due.Equal(tt.wantDue) {
				t.Errorf("due %v, want %v", due, tt.wantDue)
			}
			dir := t.TempDir()
			if err := files.write(dir, tt.proj.DefaultMode); err != nil {
				t.Fatal(err)
			}
			n := 0
			_ = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
				if err == nil && !info.IsDir() {
					n++
				}
				return nil
			})
			if n != len(tt.want) {
				t.Errorf("%d files, want %d", n, len(tt.want))
			}
			for path, content := range tt.want {
				got, err := os.ReadFile(filepath.Join(dir, path))
				if err != nil || string(got) != content {
					t.Errorf("%s = %q, %v; want %q", path, got, err, content)
				}
			}
			for path, mode := range tt.modes {
				if info, err := os.Stat(filepath.Join(dir, path)); err != nil || info.Mode().Perm() != mode {
					t.Errorf("%s mode = %v, %v; want %v", path, info.Mode().Perm(), err, mode)
				}
			}
		})
	}
}

// A refreshed token replaces the file in place of the old one, by rename.
func TestProjectedTokenRewrite(t *testing.T) {
	dir := t.TempDir()
	for _, tok := range []string{"old", "new"} {
		f := &projectedFiles{}
		f.set("token", []byte(tok), nil)
		if err := f.write(dir, nil); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "token")); string(got) != "new" {
		t.Errorf("token = %q, want new", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "token.tmp")); !os.IsNotExist(err) {
		t.Errorf("a temporary file is left: %v", err)
	}
}
