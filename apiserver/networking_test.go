package apiserver

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"minik/apiserver/validation"
	"minik/client"
)

func networkingClient[T any](c *client.Client, resource string, namespaced bool) *client.Typed[T] {
	return client.For[T](c, client.Resource{Group: networkingv1.GroupName, Version: "v1", Resource: resource, Namespaced: namespaced})
}

// rawRequest sends body (JSON) as the admin and returns the answer.
func rawRequest(t *testing.T, ts *testServer, method, path, body string) (*http.Response, string) {
	t.Helper()
	var headers []string
	if body != "" {
		headers = []string{"Content-Type", "application/json"}
	}
	resp, data := ts.response(t, method, path, body, headers...)
	return resp, string(data)
}

// causeFields returns the field paths of a 422's causes.
func causeFields(err error) []string {
	status, ok := err.(apierrors.APIStatus)
	if !ok || status.Status().Details == nil {
		return nil
	}
	var fields []string
	for _, c := range status.Status().Details.Causes {
		fields = append(fields, c.Field)
	}
	return fields
}

// TestNetworkingKinds: NetworkPolicy, Ingress and IngressClass are stored
// defaulted and validated, read, listed, watched and updated as upstream
// serves them; a NetworkPolicy write says that minik does not enforce it.
func TestNetworkingKinds(t *testing.T) {
	ts := startTestServer(t)
	ctx := t.Context()
	c := ts.client(t)
	policies := networkingClient[networkingv1.NetworkPolicy](c, "networkpolicies", true)
	ingresses := networkingClient[networkingv1.Ingress](c, "ingresses", true)
	classes := networkingClient[networkingv1.IngressClass](c, "ingressclasses", false)

	t.Run("a NetworkPolicy is stored defaulted, read, listed, watched and updated", func(t *testing.T) {
		list, err := policies.List(ctx, "default", metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w, err := policies.Watch(ctx, "default", metav1.ListOptions{ResourceVersion: list.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		np := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
			Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				Egress: []networkingv1.NetworkPolicyEgressRule{{Ports: []networkingv1.NetworkPolicyPort{{Port: ptr.To(intstr.FromInt32(53))}}}}}}
		created, err := policies.Create(ctx, np, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := created.Spec.PolicyTypes; len(got) != 2 || got[0] != networkingv1.PolicyTypeIngress || got[1] != networkingv1.PolicyTypeEgress {
			t.Errorf("policyTypes %v, want [Ingress Egress] for a policy with egress rules", got)
		}
		if p := created.Spec.Egress[0].Ports[0].Protocol; p == nil || *p != corev1.ProtocolTCP {
			t.Errorf("port protocol %v, want TCP", p)
		}
		if created.Generation != 1 {
			t.Errorf("generation %d, want 1", created.Generation)
		}
		select {
		case ev := <-w.Events():
			if ev.Type != watch.Added || ev.Object == nil || ev.Object.Name != "web" {
				t.Errorf("watch event %s %+v, want ADDED web", ev.Type, ev.Object)
			}
		case <-time.After(5 * time.Second):
			t.Error("no watch event for the new policy")
		}
		got := get(t, ctx, policies, "default", "web")
		got.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{{}}
		updated, err := policies.Update(ctx, got, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if updated.Generation != 2 || len(updated.Spec.Ingress) != 1 {
			t.Errorf("after a spec change: generation %d, ingress %v, want 2 and one rule", updated.Generation, updated.Spec.Ingress)
		}
		for _, selector := range []string{"metadata.name=web", "metadata.namespace=default"} {
			list, err := policies.List(ctx, "", metav1.ListOptions{FieldSelector: selector})
			if err != nil || len(list.Items) != 1 {
				t.Errorf("list with %s: %v, %d items, want 1", selector, err, len(list.Items))
			}
		}
		if _, err := policies.List(ctx, "", metav1.ListOptions{FieldSelector: "spec.podSelector=app"}); !apierrors.IsBadRequest(err) {
			t.Errorf("list by spec.podSelector: %v, want 400: only metadata fields select NetworkPolicies", err)
		}
	})

	t.Run("a NetworkPolicy create and update warn that minik does not enforce it, reads do not", func(t *testing.T) {
		const body = `{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":{"name":"deny-all","namespace":"default"},"spec":{"podSelector":{}}}`
		want := `299 - "` + networkPolicyNotEnforced + `"`
		base := "/apis/networking.k8s.io/v1/namespaces/default/networkpolicies"
		resp, out := rawRequest(t, ts, http.MethodPost, base, body)
		if resp.StatusCode != http.StatusCreated || resp.Header.Get("Warning") != want {
			t.Errorf("create: %d, Warning %q, want 201 and %q\n%s", resp.StatusCode, resp.Header.Get("Warning"), want, out)
		}
		for _, read := range []string{base, base + "/deny-all", "/apis/networking.k8s.io/v1/networkpolicies"} {
			resp, out = rawRequest(t, ts, http.MethodGet, read, "")
			if resp.StatusCode != http.StatusOK || len(resp.Header.Values("Warning")) != 0 {
				t.Errorf("GET %s: %d, Warning %q, want 200 and none\n%s", read, resp.StatusCode, resp.Header.Values("Warning"), out)
			}
		}
		np := get(t, ctx, policies, "default", "deny-all")
		np.Labels = map[string]string{"team": "a"}
		put, err := json.Marshal(np)
		if err != nil {
			t.Fatal(err)
		}
		resp, out = rawRequest(t, ts, http.MethodPut, base+"/deny-all", string(put))
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Warning") != want {
			t.Errorf("update: %d, Warning %q, want 200 and %q\n%s", resp.StatusCode, resp.Header.Get("Warning"), want, out)
		}
	})

	t.Run("an Ingress keeps spec and status apart and counts spec changes", func(t *testing.T) {
		ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
			Spec: networkingv1.IngressSpec{IngressClassName: ptr.To("nginx"), Rules: []networkingv1.IngressRule{{Host: "web.example.com",
				IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
					Path: "/", PathType: ptr.To(networkingv1.PathTypePrefix), Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
						Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}}}}}},
			Status: networkingv1.IngressStatus{LoadBalancer: networkingv1.IngressLoadBalancerStatus{
				Ingress: []networkingv1.IngressLoadBalancerIngress{{IP: "192.0.2.1"}}}}}
		created, err := ingresses.Create(ctx, ing, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(created.Status.LoadBalancer.Ingress) != 0 || created.Generation != 1 {
			t.Errorf("created with status %+v generation %d, want no status (a create sets none) and 1", created.Status, created.Generation)
		}
		created.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "192.0.2.10"}}
		withStatus, err := ingresses.UpdateStatus(ctx, created, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(withStatus.Status.LoadBalancer.Ingress) != 1 || withStatus.Generation != 1 {
			t.Errorf("after a status update: %+v generation %d, want the address and generation 1", withStatus.Status, withStatus.Generation)
		}
		withStatus.Spec.Rules[0].Host = "www.example.com"
		withStatus.Status = networkingv1.IngressStatus{}
		updated, err := ingresses.Update(ctx, withStatus, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if updated.Spec.Rules[0].Host != "www.example.com" || len(updated.Status.LoadBalancer.Ingress) != 1 || updated.Generation != 2 {
			t.Errorf("after a spec update: host %q status %+v generation %d, want the new host, the kept status and 2",
				updated.Spec.Rules[0].Host, updated.Status, updated.Generation)
		}
		list, err := ingresses.List(ctx, "default", metav1.ListOptions{})
		if err != nil || len(list.Items) != 1 {
			t.Errorf("list: %v, %v", err, list)
		}
	})

	t.Run("an Ingress made with only the class annotation gets upstream's deprecation warning", func(t *testing.T) {
		const body = `{"apiVersion":"networking.k8s.io/v1","kind":"Ingress","metadata":{"name":"old","namespace":"default",` +
			`"annotations":{"kubernetes.io/ingress.class":"nginx"}},"spec":{"defaultBackend":{"service":{"name":"web","port":{"number":80}}}}}`
		resp, out := rawRequest(t, ts, http.MethodPost, "/apis/networking.k8s.io/v1/namespaces/default/ingresses", body)
		want := `299 - "annotation \"kubernetes.io/ingress.class\" is deprecated, please use 'spec.ingressClassName' instead"`
		if resp.StatusCode != http.StatusCreated || resp.Header.Get("Warning") != want {
			t.Errorf("create: %d, Warning %q, want 201 and %q\n%s", resp.StatusCode, resp.Header.Get("Warning"), want, out)
		}
	})

	t.Run("an IngressClass is defaulted and keeps its controller", func(t *testing.T) {
		ic := &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "nginx"},
			Spec: networkingv1.IngressClassSpec{Controller: "k8s.io/ingress-nginx",
				Parameters: &networkingv1.IngressClassParametersReference{APIGroup: ptr.To("k8s.example.com"), Kind: "IngressParameters", Name: "lb"}}}
		created, err := classes.Create(ctx, ic, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if s := created.Spec.Parameters.Scope; s == nil || *s != networkingv1.IngressClassParametersReferenceScopeCluster || created.Generation != 1 {
			t.Errorf("parameters scope %v generation %d, want Cluster and 1", s, created.Generation)
		}
		created.Spec.Parameters.Name = "lb-2"
		updated, err := classes.Update(ctx, created, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if updated.Generation != 2 {
			t.Errorf("generation %d after a parameters change, want 2", updated.Generation)
		}
		updated.Spec.Controller = "example.com/other"
		_, err = classes.Update(ctx, updated, metav1.UpdateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.controller: Invalid value: \"example.com/other\": field is immutable") {
			t.Errorf("changing the controller: %v, want 422 spec.controller immutable", err)
		}
		list, err := classes.List(ctx, "", metav1.ListOptions{})
		if err != nil || len(list.Items) != 1 {
			t.Errorf("list: %v, %v", err, list)
		}
	})

	t.Run("an invalid object of each kind is a 422 with upstream's field path", func(t *testing.T) {
		_, err := policies.Create(ctx, &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: "default"},
			Spec: networkingv1.NetworkPolicySpec{Ingress: []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{
				{Port: ptr.To(intstr.FromString("http")), EndPort: ptr.To[int32](90)}}}}}}, metav1.CreateOptions{})
		assertInvalidAt(t, err, "spec.ingress[0].ports[0].endPort")
		_, err = ingresses.Create(ctx, &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: "default"},
			Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{IngressRuleValue: networkingv1.IngressRuleValue{
				HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{Path: "/", Backend: networkingv1.IngressBackend{
					Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}}}}}}},
			metav1.CreateOptions{})
		assertInvalidAt(t, err, "spec.rules[0].http.paths[0].pathType")
		_, err = classes.Create(ctx, &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "bad"},
			Spec: networkingv1.IngressClassSpec{Controller: "nginx"}}, metav1.CreateOptions{})
		assertInvalidAt(t, err, "spec.controller")
	})

	t.Run("edit writes ingresses and policies, view reads them and ingress status, neither touches ingress classes", func(t *testing.T) {
		bindings := rbacClient[rbacv1.ClusterRoleBinding](c, "clusterrolebindings", false)
		for _, b := range []struct{ user, role string }{
			{"dev", "system:aggregate-to-edit"}, {"dev", "system:aggregate-to-view"}, {"auditor", "system:aggregate-to-view"}} {
			_, err := bindings.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: b.user + "-" + strings.TrimPrefix(b.role, "system:")},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: b.role},
				Subjects: []rbacv1.Subject{subject(rbacv1.UserKind, b.user)}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
		}
		dev, auditor := ts.clientAs(t, "dev"), ts.clientAs(t, "auditor")
		waitFor(t, func() bool {
			_, err := networkingClient[networkingv1.Ingress](auditor, "ingresses", true).List(ctx, "default", metav1.ListOptions{})
			return err == nil
		})
		waitFor(t, func() bool {
			_, err := networkingClient[networkingv1.NetworkPolicy](dev, "networkpolicies", true).List(ctx, "default", metav1.ListOptions{})
			return err == nil
		})
		np := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "by-dev", Namespace: "default"}}
		if _, err := networkingClient[networkingv1.NetworkPolicy](dev, "networkpolicies", true).Create(ctx, np, metav1.CreateOptions{}); err != nil {
			t.Errorf("edit creating a NetworkPolicy: %v", err)
		}
		np.Name = "by-auditor"
		if _, err := networkingClient[networkingv1.NetworkPolicy](auditor, "networkpolicies", true).Create(ctx, np, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("view creating a NetworkPolicy: %v, want Forbidden", err)
		}
		if err := auditor.Do(ctx, http.MethodGet, "/apis/networking.k8s.io/v1/namespaces/default/ingresses/web/status", nil, nil, nil); err != nil {
			t.Errorf("view reading ingresses/status: %v", err)
		}
		ing := get(t, ctx, ingresses, "default", "web")
		if _, err := networkingClient[networkingv1.Ingress](dev, "ingresses", true).UpdateStatus(ctx, ing, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("edit writing ingresses/status: %v, want Forbidden (that is the controller's)", err)
		}
		for _, u := range []*client.Client{dev, auditor} {
			if _, err := networkingClient[networkingv1.IngressClass](u, "ingressclasses", false).List(ctx, "", metav1.ListOptions{}); !apierrors.IsForbidden(err) {
				t.Errorf("listing ingress classes without a role for them: %v, want Forbidden", err)
			}
		}
	})

	t.Run("an Ingress created without a class gets the newest default IngressClass, an update does not", func(t *testing.T) {
		defaultClass := func(name string) *networkingv1.IngressClass {
			return &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: name,
				Annotations: map[string]string{networkingv1.AnnotationIsDefaultIngressClass: "true"}},
				Spec: networkingv1.IngressClassSpec{Controller: "example.com/" + name}}
		}
		classless := func(name string, annotations map[string]string) *networkingv1.Ingress {
			return &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: annotations},
				Spec: networkingv1.IngressSpec{DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
					Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}
		}
		older, err := classes.Create(ctx, defaultClass("a-older"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		plain, err := ingresses.Create(ctx, classless("plain", nil), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := plain.Spec.IngressClassName; got == nil || *got != "a-older" {
			t.Errorf("ingressClassName %v, want the default class a-older", got)
		}
		annotated, err := ingresses.Create(ctx, classless("annotated", map[string]string{validation.IngressClassAnnotation: "nginx"}), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := annotated.Spec.IngressClassName; got != nil {
			t.Errorf("ingressClassName %q, want none: the annotation names the class", *got)
		}
		plain.Spec.IngressClassName = nil
		updated, err := ingresses.Update(ctx, plain, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := updated.Spec.IngressClassName; got != nil {
			t.Errorf("after an update that removed the class: %q, want none (only creates are defaulted)", *got)
		}
		// A second default, created a second later: the newest wins,
		// although a-older comes first by name.
		time.Sleep(time.Until(older.CreationTimestamp.Add(time.Second)))
		if _, err := classes.Create(ctx, defaultClass("b-newer"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		second, err := ingresses.Create(ctx, classless("second", nil), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create with two default classes: %v, want it admitted", err)
		}
		if got := second.Spec.IngressClassName; got == nil || *got != "b-newer" {
			t.Errorf("ingressClassName %v, want the newest default class b-newer", got)
		}
	})
}

func assertInvalidAt(t *testing.T, err error, field string) {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Errorf("got %v, want 422 Invalid at %s", err, field)
		return
	}
	if fields := causeFields(err); len(fields) != 1 || fields[0] != field {
		t.Errorf("causes at %v, want only %s (%v)", fields, field, err)
	}
}
