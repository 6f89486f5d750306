package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"minik/internal/testcluster"
)

// A Helm chart with a CRD (in crds/) and a custom object (a template)
// installs, upgrades and uninstalls with the real helm binary, as users
// of charts that ship CRDs do. CI installs helm (.ci/run).
func TestHelmChartWithCRD(t *testing.T) {
	helm, err := exec.LookPath("helm")
	if err != nil {
		t.Fatalf("helm is needed (CI installs it in .ci/run: go install helm.sh/helm/v3/cmd/helm@v3.22.0)")
	}
	c := testcluster.StartAPIOnly(t)
	chart := t.TempDir()
	files := map[string]string{
		"Chart.yaml":             "apiVersion: v2\nname: crontab\nversion: 0.1.0\n",
		"values.yaml":            "cronSpec: \"* * * * */5\"\nreplicas: 1\n",
		"crds/crontab.yaml":      crontabCRD,
		"templates/nightly.yaml": "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: {{ .Release.Name }}-nightly\nspec:\n  cronSpec: {{ .Values.cronSpec | quote }}\n  replicas: {{ .Values.replicas }}\n",
	}
	for name, content := range files {
		path := filepath.Join(chart, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	home := t.TempDir() // helm's cache and config, away from the user's
	run := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, helm, append(args, "--kubeconfig", c.Kubeconfig)...)
		cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home+"/cache", "HELM_CONFIG_HOME="+home+"/config", "HELM_DATA_HOME="+home+"/data")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}

	if out := run("install", "demo", chart, "--wait", "--timeout", "60s"); !strings.Contains(out, "STATUS: deployed") {
		t.Fatalf("install: %s", out)
	}
	if got := c.MustKubectl(t, "", "get", "crontab", "demo-nightly", "-o", "jsonpath={.spec.replicas}"); got != "1" {
		t.Fatalf("after install: replicas %q", got)
	}
	if out := run("upgrade", "demo", chart, "--set", "replicas=3", "--wait", "--timeout", "60s"); !strings.Contains(out, "has been upgraded") {
		t.Fatalf("upgrade: %s", out)
	}
	if got := c.MustKubectl(t, "", "get", "crontab", "demo-nightly", "-o", "jsonpath={.spec.replicas} {.metadata.generation}"); got != "3 2" {
		t.Fatalf("after upgrade: %q", got)
	}
	if out := run("uninstall", "demo", "--wait", "--timeout", "60s"); !strings.Contains(out, `release "demo" uninstalled`) {
		t.Fatalf("uninstall: %s", out)
	}
	if out := c.MustKubectl(t, "", "get", "crontabs", "-o", "name"); strings.TrimSpace(out) != "" {
		t.Fatalf("objects left after uninstall: %s", out)
	}
	// As with Kubernetes, helm keeps the CRDs of crds/.
	c.MustKubectl(t, "", "get", "crd", "crontabs.stable.example.com")
}
