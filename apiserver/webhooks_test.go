package apiserver

import (
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// webhookServer is a real HTTPS admission webhook: each path is one
// behaviour, and every review it receives is kept.
type webhookServer struct {
	*httptest.Server
	mu      sync.Mutex
	reviews map[string][]*admissionv1.AdmissionRequest // by path
}

func startWebhookServer(t *testing.T) *webhookServer {
	ws := &webhookServer{reviews: map[string][]*admissionv1.AdmissionRequest{}}
	ws.Server = httptest.NewTLSServer(http.HandlerFunc(ws.serve))
	t.Cleanup(ws.Close)
	return ws
}

func (ws *webhookServer) serve(w http.ResponseWriter, r *http.Request) {
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, "bad review", http.StatusBadRequest)
		return
	}
	req := review.Request
	ws.mu.Lock()
	ws.reviews[r.URL.Path] = append(ws.reviews[r.URL.Path], req)
	ws.mu.Unlock()
	resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	jsonPatch := func(p string) {
		resp.Patch = []byte(p)
		resp.PatchType = ptr.To(admissionv1.PatchTypeJSONPatch)
	}
	switch r.URL.Path {
	case "/deny":
		resp.Allowed = false
		resp.Result = &metav1.Status{Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden, Message: "configmaps named " + req.Name + " are not allowed"}
	case "/deny-bare":
		resp.Allowed = false
	case "/label":
		jsonPatch(`[{"op":"add","path":"/metadata/labels/mutated","value":"yes"}]`)
	case "/annotate": // records what it saw: the reinvocation test reads it
		var obj metav1.PartialObjectMetadata
		_ = json.Unmarshal(req.Object.Raw, &obj)
		if obj.Annotations == nil {
			jsonPatch(`[{"op":"add","path":"/metadata/annotations","value":{"seen-mutated":"` + obj.Labels["mutated"] + `"}}]`)
		} else {
			jsonPatch(`[{"op":"replace","path":"/metadata/annotations/seen-mutated","value":"` + obj.Labels["mutated"] + `"}]`)
		}
	case "/hpa-behavior": // only autoscaling/v2 has spec.behavior
		jsonPatch(`[{"op":"add","path":"/spec/behavior","value":{"scaleDown":{"stabilizationWindowSeconds":60}}}]`)
	case "/warn":
		resp.Warnings = []string{"configmaps are better with labels"}
	case "/slow":
		time.Sleep(2 * time.Second)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: resp})
}

func (ws *webhookServer) received(path string) []*admissionv1.AdmissionRequest {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return append([]*admissionv1.AdmissionRequest(nil), ws.reviews[path]...)
}

func (ws *webhookServer) caBundle() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ws.Certificate().Raw})
}

// hookOn is a webhook at path of ws on the operations of configmaps
// whose label "hook" is selector.
func (ws *webhookServer) hook(name, path, selector string, ops ...admissionregistrationv1.OperationType) admissionregistrationv1.ValidatingWebhook {
	return admissionregistrationv1.ValidatingWebhook{Name: name,
		ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(ws.URL + path), CABundle: ws.caBundle()},
		Rules: []admissionregistrationv1.RuleWithOperations{{Operations: ops,
			Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}},
		ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"hook": selector}},
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
		AdmissionReviewVersions: []string{"v1"}}
}

func mutatingOf(v admissionregistrationv1.ValidatingWebhook, reinvoke admissionregistrationv1.ReinvocationPolicyType) admissionregistrationv1.MutatingWebhook {
	return admissionregistrationv1.MutatingWebhook{Name: v.Name, ClientConfig: v.ClientConfig, Rules: v.Rules, FailurePolicy: v.FailurePolicy,
		NamespaceSelector: v.NamespaceSelector, ObjectSelector: v.ObjectSelector, SideEffects: v.SideEffects, TimeoutSeconds: v.TimeoutSeconds,
		AdmissionReviewVersions: v.AdmissionReviewVersions, ReinvocationPolicy: &reinvoke}
}

// waitForHooks waits until the server's view holds n webhooks of a kind.
func waitForHooks(t *testing.T, configs *webhookConfigs, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		set := configs.current()
		if set != nil && len(set.Hooks) == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the webhook view never held %d webhooks", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func configMap(name, hook string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"hook": hook}}}
}

