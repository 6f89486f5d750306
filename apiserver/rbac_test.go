package apiserver

import (
	"net/url"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/client"
)

func rbacClient[T any](c *client.Client, resource string, namespaced bool) *client.Typed[T] {
	return client.For[T](c, client.Resource{Group: rbacv1.GroupName, Version: "v1", Resource: resource, Namespaced: namespaced})
}

// A user with a namespaced Role lists pods there and gets Kubernetes'
// 403 elsewhere; discovery is open to every authenticated user.
func TestRBACRoleGrantsOnlyItsNamespace(t *testing.T) {
	ts := startTestServer(t)
	ctx := t.Context()
	admin := ts.client(t)
	alice := ts.clientAs(t, "alice")
	if _, err := admin.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := alice.Do(ctx, "GET", "/api/v1/namespaces/team-a/pods", nil, nil, nil); !apierrors.IsForbidden(err) {
		t.Fatalf("before any binding: %v, want Forbidden", err)
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "pod-reader", Namespace: "team-a"},
		Rules: []rbacv1.PolicyRule{rule("get,list,watch", "", "pods")}}
	if _, err := rbacClient[rbacv1.Role](admin, "roles", true).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "alice-reads", Namespace: "team-a"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "pod-reader"},
		Subjects: []rbacv1.Subject{subject(rbacv1.UserKind, "alice")}}
	if _, err := rbacClient[rbacv1.RoleBinding](admin, "rolebindings", true).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return alice.Do(ctx, "GET", "/api/v1/namespaces/team-a/pods", nil, nil, nil) == nil })
	err := alice.Do(ctx, "GET", "/api/v1/namespaces/default/pods", nil, nil, nil)
	want := `pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default"`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Errorf("listing another namespace: %v, want %q", err, want)
	}
	if err := alice.Do(ctx, "DELETE", "/api/v1/namespaces/team-a/pods/x", nil, nil, nil); !apierrors.IsForbidden(err) {
		t.Errorf("deleting with a read role: %v, want Forbidden", err)
	}
	for _, p := range []string{"/api", "/apis", "/api/v1", "/apis/apps/v1"} {
		if err := alice.Do(ctx, "GET", p, nil, nil, nil); err != nil {
			t.Errorf("discovery %s: %v", p, err)
		}
	}
	if err := alice.Do(ctx, "GET", "/debug/pprof/", nil, nil, nil); !apierrors.IsForbidden(err) {
		t.Errorf("profiling as alice: %v, want Forbidden", err)
	}
}

