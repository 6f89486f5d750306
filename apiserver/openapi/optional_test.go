package openapi

import (
	"os"
	"testing"

	"minik/apiserver/openapi/optionalfields"
)

// The table of optional-by-comment fields is what the module sources in
// go.mod say: after a k8s.io/api upgrade, `go generate ./apiserver/openapi`.
func TestOptionalFieldsUpToDate(t *testing.T) {
	fields, err := optionalfields.Find(".")
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile("optional_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if string(committed) != optionalfields.Render(fields) {
		t.Fatal("optional_gen.go is stale: run go generate ./apiserver/openapi")
	}
	for _, f := range []string{"k8s.io/api/networking/v1.NetworkPolicySpec.podSelector", "k8s.io/api/rbac/v1.Role.rules"} {
		if !optionalByComment[f] {
			t.Errorf("%s is not in the table", f)
		}
	}
}
