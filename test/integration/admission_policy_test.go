package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"minik/internal/testcluster"
)

// TestAdmissionPolicyWithKubectl drives LimitRanger, ResourceQuota (with
// the resource quota controller) and PodSecurity through kubectl, as a
// user meets them.
func TestAdmissionPolicyWithKubectl(t *testing.T) {
	c := testcluster.Start(t, "--scheduler=false")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("minik up log:\n%s", c.Log())
		}
	})
	kubectl := func(stdin string, args ...string) string { t.Helper(); return c.MustKubectl(t, stdin, args...) }
	kubectl("", "create", "namespace", "team")

	t.Run("a LimitRange fills in defaults", func(t *testing.T) {
		kubectl(`apiVersion: v1
kind: LimitRange
metadata: {name: defaults, namespace: team}
spec:
  limits:
  - type: Container
    default: {cpu: 500m, memory: 128Mi}
    defaultRequest: {cpu: 100m, memory: 64Mi}
    max: {cpu: "1"}
`, "apply", "-f", "-")
		if out := kubectl("", "get", "limitranges", "-n", "team"); !strings.Contains(out, "defaults") || !strings.Contains(out, "CREATED AT") {
			t.Errorf("kubectl get limitranges:\n%s", out)
		}
		kubectl("", "run", "lr", "-n", "team", "--image=busybox", "--restart=Never", "--", "sleep", "1")
		out := kubectl("", "get", "pod", "lr", "-n", "team", "-o", "jsonpath={.spec.containers[0].resources}")
		for _, want := range []string{`"limits":{"cpu":"500m","memory":"128Mi"}`, `"requests":{"cpu":"100m","memory":"64Mi"}`} {
			if !strings.Contains(out, want) {
				t.Errorf("resources %s, want %s", out, want)
			}
		}
		out = kubectlFails(t, c, "run", "big", "-n", "team", "--image=busybox", "--restart=Never",
			`--overrides={"spec":{"containers":[{"name":"big","image":"busybox","resources":{"limits":{"cpu":"2"}}}]}}`)
		if !strings.Contains(out, `pods "big" is forbidden: maximum cpu usage per Container is 1, but limit is 2`) {
			t.Errorf("over the max: %s", out)
		}
	})

	t.Run("a quota stops the pod one past its limit", func(t *testing.T) {
		kubectl("", "create", "quota", "pods", "-n", "team", "--hard=pods=2,requests.cpu=1,count/configmaps=50")
		eventually(t, 30*time.Second, "the quota's usage", func() (bool, string) {
			out := kubectl("", "get", "quota", "pods", "-n", "team", "-o", "jsonpath={.status.used.pods}")
			return out == "1", out // the pod "lr" from above
		})
		kubectl("", "run", "p2", "-n", "team", "--image=busybox", "--restart=Never", "--", "sleep", "1")
		out := kubectlFails(t, c, "run", "p3", "-n", "team", "--image=busybox", "--restart=Never", "--", "sleep", "1")
		if !strings.Contains(out, `pods "p3" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=2, limited: pods=2`) {
			t.Errorf("the third pod: %s", out)
		}
		out = kubectl("", "describe", "quota", "pods", "-n", "team")
		for _, want := range []string{"Resource", "Used", "Hard", "pods", "2     2", "requests.cpu", "200m  1"} {
			if !strings.Contains(out, want) {
				t.Errorf("kubectl describe quota lacks %q:\n%s", want, out)
			}
		}
		if out := kubectl("", "get", "quota", "-n", "team"); !strings.Contains(out, "pods: 2/2") || !strings.Contains(out, "requests.cpu: 200m/1") {
			t.Errorf("kubectl get quota:\n%s", out)
		}
		// Deleting a pod gives its share back (the controller).
		kubectl("", "delete", "pod", "p2", "-n", "team", "--grace-period=0", "--force")
		eventually(t, 30*time.Second, "the freed slot", func() (bool, string) {
			out := kubectl("", "get", "quota", "pods", "-n", "team", "-o", "jsonpath={.status.used.pods}")
			return out == "1", out
		})
		kubectl("", "run", "p3", "-n", "team", "--image=busybox", "--restart=Never", "--", "sleep", "1")
	})

	t.Run("a quota on claims counts the claims there are and refuses the one past it", func(t *testing.T) {
		claim := func(name string) string {
			return `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: ` + name + `, namespace: team}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
`
		}
		used := func() string {
			return kubectl("", "get", "quota", "claims", "-n", "team", "-o",
				`jsonpath={.status.used.persistentvolumeclaims}/{.status.used.requests\.storage}`)
		}
		// The claim comes before the quota: only the controller can count it.
		kubectl(claim("data1"), "create", "-f", "-")
		kubectl("", "create", "quota", "claims", "-n", "team", "--hard=persistentvolumeclaims=1,requests.storage=1Gi")
		eventually(t, 30*time.Second, "the claim counted", func() (bool, string) {
			out := used()
			return out == "1/1Gi", out
		})
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, err := c.Kubectl(ctx, claim("data2"), "create", "-f", "-")
		if err == nil || !strings.Contains(out, `Error from server (Forbidden)`) ||
			!strings.Contains(out, `persistentvolumeclaims "data2" is forbidden: exceeded quota: claims, `+
				`requested: persistentvolumeclaims=1,requests.storage=1Gi, used: persistentvolumeclaims=1,requests.storage=1Gi, `+
				`limited: persistentvolumeclaims=1,requests.storage=1Gi`) {
			t.Errorf("the second claim (err %v): %s", err, out)
		}
		// Deleting the claim gives its share back (no pod uses it, so its
		// protection finalizer goes at once).
		kubectl("", "delete", "pvc", "data1", "-n", "team", "--wait=false")
		eventually(t, 30*time.Second, "the freed claim", func() (bool, string) {
			out := used()
			return out == "0/0", out
		})
		kubectl(claim("data2"), "create", "-f", "-")
	})

	t.Run("a restricted namespace refuses a privileged pod", func(t *testing.T) {
		kubectl("", "create", "namespace", "locked")
		out := kubectl("", "label", "namespace", "locked", "pod-security.kubernetes.io/enforce=restricted", "pod-security.kubernetes.io/warn=restricted")
		if !strings.Contains(out, "labeled") {
			t.Errorf("label: %s", out)
		}
		out = kubectlFails(t, c, "run", "root", "-n", "locked", "--image=busybox", "--restart=Never",
			`--overrides={"spec":{"containers":[{"name":"root","image":"busybox","securityContext":{"privileged":true}}]}}`)
		if !strings.Contains(out, `pods "root" is forbidden: violates PodSecurity "restricted:latest": privileged (container "root" must not set securityContext.privileged=true)`) {
			t.Errorf("privileged pod: %s", out)
		}
		// A Deployment is admitted with a warning.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, err := c.Kubectl(ctx, "", "create", "deployment", "web", "-n", "locked", "--image=busybox")
		if err != nil || !strings.Contains(out, `Warning: would violate PodSecurity "restricted:latest"`) {
			t.Errorf("deployment (err %v): %s", err, out)
		}
		out = kubectlFails(t, c, "label", "namespace", "locked", "--overwrite", "pod-security.kubernetes.io/enforce=strict")
		if !strings.Contains(out, "pod-security.kubernetes.io/enforce") || !strings.Contains(out, "must be one of privileged, baseline, restricted") {
			t.Errorf("an invalid level: %s", out)
		}
	})
}