// TestAdmissionWebhooks runs real HTTPS webhooks (caBundle from the test
// server's certificate) against the apiserver through client-go.
func TestAdmissionWebhooks(t *testing.T) {
	ts := startTestServer(t)
	ctx := t.Context()
	ws := startWebhookServer(t)
	var warnings warningRecorder
	cfg := ts.restConfig(t)
	cfg.WarningHandler = &warnings
	cs := kubernetes.NewForConfigOrDie(cfg)
	vwcs := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	mwcs := cs.AdmissionregistrationV1().MutatingWebhookConfigurations()
	cms := cs.CoreV1().ConfigMaps("default")
	create := admissionregistrationv1.Create

	failSlow := ws.hook("slow-fail.example.com", "/slow", "slow-fail", create)
	failSlow.TimeoutSeconds = ptr.To[int32](1)
	ignoreSlow := ws.hook("slow-ignore.example.com", "/slow", "slow-ignore", create)
	ignoreSlow.TimeoutSeconds = ptr.To[int32](1)
	ignoreSlow.FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
	prodOnly := ws.hook("prod.example.com", "/deny", "prod", create)
	prodOnly.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
	deleteHook := ws.hook("delete.example.com", "/deny", "keep", admissionregistrationv1.Delete)
	vwc, err := vwcs.Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "policy"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{ws.hook("deny.example.com", "/deny", "deny", create),
			ws.hook("bare.example.com", "/deny-bare", "bare", create), ws.hook("warn.example.com", "/warn", "warn", create),
			failSlow, ignoreSlow, prodOnly, deleteHook}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if w := vwc.Webhooks[0]; *w.FailurePolicy != admissionregistrationv1.Fail || *w.TimeoutSeconds != 10 || *w.MatchPolicy != admissionregistrationv1.Equivalent {
		t.Errorf("stored webhook %+v, want upstream's defaults", w)
	}
	waitForHooks(t, ts.srv.validatingHooks, 7)

	t.Run("a denial is refused in upstream's words with the webhook's status code", func(t *testing.T) {
		_, err := cms.Create(ctx, configMap("denied", "deny"), metav1.CreateOptions{})
		want := `admission webhook "deny.example.com" denied the request: configmaps named denied are not allowed`
		if !apierrors.IsForbidden(err) || err.Error() != want {
			t.Fatalf("create: %v, want 403 %q", err, want)
		}
		reviews := ws.received("/deny")
		if len(reviews) != 1 {
			t.Fatalf("%d reviews, want 1", len(reviews))
		}
		r := reviews[0]
		if r.UID == "" || r.Operation != admissionv1.Create || r.Name != "denied" || r.Namespace != "default" ||
			r.Kind != (metav1.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}) || r.Resource.Resource != "configmaps" ||
			r.RequestKind == nil || r.RequestKind.Kind != "ConfigMap" || r.RequestResource == nil || r.UserInfo.Username == "" ||
			r.DryRun == nil || *r.DryRun || len(r.Object.Raw) == 0 || len(r.OldObject.Raw) != 0 || !strings.Contains(string(r.Options.Raw), `"kind":"CreateOptions"`) {
			t.Errorf("review request %+v", r)
		}
		if !strings.Contains(string(r.Object.Raw), `"kind":"ConfigMap"`) || !strings.Contains(string(r.Object.Raw), `"apiVersion":"v1"`) {
			t.Errorf("object %s, want its apiVersion and kind", r.Object.Raw)
		}
	})

	t.Run("a denial without a message or code is a 400 without explanation", func(t *testing.T) {
		_, err := cms.Create(ctx, configMap("bare", "bare"), metav1.CreateOptions{})
		if !apierrors.IsBadRequest(err) || err.Error() != `admission webhook "bare.example.com" denied the request without explanation` {
			t.Fatalf("create: %v", err)
		}
	})

	t.Run("an object the selectors do not select is not sent", func(t *testing.T) {
		before := len(ws.received("/deny"))
		if _, err := cms.Create(ctx, configMap("free", "none"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if n := len(ws.received("/deny")); n != before {
			t.Errorf("the deny webhook got %d more reviews, want none", n-before)
		}
	})

	t.Run("the namespace selector reads the namespace's labels", func(t *testing.T) {
		for _, ns := range []*corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: "prod", Labels: map[string]string{"env": "prod"}}},
			{ObjectMeta: metav1.ObjectMeta{Name: "dev", Labels: map[string]string{"env": "dev"}}}} {
			if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := cs.CoreV1().ConfigMaps("prod").Create(ctx, configMap("x", "prod"), metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("create in prod: %v, want the webhook's 403", err)
		}
		if _, err := cs.CoreV1().ConfigMaps("dev").Create(ctx, configMap("x", "prod"), metav1.CreateOptions{}); err != nil {
			t.Errorf("create in dev: %v, want it admitted (the webhook does not select dev)", err)
		}
	})

	t.Run("warnings become Warning headers", func(t *testing.T) {
		if _, err := cms.Create(ctx, configMap("warned", "warn"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if !warnings.has("configmaps are better with labels") {
			t.Errorf("warnings %v, want the webhook's", warnings.all())
		}
	})

	t.Run("a timeout refuses under failurePolicy Fail and admits under Ignore", func(t *testing.T) {
		start := time.Now()
		_, err := cms.Create(ctx, configMap("slow-fail", "slow-fail"), metav1.CreateOptions{})
		if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), `failed calling webhook "slow-fail.example.com"`) {
			t.Errorf("create: %v, want 500 failed calling webhook", err)
		}
		if d := time.Since(start); d > 1900*time.Millisecond {
			t.Errorf("the create took %v: the 1s timeout was not kept", d)
		}
		if _, err := cms.Create(ctx, configMap("slow-ignore", "slow-ignore"), metav1.CreateOptions{}); err != nil {
			t.Errorf("create: %v, want it admitted (failurePolicy Ignore)", err)
		}
	})

	t.Run("a delete is sent with the old object and its options", func(t *testing.T) {
		if _, err := cms.Create(ctx, configMap("keep", "keep"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		err := cms.Delete(ctx, "keep", metav1.DeleteOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `admission webhook "delete.example.com" denied the request`) {
			t.Fatalf("delete: %v, want the webhook's 403", err)
		}
		var r *admissionv1.AdmissionRequest
		for _, rv := range ws.received("/deny") {
			if rv.Operation == admissionv1.Delete {
				r = rv
			}
		}
		if r == nil || len(r.Object.Raw) != 0 || !strings.Contains(string(r.OldObject.Raw), `"name":"keep"`) ||
			!strings.Contains(string(r.Options.Raw), `"kind":"DeleteOptions"`) {
			t.Errorf("delete review %+v", r)
		}
		if _, err := cms.Get(ctx, "keep", metav1.GetOptions{}); err != nil {
			t.Errorf("the refused delete removed the object: %v", err)
		}
	})

	t.Run("mutating webhooks patch the object, and an IfNeeded one sees a later change", func(t *testing.T) {
		label := mutatingOf(ws.hook("label.example.com", "/label", "mutate", create), admissionregistrationv1.NeverReinvocationPolicy)
		annotate := mutatingOf(ws.hook("annotate.example.com", "/annotate", "mutate", create), admissionregistrationv1.IfNeededReinvocationPolicy)
		// Configurations run by name: "a-annotate" before "b-label".
		for name, hook := range map[string]admissionregistrationv1.MutatingWebhook{"a-annotate": annotate, "b-label": label} {
			if _, err := mwcs.Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name},
				Webhooks: []admissionregistrationv1.MutatingWebhook{hook}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		waitForHooks(t, ts.srv.mutatingHooks, 2)
		cm, err := cms.Create(ctx, configMap("mutated", "mutate"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if cm.Labels["mutated"] != "yes" {
			t.Errorf("labels %v, want the webhook's mutated=yes", cm.Labels)
		}
		// annotate ran first (no label yet), was called again after label
		// changed the object, and then saw it.
		if got := ws.received("/annotate"); len(got) != 2 || cm.Annotations["seen-mutated"] != "yes" {
			t.Errorf("annotate called %d times, annotations %v; want 2 calls and seen-mutated=yes", len(got), cm.Annotations)
		}
		if got := ws.received("/label"); len(got) != 1 {
			t.Errorf("label called %d times, want once (reinvocationPolicy Never)", len(got))
		}
		stored, err := cms.Get(ctx, "mutated", metav1.GetOptions{})
		if err != nil || stored.Labels["mutated"] != "yes" {
			t.Errorf("stored %v, %v: the patch was not stored", stored.Labels, err)
		}
	})

	t.Run("webhook configurations themselves are never sent to webhooks", func(t *testing.T) {
		all := ws.hook("everything.example.com", "/deny", "x", admissionregistrationv1.OperationAll)
		all.ObjectSelector = nil
		all.Rules[0].APIGroups, all.Rules[0].Resources = []string{"*"}, []string{"*"}
		c := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "z-everything"},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{all}}
		if _, err := vwcs.Create(ctx, c, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitForHooks(t, ts.srv.validatingHooks, 8)
		if _, err := cms.Create(ctx, configMap("blocked", "none"), metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("create: %v, want the catch-all webhook's 403", err)
		}
		if err := vwcs.Delete(ctx, "z-everything", metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting the configuration: %v, want it exempt from webhooks", err)
		}
	})

	t.Run("a table lists the configurations with their webhook counts", func(t *testing.T) {
		resp, body := ts.response(t, http.MethodGet, "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/policy", "",
			"Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"cells":["policy",7,`) {
			t.Errorf("table: %d %s", resp.StatusCode, body)
		}
	})
}

// warningRecorder is a client-go WarningHandler that keeps the warnings.
type warningRecorder struct {
	mu   sync.Mutex
	msgs []string
}

var _ rest.WarningHandler = &warningRecorder{}

func (w *warningRecorder) HandleWarningHeader(code int, agent, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, text)
}

func (w *warningRecorder) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.msgs...)
}

