package fieldmanager

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"

	"minik/apiserver/defaults"
	"minik/apiserver/openapi"
	"minik/apiserver/registry"
)

// newTestManager registers every served kind, as the apiserver does.
func newTestManager(t testing.TB) *Manager {
	t.Helper()
	var resources []openapi.Resource
	var kinds []*registry.Resource
	for _, res := range registry.All() {
		var list runtime.Object
		if res.NewList != nil {
			list = res.NewList()
		}
		resources = append(resources, openapi.Resource{Group: res.Group, Version: res.Version, Kind: res.Kind,
			Resource: res.Resource, Namespaced: res.Namespaced, Object: res.New(), List: list,
			Verbs: res.ServedVerbs(), Subresources: res.Subresources})
		if !res.Virtual && res.StorageOf == "" {
			kinds = append(kinds, res)
		}
	}
	m := New(func() (managedfields.TypeConverter, error) {
		models, err := openapi.Models(resources)
		if err != nil {
			return nil, err
		}
		return managedfields.NewTypeConverter(models, false)
	})
	for _, res := range kinds {
		m.Register(Kind{GVK: res.GroupVersion().WithKind(res.Kind), New: res.New, Default: defaults.Object, HasStatus: res.HasStatus})
	}
	return m
}

func TestManagerName(t *testing.T) {
	for _, tc := range []struct{ name, option, userAgent, want string }{
		{"the fieldManager option wins", "deployer", "kubectl/v1.32.0 (linux/amd64) kubernetes/abc", "deployer"},
		{"kubectl's User-Agent gives kubectl", "", "kubectl/v1.32.0 (linux/amd64) kubernetes/abc", "kubectl"},
		{"a plugin of kubectl keeps its own name", "", "kubectl-label/v1.32.0 (linux/amd64) kubernetes/abc", "kubectl-label"},
		{"a User-Agent without a slash is kept whole", "", "curl", "curl"},
		{"unprintable characters are dropped", "", "my\x00agent\n/1.0", "myagent"},
		{"no User-Agent gives no name", "", "", ""},
		{"a long User-Agent is cut at 128 bytes", "", strings.Repeat("a", 200), strings.Repeat("a", 128)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ManagerName(tc.option, tc.userAgent); got != tc.want {
				t.Errorf("ManagerName(%q, %q) = %q, want %q", tc.option, tc.userAgent, got, tc.want)
			}
		})
	}
}
