package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"minik/internal/testcluster"
)

// userKubeconfig writes a kubeconfig for user (in groups).
func userKubeconfig(t *testing.T, c *testcluster.Cluster, user string, groups ...string) string {
	t.Helper()
	return c.UserKubeconfig(user, groups...)
}

// kubectlFails runs kubectl expecting an error and returns its output.
func kubectlFails(t *testing.T, c *testcluster.Cluster, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := c.Kubectl(ctx, "", args...)
	if err == nil {
		t.Fatalf("kubectl %v succeeded, want an error: %s", args, out)
	}
	return out
}

// RBAC as a kubectl user meets it: the default roles, a namespaced Role,
// auth can-i and whoami, impersonation that obeys RBAC, and the
// aggregated view role.
func TestRBACWithKubectl(t *testing.T) {
	c := testcluster.Start(t, "--scheduler=false")

	out := c.MustKubectl(t, "", "get", "clusterroles")
	for _, name := range []string{"cluster-admin", "admin", "edit", "view", "system:kube-scheduler",
		"system:kube-controller-manager", "system:node", "system:basic-user", "system:discovery", "system:public-info-viewer"} {
		if !strings.Contains(out, name) {
			t.Errorf("kubectl get clusterroles lacks %s:\n%s", name, out)
		}
	}
	if out := c.MustKubectl(t, "", "get", "clusterrolebinding", "cluster-admin", "-o", "wide"); !strings.Contains(out, "ClusterRole/cluster-admin") || !strings.Contains(out, "system:masters") {
		t.Errorf("cluster-admin binding:\n%s", out)
	}

	c.MustKubectl(t, "", "create", "namespace", "team-a")
	c.MustKubectl(t, "", "create", "role", "pod-reader", "--verb=get,list,watch", "--resource=pods", "-n", "team-a")
	c.MustKubectl(t, "", "create", "rolebinding", "alice-pods", "--role=pod-reader", "--user=alice", "-n", "team-a")

	eventually(t, 10*time.Second, "alice may list pods in team-a", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := c.Kubectl(ctx, "", "auth", "can-i", "list", "pods", "-n", "team-a", "--as", "alice")
		return err == nil && strings.TrimSpace(out) == "yes", out
	})
	if out := kubectlFails(t, c, "auth", "can-i", "list", "pods", "-n", "default", "--as", "alice"); strings.TrimSpace(out) != "no" {
		t.Errorf("can-i in default: %q, want no", out)
	}
	out = kubectlFails(t, c, "get", "pods", "-n", "default", "--as", "alice")
	if !strings.Contains(out, `pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default"`) {
		t.Errorf("alice listing default: %s", out)
	}
	c.MustKubectl(t, "", "get", "pods", "-n", "team-a", "--as", "alice")
	if out := c.MustKubectl(t, "", "auth", "whoami", "--as", "alice"); !strings.Contains(out, "alice") || !strings.Contains(out, "system:authenticated") {
		t.Errorf("whoami: %s", out)
	}
	if out := c.MustKubectl(t, "", "auth", "whoami"); !strings.Contains(out, "system:masters") {
		t.Errorf("admin whoami: %s", out)
	}
	if out := c.MustKubectl(t, "", "auth", "can-i", "--list", "-n", "team-a", "--as", "alice"); !strings.Contains(out, "pods") || !strings.Contains(out, "[get list watch]") {
		t.Errorf("can-i --list: %s", out)
	}

	// Impersonation obeys RBAC: carol may not act as alice until allowed.
	carol := userKubeconfig(t, c, "carol")
	out = kubectlFails(t, c, "--kubeconfig", carol, "get", "pods", "-n", "team-a", "--as", "alice")
	if !strings.Contains(out, `users "alice" is forbidden: User "carol" cannot impersonate resource "users" in API group "" at the cluster scope`) {
		t.Errorf("carol impersonating alice: %s", out)
	}
	c.MustKubectl(t, "", "create", "clusterrole", "impersonate-alice", "--verb=impersonate", "--resource=users", "--resource-name=alice")
	c.MustKubectl(t, "", "create", "clusterrolebinding", "carol-as-alice", "--clusterrole=impersonate-alice", "--user=carol")
	eventually(t, 10*time.Second, "carol acts as alice", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := c.Kubectl(ctx, "", "--kubeconfig", carol, "get", "pods", "-n", "team-a", "--as", "alice")
		return err == nil, out
	})
	// ...and as alice, only what alice may do; never as an admin.
	kubectlFails(t, c, "--kubeconfig", carol, "get", "pods", "-n", "default", "--as", "alice")
	kubectlFails(t, c, "--kubeconfig", carol, "get", "pods", "--as", "alice", "--as-group", "system:masters")

	// A user with edit in team-a may not grant itself more (escalation).
	c.MustKubectl(t, "", "create", "rolebinding", "dave-admin", "--clusterrole=admin", "--user=dave", "-n", "team-a")
	eventually(t, 20*time.Second, "the aggregated admin role gives dave pods", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := c.Kubectl(ctx, "", "auth", "can-i", "create", "deployments", "-n", "team-a", "--as", "dave")
		return err == nil && strings.TrimSpace(out) == "yes", out
	})
	out = kubectlFails(t, c, "create", "rolebinding", "dave-root", "--clusterrole=cluster-admin", "--user=dave", "-n", "team-a", "--as", "dave")
	if !strings.Contains(out, "is attempting to grant RBAC permissions not currently held") {
		t.Errorf("dave binding cluster-admin: %s", out)
	}
	c.MustKubectl(t, "", "create", "rolebinding", "dave-view", "--clusterrole=view", "--user=erin", "-n", "team-a", "--as", "dave")

	// The components' identities.
	if out := kubectlFails(t, c, "auth", "can-i", "create", "pods/exec", "--as", "system:kube-scheduler", "-A"); strings.TrimSpace(out) != "no" {
		t.Errorf("scheduler exec: %s", out)
	}
}