func (w *warningRecorder) has(s string) bool {
	for _, m := range w.all() {
		if m == s {
			return true
		}
	}
	return false
}

// ruleHook is a webhook at path of ws on ops of the resources named (no
// selectors).
func (ws *webhookServer) ruleHook(name, path string, resources []string, ops ...admissionregistrationv1.OperationType) admissionregistrationv1.ValidatingWebhook {
	return admissionregistrationv1.ValidatingWebhook{Name: name,
		ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(ws.URL + path), CABundle: ws.caBundle()},
		Rules: []admissionregistrationv1.RuleWithOperations{{Operations: ops,
			Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: resources}}},
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
		AdmissionReviewVersions: []string{"v1"}}
}

// lastReview is the last review path got for sub, nil without one.
func (ws *webhookServer) lastReview(path, sub string) *admissionv1.AdmissionRequest {
	var last *admissionv1.AdmissionRequest
	for _, r := range ws.received(path) {
		if r.SubResource == sub {
			last = r
		}
	}
	return last
}

// TestAdmissionWebhooksSubresources: connections (CONNECT) and the
// pods/binding and pods/eviction creates reach the webhooks with
// upstream's objects, and a refusal stops them before the kubelet (the
// test server has none) or the store.
func TestAdmissionWebhooksSubresources(t *testing.T) {
	ts := startTestServer(t)
	ctx := t.Context()
	ws := startWebhookServer(t)
	cs := kubernetes.NewForConfigOrDie(ts.restConfig(t))
	connect, create := admissionregistrationv1.Connect, admissionregistrationv1.Create
	_, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "subresources"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{
			ws.ruleHook("connect.example.com", "/deny", []string{"pods/exec", "pods/portforward", "pods/proxy", "services/proxy"}, connect),
			ws.ruleHook("create.example.com", "/deny", []string{"pods/binding", "pods/eviction"}, create)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitForHooks(t, ts.srv.validatingHooks, 2)
	pods := cs.CoreV1().Pods("default")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	denied := func(t *testing.T, err error) {
		t.Helper()
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "denied the request") {
			t.Fatalf("got %v, want the webhook's 403", err)
		}
	}
	restClient := cs.CoreV1().RESTClient()

	t.Run("an exec refused on CONNECT never reaches the kubelet", func(t *testing.T) {
		err := restClient.Post().Namespace("default").Resource("pods").Name("web").SubResource("exec").
			Param("command", "ls").Param("command", "-l").Param("stdout", "true").Param("container", "c").Do(ctx).Error()
		denied(t, err)
		r := ws.lastReview("/deny", "exec")
		if r == nil || r.Operation != admissionv1.Connect || r.Kind != (metav1.GroupVersionKind{Version: "v1", Kind: "PodExecOptions"}) ||
			r.Resource != (metav1.GroupVersionResource{Version: "v1", Resource: "pods"}) || r.Name != "web" || r.Namespace != "default" ||
			len(r.OldObject.Raw) != 0 || len(r.Options.Raw) != 0 {
			t.Fatalf("review %+v", r)
		}
		var opts corev1.PodExecOptions
		if err := json.Unmarshal(r.Object.Raw, &opts); err != nil || opts.Kind != "PodExecOptions" || !opts.Stdout || opts.Stdin ||
			opts.Container != "c" || strings.Join(opts.Command, " ") != "ls -l" {
			t.Errorf("object %s (%v), want the exec's options", r.Object.Raw, err)
		}
	})

	t.Run("a connection no rule names goes on to the kubelet", func(t *testing.T) {
		before := len(ws.received("/deny"))
		err := restClient.Post().Namespace("default").Resource("pods").Name("web").SubResource("attach").Param("stdout", "true").Do(ctx).Error()
		if err == nil || apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "upgrade") {
			t.Errorf("attach: %v, want the refusal of a request without an upgrade", err)
		}
		if n := len(ws.received("/deny")); n != before {
			t.Errorf("%d reviews for an attach no rule names", n-before)
		}
	})

	t.Run("a port-forward refused on CONNECT carries its ports", func(t *testing.T) {
		err := restClient.Post().Namespace("default").Resource("pods").Name("web").SubResource("portforward").Param("ports", "8080,9090").Do(ctx).Error()
		denied(t, err)
		var opts corev1.PodPortForwardOptions
		r := ws.lastReview("/deny", "portforward")
		if r == nil || json.Unmarshal(r.Object.Raw, &opts) != nil || len(opts.Ports) != 2 || opts.Ports[1] != 9090 {
			t.Errorf("review %+v, want the ports", r)
		}
		if err := restClient.Post().Namespace("default").Resource("pods").Name("web").SubResource("portforward").Param("ports", "http").Do(ctx).Error(); !apierrors.IsBadRequest(err) {
			t.Errorf("a port that is no number: %v, want 400", err)
		}
	})

	t.Run("a proxy request is a CONNECT with the proxied path", func(t *testing.T) {
		resp, body := ts.response(t, http.MethodGet, "/api/v1/namespaces/default/pods/web/proxy/healthz/ready", "")
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), `admission webhook \"connect.example.com\" denied`) {
			t.Fatalf("proxy: %d %s", resp.StatusCode, body)
		}
		r := ws.lastReview("/deny", "proxy")
		var opts corev1.PodProxyOptions
		if r == nil || r.Operation != admissionv1.Connect || r.Kind.Kind != "PodProxyOptions" || json.Unmarshal(r.Object.Raw, &opts) != nil ||
			opts.Path != "/healthz/ready" {
			t.Errorf("review %+v, want PodProxyOptions with the path", r)
		}
		resp, _ = ts.response(t, http.MethodDelete, "/api/v1/namespaces/default/services/web/proxy/x", "")
		if resp.StatusCode != http.StatusForbidden || ws.lastReview("/deny", "proxy").Kind.Kind != "ServiceProxyOptions" {
			t.Errorf("service proxy: %d, want the webhook's 403 on ServiceProxyOptions", resp.StatusCode)
		}
	})

	t.Run("a dry-run connection is refused", func(t *testing.T) {
		err := restClient.Post().Namespace("default").Resource("pods").Name("web").SubResource("exec").Param("command", "ls").Param("dryRun", "All").Do(ctx).Error()
		if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "dryRun is not supported") {
			t.Errorf("exec with dryRun: %v", err)
		}
	})

	t.Run("a binding refused by a webhook leaves the pod unbound", func(t *testing.T) {
		err := pods.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Target: corev1.ObjectReference{Kind: "Node", Name: "node-a"}}, metav1.CreateOptions{})
		denied(t, err)
		r := ws.lastReview("/deny", "binding")
		var b corev1.Binding
		if r == nil || r.Operation != admissionv1.Create || r.Kind != (metav1.GroupVersionKind{Version: "v1", Kind: "Binding"}) || r.Name != "web" ||
			json.Unmarshal(r.Object.Raw, &b) != nil || b.Target.Name != "node-a" || !strings.Contains(string(r.Options.Raw), `"kind":"CreateOptions"`) {
			t.Errorf("review %+v", r)
		}
		if got, _ := pods.Get(ctx, "web", metav1.GetOptions{}); got.Spec.NodeName != "" {
			t.Errorf("the refused binding bound the pod to %q", got.Spec.NodeName)
		}
	})

	t.Run("an eviction refused by a webhook keeps the pod", func(t *testing.T) {
		err := pods.EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}})
		denied(t, err)
		r := ws.lastReview("/deny", "eviction")
		if r == nil || r.Operation != admissionv1.Create || r.Kind != (metav1.GroupVersionKind{Group: "policy", Version: "v1", Kind: "Eviction"}) ||
			r.Resource.Resource != "pods" || r.Name != "web" || !strings.Contains(string(r.Object.Raw), `"kind":"Eviction"`) {
			t.Errorf("review %+v", r)
		}
		if _, err := pods.Get(ctx, "web", metav1.GetOptions{}); err != nil {
			t.Errorf("the refused eviction removed the pod: %v", err)
		}
	})
}

