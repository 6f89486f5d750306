package apiserver

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/client"
)

func requestToken(t *testing.T, ts *testServer, as *client.Client, ns, sa string, spec authenticationv1.TokenRequestSpec) (string, error) {
	t.Helper()
	req := &authenticationv1.TokenRequest{Spec: spec}
	out := &authenticationv1.TokenRequest{}
	err := as.Do(t.Context(), http.MethodPost, "/api/v1/namespaces/"+ns+"/serviceaccounts/"+sa+"/token", nil, req, out)
	return out.Status.Token, err
}

// A service-account token authenticates as its account, with the
// account's RBAC rights, until its pod or account is gone.
func TestServiceAccountTokens(t *testing.T) {
	ts := startTestServer(t)
	ctx := t.Context()
	admin := ts.client(t)
	mustCreate(t, func() error {
		_, err := admin.ServiceAccounts().Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "lister", Namespace: "default"}}, metav1.CreateOptions{})
		return err
	})
	pod, err := admin.Pods().Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: "n1", ServiceAccountName: "lister", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, func() error {
		_, err := rbacClient[rbacv1.Role](admin, "roles", true).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "list-pods", Namespace: "default"},
			Rules: []rbacv1.PolicyRule{rule("list", "", "pods")}}, metav1.CreateOptions{})
		return err
	})
	mustCreate(t, func() error {
		_, err := rbacClient[rbacv1.RoleBinding](admin, "rolebindings", true).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "lister", Namespace: "default"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "list-pods"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "lister"}}}, metav1.CreateOptions{})
		return err
	})

	bound, err := requestToken(t, ts, admin, "default", "lister", authenticationv1.TokenRequestSpec{
		BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "app", UID: pod.UID}})
	if err != nil || bound == "" {
		t.Fatalf("token request: %v", err)
	}
	free, err := requestToken(t, ts, admin, "default", "lister", authenticationv1.TokenRequestSpec{})
	if err != nil {
		t.Fatal(err)
	}
	sa := ts.clientWithToken(t, bound)
	waitFor(t, func() bool { return sa.Do(ctx, "GET", "/api/v1/namespaces/default/pods", nil, nil, nil) == nil })
	if err := sa.Do(ctx, "GET", "/api/v1/namespaces/kube-system/pods", nil, nil, nil); !apierrors.IsForbidden(err) {
		t.Errorf("another namespace: %v, want Forbidden", err)
	}
	review := &authenticationv1.SelfSubjectReview{}
	if err := sa.Do(ctx, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", nil, review, review); err != nil ||
		review.Status.UserInfo.Username != "system:serviceaccount:default:lister" {
		t.Errorf("whoami with the token: %v %+v", err, review.Status.UserInfo)
	}
	if _, err := requestToken(t, ts, admin, "default", "lister", authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64)}); !apierrors.IsInvalid(err) {
		t.Errorf("a token for 0 seconds: %v, want 422", err)
	}

	// The pod goes: its token stops working; the unbound one goes on.
	if err := admin.Pods().Delete(ctx, "default", "app", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		return apierrors.IsUnauthorized(sa.Do(ctx, "GET", "/api/v1/namespaces/default/pods", nil, nil, nil))
	})
	freeClient := ts.clientWithToken(t, free)
	if err := freeClient.Do(ctx, "GET", "/api/v1/namespaces/default/pods", nil, nil, nil); err != nil {
		t.Errorf("the unbound token: %v", err)
	}
	// The account goes: every token of it stops working.
	if err := admin.ServiceAccounts().Delete(ctx, "default", "lister", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		return apierrors.IsUnauthorized(freeClient.Do(ctx, "GET", "/api/v1/namespaces/default/pods", nil, nil, nil))
	})
	if err := ts.clientWithToken(t, "not-a-token").Do(ctx, "GET", "/api", nil, nil, nil); !apierrors.IsUnauthorized(err) {
		t.Errorf("a garbage token: %v, want 401", err)
	}
	// The issuer's documents are public.
	anon := ts.clientWithToken(t, "")
	var jwks map[string]any
	if err := anon.Do(ctx, "GET", "/openid/v1/jwks", nil, nil, &jwks); err != nil || len(jwks["keys"].([]any)) != 1 {
		t.Errorf("jwks: %v %v", err, jwks)
	}
}