// A user may grant only what it holds: creating a role with more rights,
// or binding a more powerful role, is refused unless it has the escalate
// or bind verb.
func TestRBACEscalationIsRefused(t *testing.T) {
	ts := startTestServer(t)
	ctx := t.Context()
	admin := ts.client(t)
	bob := ts.clientAs(t, "bob")
	roles := rbacClient[rbacv1.Role](admin, "roles", true)
	bindings := rbacClient[rbacv1.RoleBinding](admin, "rolebindings", true)
	mustCreate(t, func() error {
		_, err := roles.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "rbac-manager", Namespace: "default"},
			Rules: []rbacv1.PolicyRule{rule("create,get,list,update", rbacv1.GroupName, "roles", "rolebindings"), rule("get,list", "", "pods")}}, metav1.CreateOptions{})
		return err
	})
	mustCreate(t, func() error {
		_, err := bindings.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "bob", Namespace: "default"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "rbac-manager"},
			Subjects: []rbacv1.Subject{subject(rbacv1.UserKind, "bob")}}, metav1.CreateOptions{})
		return err
	})
	bobRoles := rbacClient[rbacv1.Role](bob, "roles", true)
	bobBindings := rbacClient[rbacv1.RoleBinding](bob, "rolebindings", true)
	waitFor(t, func() bool {
		_, err := bobRoles.List(ctx, "default", metav1.ListOptions{})
		return err == nil
	})

	_, err := bobRoles.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "secrets", Namespace: "default"},
		Rules: []rbacv1.PolicyRule{rule("get", "", "secrets")}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}`) {
		t.Errorf("a role with rights bob lacks: %v, want Forbidden naming them", err)
	}
	if _, err := bobRoles.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "pods", Namespace: "default"},
		Rules: []rbacv1.PolicyRule{rule("get", "", "pods")}}, metav1.CreateOptions{}); err != nil {
		t.Errorf("a role with rights bob holds: %v", err)
	}
	bindAdmin := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "bob-admin", Namespace: "default"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{subject(rbacv1.UserKind, "bob")}}
	if _, err := bobBindings.Create(ctx, bindAdmin, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("bob binding cluster-admin: %v, want Forbidden", err)
	}
	// With the bind verb on that role, the binding is allowed.
	mustCreate(t, func() error {
		_, err := rbacClient[rbacv1.ClusterRole](admin, "clusterroles", false).Create(ctx, &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "bind-admin"},
			Rules:      []rbacv1.PolicyRule{named(rule("bind", rbacv1.GroupName, "clusterroles"), "cluster-admin")}}, metav1.CreateOptions{})
		return err
	})
	mustCreate(t, func() error {
		_, err := bindings.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "bob-bind", Namespace: "default"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "bind-admin"},
			Subjects: []rbacv1.Subject{subject(rbacv1.UserKind, "bob")}}, metav1.CreateOptions{})
		return err
	})
	waitFor(t, func() bool {
		_, err := bobBindings.Create(ctx, bindAdmin, metav1.CreateOptions{DryRun: []string{"All"}})
		return err == nil
	})
}

// Each component's credential does its job and no more: the scheduler
// and the controller manager may not run commands in pods or read their
// logs, the proxy and DNS only read what they serve.
func TestComponentCredentialsAreLeastPrivilege(t *testing.T) {
	ts := startTestServer(t)
	ctx := t.Context()
	admin := ts.client(t)
	mustCreate(t, func() error {
		_, err := admin.Pods().Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{})
		return err
	})
	mustCreate(t, func() error {
		_, err := admin.Secrets().Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "default"}}, metav1.CreateOptions{})
		return err
	})
	type call struct {
		method, path string
		allowed      bool
	}
	exec := url.Values{"command": {"sh"}}
	for user, calls := range map[string][]call{
		"system:kube-scheduler": {
			{"GET", "/api/v1/pods", true},
			{"GET", "/api/v1/nodes", true},
			{"GET", "/apis/policy/v1/poddisruptionbudgets", true},
			{"GET", "/api/v1/namespaces/default/secrets/s", false},
			{"GET", "/api/v1/namespaces/default/pods/p/log", false},
			{"POST", "/api/v1/namespaces/default/pods/p/exec", false},
			{"DELETE", "/api/v1/nodes/n", false},
			{"GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles", false},
		},
		// The manager itself only watches, and gets its controllers' tokens.
		"system:kube-controller-manager": {
			{"GET", "/apis/apps/v1/deployments", true},
			{"GET", "/api/v1/secrets", true},
			{"POST", "/api/v1/namespaces/kube-system/serviceaccounts", true},
			{"POST", "/api/v1/namespaces/kube-system/serviceaccounts/job-controller/token", true},
			{"POST", "/api/v1/namespaces/kube-system/serviceaccounts/default/token", false},
			{"POST", "/api/v1/namespaces/default/serviceaccounts/job-controller/token", false},
			{"DELETE", "/api/v1/namespaces/default/pods/p", false},
			{"GET", "/api/v1/namespaces/default/secrets/s", false},
			{"POST", "/api/v1/namespaces/default/pods/p/exec", false},
			{"GET", "/api/v1/namespaces/default/pods/p/log", false},
			{"POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", false},
		},
		// Each controller's account (--use-service-account-credentials)
		// writes only what that controller owns.
		"system:serviceaccount:kube-system:deployment-controller": {
			{"POST", "/apis/apps/v1/namespaces/default/replicasets", true},
			{"PUT", "/apis/apps/v1/namespaces/default/deployments/d/status", true},
			{"POST", "/api/v1/namespaces/default/pods", false},
			{"DELETE", "/apis/batch/v1/namespaces/default/jobs/j", false},
			{"GET", "/api/v1/namespaces/default/secrets/s", false},
		},
		"system:serviceaccount:kube-system:job-controller": {
			{"POST", "/api/v1/namespaces/default/pods", true},
			{"DELETE", "/apis/batch/v1/namespaces/default/jobs/j", true},
			{"POST", "/apis/apps/v1/namespaces/default/replicasets", false},
			{"POST", "/api/v1/namespaces/default/pods/p/exec", false},
		},
		"system:serviceaccount:kube-system:generic-garbage-collector": {
			{"DELETE", "/apis/apps/v1/namespaces/default/replicasets/r", true},
			{"POST", "/api/v1/namespaces/default/pods", false},
			{"POST", "/api/v1/namespaces/default/pods/p/exec", false},
		},
		"system:kube-proxy": {
			{"GET", "/api/v1/services", true},
			{"GET", "/apis/discovery.k8s.io/v1/endpointslices", true},
			{"GET", "/api/v1/nodes", true},
			{"GET", "/api/v1/secrets", false},
			{"GET", "/api/v1/pods", false},
		},
		"system:kube-dns": {
			{"GET", "/api/v1/services", true},
			{"GET", "/api/v1/namespaces/default/secrets/s", false},
			{"DELETE", "/api/v1/namespaces/default/configmaps/web", false},
		},
	} {
		c := ts.clientAs(t, user)
		for _, k := range calls {
			var q url.Values
			if strings.HasSuffix(k.path, "/exec") {
				q = exec
			}
			err := c.Do(ctx, k.method, k.path, q, nil, nil)
			denied := apierrors.IsForbidden(err)
			if k.allowed == denied {
				t.Errorf("%s %s %s: %v, want allowed=%v", user, k.method, k.path, err, k.allowed)
			}
		}
	}
}

// The default roles and bindings exist after start, and a second start
// on the same data keeps them without duplicating anything.
func TestBootstrapPolicyIsCreated(t *testing.T) {
	ts := startTestServer(t)
	ctx := t.Context()
	admin := ts.client(t)
	crs, err := rbacClient[rbacv1.ClusterRole](admin, "clusterroles", false).List(ctx, "", metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, r := range crs.Items {
		have[r.Name] = true
	}
	for _, name := range []string{"cluster-admin", "admin", "edit", "view", "system:kube-scheduler", "system:kube-controller-manager",
		"system:node", "system:basic-user", "system:discovery", "system:public-info-viewer", "system:node-proxier"} {
		if !have[name] {
			t.Errorf("cluster role %s is missing", name)
		}
	}
	if err := ts.srv.bootstrapRBAC(ctx); err != nil {
		t.Fatalf("reconciling again: %v", err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for range 200 {
		if cond() {
			return
		}
		sleepBrief()
	}
	t.Fatal("condition not met in 4s")
}

func sleepBrief() { time.Sleep(20 * time.Millisecond) }
