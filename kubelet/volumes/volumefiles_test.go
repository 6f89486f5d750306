package volumes

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"minik/kubelet/podstep"
)

func TestVolumeItemsNamingAMissingKey(t *testing.T) {
	yes, no := true, false
	data := map[string][]byte{"user": []byte("admin")}
	items := []corev1.KeyToPath{{Key: "user", Path: "u"}, {Key: "password", Path: "p"}}
	cases := []struct {
		name     string
		items    []corev1.KeyToPath
		optional *bool
		wantErr  string // "" for none
	}{
		{"fail the volume when it is not optional", items, nil, "references non-existent secret key: password"},
		{"fail the volume when optional is false", items, &no, "references non-existent secret key: password"},
		{"are skipped when the volume is optional", items, &yes, ""},
		{"are no matter when no items are named", nil, nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			err := keyError(writeVolumeFiles(dir, data, tc.items, nil), tc.optional, "references non-existent secret key: %s")
			var ce *podstep.ConfigError
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("error %v, want none", err)
			case tc.wantErr != "" && (!errors.As(err, &ce) || err.Error() != tc.wantErr):
				t.Fatalf("error %v, want the config error %q", err, tc.wantErr)
			}
			name := "user"
			if tc.items != nil {
				name = "u"
			}
			if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(got) != "admin" {
				t.Fatalf("the present key's file reads %q, %v; want admin", got, err)
			}
		})
	}
}