// TokenReview says whom a token names and for which audiences, as the
// ServiceAccounts conformance specs check a token they requested or read
// from a pod.
func TestTokenReview(t *testing.T) {
	ts := startTestServer(t)
	ctx := t.Context()
	admin := ts.client(t)
	sa, err := admin.ServiceAccounts().Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "reviewed", Namespace: "default"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod, err := admin.Pods().Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "holder", Namespace: "default"},
		Spec: corev1.PodSpec{ServiceAccountName: "reviewed", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := requestToken(t, ts, admin, "default", "reviewed", authenticationv1.TokenRequestSpec{})
	if err != nil {
		t.Fatal(err)
	}
	bound, err := requestToken(t, ts, admin, "default", "reviewed", authenticationv1.TokenRequestSpec{
		BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "holder", UID: pod.UID}})
	if err != nil {
		t.Fatal(err)
	}
	vault, err := requestToken(t, ts, admin, "default", "reviewed", authenticationv1.TokenRequestSpec{Audiences: []string{"vault"}})
	if err != nil {
		t.Fatal(err)
	}
	review := func(t *testing.T, spec authenticationv1.TokenReviewSpec) (authenticationv1.TokenReviewStatus, error) {
		out := &authenticationv1.TokenReview{}
		err := admin.Do(ctx, http.MethodPost, "/apis/authentication.k8s.io/v1/tokenreviews", nil, &authenticationv1.TokenReview{Spec: spec}, out)
		return out.Status, err
	}
	tests := []struct {
		name          string
		spec          authenticationv1.TokenReviewSpec
		wantAuth      bool
		wantAudiences []string
		wantPod       string
	}{
		{"a token of an account names the account and the apiserver's audience", authenticationv1.TokenReviewSpec{Token: plain}, true, []string{"https://kubernetes.default.svc.cluster.local"}, ""},
		{"a token bound to a pod names the pod too", authenticationv1.TokenReviewSpec{Token: bound}, true, []string{"https://kubernetes.default.svc.cluster.local"}, "holder"},
		{"a token for another audience is valid for that audience", authenticationv1.TokenReviewSpec{Token: vault, Audiences: []string{"vault", "other"}}, true, []string{"vault"}, ""},
		{"a token for another audience does not authenticate to the apiserver", authenticationv1.TokenReviewSpec{Token: vault}, false, nil, ""},
		{"a garbage token does not authenticate", authenticationv1.TokenReviewSpec{Token: "not-a-token"}, false, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := review(t, tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			if st.Authenticated != tt.wantAuth || fmt.Sprint(st.Audiences) != fmt.Sprint(tt.wantAudiences) {
				t.Fatalf("authenticated %v audiences %v, want %v %v", st.Authenticated, st.Audiences, tt.wantAuth, tt.wantAudiences)
			}
			if !tt.wantAuth {
				return
			}
			if st.User.Username != "system:serviceaccount:default:reviewed" || st.User.UID != string(sa.UID) ||
				!slices.Contains(st.User.Groups, "system:authenticated") || len(st.User.Extra["authentication.kubernetes.io/credential-id"]) != 1 {
				t.Errorf("user %+v, want the account with its UID, system:authenticated and a credential ID", st.User)
			}
			if got := strings.Join(st.User.Extra["authentication.kubernetes.io/pod-name"], ","); got != tt.wantPod {
				t.Errorf("pod-name %q, want %q", got, tt.wantPod)
			}
		})
	}
	if _, err := review(t, authenticationv1.TokenReviewSpec{}); !apierrors.IsBadRequest(err) {
		t.Errorf("a review without a token: %v, want 400", err)
	}
}

// A kubelet may get tokens only for the accounts of its own pods, bound
// to those pods.
func TestNodeTokenRequests(t *testing.T) {
	ts := startTestServer(t)
	ctx := t.Context()
	admin := ts.client(t)
	ka := ts.clientAs(t, "system:node:ka", "system:nodes")
	for _, name := range []string{"mine", "theirs"} {
		mustCreate(t, func() error {
			_, err := admin.ServiceAccounts().Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}, metav1.CreateOptions{})
			return err
		})
	}
	pod, err := admin.Pods().Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: "ka", ServiceAccountName: "mine", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	other, err := admin.Pods().Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: "kb", ServiceAccountName: "theirs", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bind := func(p *corev1.Pod) authenticationv1.TokenRequestSpec {
		return authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: p.Name, UID: p.UID}}
	}
	if _, err := requestToken(t, ts, ka, "default", "mine", bind(pod)); err != nil {
		t.Errorf("a token for its pod's account: %v", err)
	}
	if _, err := requestToken(t, ts, ka, "default", "mine", authenticationv1.TokenRequestSpec{}); !apierrors.IsForbidden(err) {
		t.Errorf("an unbound token: %v, want Forbidden", err)
	}
	if _, err := requestToken(t, ts, ka, "default", "theirs", bind(other)); !apierrors.IsForbidden(err) {
		t.Errorf("a token for another node's pod: %v, want Forbidden", err)
	}
}

// A static token file authenticates its users.
func TestStaticTokenFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(path, []byte("s3cret,alice,1001,\"dev,ops\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	users, err := loadTokenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	u := users["s3cret"]
	if u == nil || u.Name != "alice" || !u.in("dev") || !u.in("ops") || !u.in("system:authenticated") {
		t.Errorf("user %+v", u)
	}
}
