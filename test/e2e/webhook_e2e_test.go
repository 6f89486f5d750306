package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"minik/internal/hostip"
	"minik/internal/pki"
)

// testWebhookBehindService: a validating webhook named by a Service
// reference. The apiserver resolves the Service to its cluster IP, as
// kube-apiserver does, and reaches it through the proxy's rules on the
// host; the Service's one endpoint is an HTTPS server in this test
// process, on the host's address, with a certificate for
// guard.default.svc that the configuration's caBundle trusts.
func testWebhookBehindService(t *testing.T, e *env) {
	ctx := context.Background()
	dir := t.TempDir()
	ca, err := pki.EnsureNamedCA(dir, "e2e-webhook-ca")
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile, err := ca.EnsureServing(dir, "guard", []string{"guard.default.svc"})
	if err != nil {
		t.Fatal(err)
	}
	hostIP := hostip.PrimaryIPv4()
	ln, err := net.Listen("tcp", net.JoinHostPort(hostIP, "0"))
	if err != nil {
		t.Fatal(err)
	}
	reviews := make(chan string, 16)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
			return
		}
		req := review.Request
		select {
		case reviews <- req.Name:
		default:
		}
		review.Response = &admissionv1.AdmissionResponse{UID: req.UID, Allowed: !strings.HasPrefix(req.Name, "forbidden-")}
		if !review.Response.Allowed {
			review.Response.Result = &metav1.Status{Message: "no forbidden configmaps", Code: http.StatusForbidden}
		}
		review.Request = nil
		_ = json.NewEncoder(w).Encode(&review)
	})}
	go func() { _ = srv.ServeTLS(ln, certFile, keyFile) }()
	t.Cleanup(func() { _ = srv.Close() })
	port := int32(ln.Addr().(*net.TCPAddr).Port)

	// A Service without a selector, and its one endpoint: this process.
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "guard", Namespace: "default"}, Spec: corev1.ServiceSpec{
		Ports: []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromInt32(port)}}}}
	if _, err := e.cs.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "guard-1", Namespace: "default",
		Labels: map[string]string{discoveryv1.LabelServiceName: "guard"}}, AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{hostIP}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:     []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: &port, Protocol: ptr.To(corev1.ProtocolTCP)}}}
	if _, err := e.cs.DiscoveryV1().EndpointSlices("default").Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Only objects labelled for it go to the webhook, so that a Fail
	// policy cannot hold up the rest of the cluster.
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "e2e-guard"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "guard.e2e.minik.dev",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{CABundle: ca.CertPEM(),
				Service: &admissionregistrationv1.ServiceReference{Namespace: "default", Name: "guard", Path: ptr.To("/validate"), Port: ptr.To(int32(443))}},
			Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}},
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"e2e-webhook": "guard"}},
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To(int32(5)),
		}}}
	if _, err := e.cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, vwc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		bg := context.Background()
		_ = e.cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(bg, "e2e-guard", metav1.DeleteOptions{})
		_ = e.cs.DiscoveryV1().EndpointSlices("default").Delete(bg, "guard-1", metav1.DeleteOptions{})
		_ = e.cs.CoreV1().Services("default").Delete(bg, "guard", metav1.DeleteOptions{})
		_ = e.cs.CoreV1().ConfigMaps("default").DeleteCollection(bg, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "e2e-webhook=guard"})
	})

	configMap := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"e2e-webhook": "guard"}}}
	}
	// The proxy programs the new Service within moments; until then the
	// call fails (policy Fail: 500), after it the webhook answers.
	want := `admission webhook "guard.e2e.minik.dev" denied the request: no forbidden configmaps`
	waitFor(t, 30*time.Second, "the webhook behind the Service refuses forbidden-1", func() (bool, string) {
		_, err := e.cs.CoreV1().ConfigMaps("default").Create(ctx, configMap("forbidden-1"), metav1.CreateOptions{})
		return err != nil && err.Error() == want, fmt.Sprint(err)
	})
	if _, err := e.cs.CoreV1().ConfigMaps("default").Create(ctx, configMap("allowed-1"), metav1.CreateOptions{}); err != nil {
		t.Errorf("allowed-1: %v", err)
	}
	// Both went through the webhook; an unlabelled one does not.
	if _, err := e.cs.CoreV1().ConfigMaps("default").Create(ctx,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "forbidden-but-unlabelled", Namespace: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Errorf("an object the selector leaves out went to the webhook: %v", err)
	}
	_ = e.cs.CoreV1().ConfigMaps("default").Delete(ctx, "forbidden-but-unlabelled", metav1.DeleteOptions{})
	seen := map[string]bool{}
	for len(reviews) > 0 {
		seen[<-reviews] = true
	}
	if !seen["forbidden-1"] || !seen["allowed-1"] || seen["forbidden-but-unlabelled"] {
		t.Errorf("reviews for %v, want forbidden-1 and allowed-1 only", seen)
	}
}