// TestAdmissionWebhooksEquivalent: a matchPolicy Equivalent webhook whose
// rule names autoscaling/v2 sees a create made through autoscaling/v1 in
// v2, is told the request's version, and patches it in v2; an Exact one
// is not called.
func TestAdmissionWebhooksEquivalent(t *testing.T) {
	ts := startTestServer(t)
	ctx := t.Context()
	ws := startWebhookServer(t)
	cs := kubernetes.NewForConfigOrDie(ts.restConfig(t))
	v2Rule := func(h admissionregistrationv1.ValidatingWebhook, policy admissionregistrationv1.MatchPolicyType) admissionregistrationv1.ValidatingWebhook {
		h.Rules[0].APIGroups, h.Rules[0].APIVersions = []string{"autoscaling"}, []string{"v2"}
		h.MatchPolicy = &policy
		return h
	}
	hpas := []string{"horizontalpodautoscalers"}
	create := admissionregistrationv1.Create
	if _, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "hpa"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{
			v2Rule(ws.ruleHook("equivalent.example.com", "/seen", hpas, create), admissionregistrationv1.Equivalent),
			v2Rule(ws.ruleHook("exact.example.com", "/exact", hpas, create), admissionregistrationv1.Exact)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mutate := mutatingOf(v2Rule(ws.ruleHook("behavior.example.com", "/hpa-behavior", hpas, create), admissionregistrationv1.Equivalent),
		admissionregistrationv1.NeverReinvocationPolicy)
	mutate.MatchPolicy = ptr.To(admissionregistrationv1.Equivalent)
	if _, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "hpa"}, Webhooks: []admissionregistrationv1.MutatingWebhook{mutate}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForHooks(t, ts.srv.validatingHooks, 2)
	waitForHooks(t, ts.srv.mutatingHooks, 1)

	hpa := &autoscalingv1.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: autoscalingv1.HorizontalPodAutoscalerSpec{MaxReplicas: 3, TargetCPUUtilizationPercentage: ptr.To[int32](50),
			ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}}}
	if _, err := cs.AutoscalingV1().HorizontalPodAutoscalers("default").Create(ctx, hpa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	v2 := metav1.GroupVersionResource{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"}
	v1 := metav1.GroupVersionResource{Group: "autoscaling", Version: "v1", Resource: "horizontalpodautoscalers"}
	for _, path := range []string{"/seen", "/hpa-behavior"} {
		got := ws.received(path)
		if len(got) != 1 {
			t.Fatalf("%s got %d reviews, want 1", path, len(got))
		}
		r := got[0]
		if r.Resource != v2 || r.Kind != (metav1.GroupVersionKind{Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler"}) ||
			r.RequestResource == nil || *r.RequestResource != v1 || r.RequestKind == nil || r.RequestKind.Version != "v1" {
			t.Errorf("%s review: resource %v kind %v requestResource %v requestKind %v", path, r.Resource, r.Kind, r.RequestResource, r.RequestKind)
		}
		var obj autoscalingv2.HorizontalPodAutoscaler
		if err := json.Unmarshal(r.Object.Raw, &obj); err != nil || obj.APIVersion != "autoscaling/v2" || len(obj.Spec.Metrics) != 1 ||
			obj.Spec.Metrics[0].Resource == nil || *obj.Spec.Metrics[0].Resource.Target.AverageUtilization != 50 {
			t.Errorf("%s object %s, want the v2 form of the v1 request", path, r.Object.Raw)
		}
	}
	// The validating webhook runs after the mutating one: it saw the patch.
	if r := ws.received("/seen"); len(r) == 1 && !strings.Contains(string(r[0].Object.Raw), `"stabilizationWindowSeconds":60`) {
		t.Errorf("the validating webhook saw %s, without the mutating webhook's behavior", r[0].Object.Raw)
	}
	if n := len(ws.received("/exact")); n != 0 {
		t.Errorf("an Exact webhook naming v2 got %d reviews of a v1 request", n)
	}
	stored, err := cs.AutoscalingV2().HorizontalPodAutoscalers("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil || stored.Spec.Behavior == nil || stored.Spec.Behavior.ScaleDown == nil ||
		ptr.Deref(stored.Spec.Behavior.ScaleDown.StabilizationWindowSeconds, 0) != 60 {
		t.Errorf("stored %+v, %v: want the v2 patch's behavior", stored.Spec.Behavior, err)
	}
}
