package validation

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// validatingConfig is a defaulted configuration with one webhook that
// checks pod creates at a service.
func validatingConfig(edits ...func(*admissionregistrationv1.ValidatingWebhookConfiguration)) *admissionregistrationv1.ValidatingWebhookConfiguration {
	c := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "policy", ResourceVersion: "1"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "pods.policy.example.com",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
				Namespace: "policy", Name: "webhook", Path: ptr.To("/validate")}},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods", "pods/status"}}}},
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
		}}}
	return defaulted(c, edits)
}

func mutatingConfig(edits ...func(*admissionregistrationv1.MutatingWebhookConfiguration)) *admissionregistrationv1.MutatingWebhookConfiguration {
	v := validatingConfig().Webhooks[0]
	c := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "inject", ResourceVersion: "1"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "inject.example.com", ClientConfig: v.ClientConfig, Rules: v.Rules,
			SideEffects: v.SideEffects, AdmissionReviewVersions: v.AdmissionReviewVersions}}}
	return defaulted(c, edits)
}

type vwc = admissionregistrationv1.ValidatingWebhookConfiguration

func hook0(edit func(*admissionregistrationv1.ValidatingWebhook)) *vwc {
	return validatingConfig(func(c *vwc) { edit(&c.Webhooks[0]) })
}

func rule0(edit func(*admissionregistrationv1.RuleWithOperations)) *vwc {
	return hook0(func(w *admissionregistrationv1.ValidatingWebhook) { edit(&w.Rules[0]) })
}

func TestWebhookConfigurationCreate(t *testing.T) {
	w0 := "webhooks[0]"
	tests := []struct {
		name string
		obj  runtime.Object
		want []want
	}{
		{name: "a service webhook on pods and their status is valid", obj: validatingConfig()},
		{name: "a mutating webhook is valid", obj: mutatingConfig()},
		{name: "a configuration without webhooks is valid", obj: validatingConfig(func(c *vwc) { c.Webhooks = nil })},
		{name: "a URL webhook is valid",
			obj: hook0(func(w *admissionregistrationv1.ValidatingWebhook) {
				w.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://hooks.example.com:8443/validate")}
			})},
		{name: "a configuration is cluster-scoped",
			obj:  validatingConfig(func(c *vwc) { c.Namespace = "default" }),
			want: []want{{field.ErrorTypeForbidden, "metadata.namespace", "not allowed on this type"}}},
		{name: "a webhook name is a fully qualified domain name",
			obj:  hook0(func(w *admissionregistrationv1.ValidatingWebhook) { w.Name = "policy.local" }),
			want: []want{{field.ErrorTypeInvalid, w0 + ".name", "should be a domain with at least three segments separated by dots"}}},
		{name: "a webhook has a name",
			obj:  hook0(func(w *admissionregistrationv1.ValidatingWebhook) { w.Name = "" }),
			want: []want{{field.ErrorTypeRequired, w0 + ".name", ""}}},
		{name: "webhook names are unique within a configuration",
			obj:  validatingConfig(func(c *vwc) { c.Webhooks = append(c.Webhooks, c.Webhooks[0]) }),
			want: []want{{field.ErrorTypeDuplicate, "webhooks[1].name", ""}}},
		{name: "admissionReviewVersions are required",
			obj:  hook0(func(w *admissionregistrationv1.ValidatingWebhook) { w.AdmissionReviewVersions = nil }),
			want: []want{{field.ErrorTypeRequired, w0 + ".admissionReviewVersions", "must specify one of v1, v1beta1"}}},
		{name: "admissionReviewVersions include v1 or v1beta1",
			obj: hook0(func(w *admissionregistrationv1.ValidatingWebhook) { w.AdmissionReviewVersions = []string{"v2", "v2"} }),
			want: []want{{field.ErrorTypeInvalid, w0 + ".admissionReviewVersions[1]", "duplicate version"},
				{field.ErrorTypeInvalid, w0 + ".admissionReviewVersions", "must include at least one of v1, v1beta1"}}},
		{name: "v1beta1 alone is accepted",
			obj: hook0(func(w *admissionregistrationv1.ValidatingWebhook) { w.AdmissionReviewVersions = []string{"v1beta1"} })},
		{name: "a review version is a DNS label",
			obj:  hook0(func(w *admissionregistrationv1.ValidatingWebhook) { w.AdmissionReviewVersions = []string{"v1", "V1_x"} }),
			want: []want{{field.ErrorTypeInvalid, w0 + ".admissionReviewVersions[1]", "a DNS-1035 label must consist of"}}},
		{name: "sideEffects are required in v1",
			obj:  hook0(func(w *admissionregistrationv1.ValidatingWebhook) { w.SideEffects = nil }),
			want: []want{{field.ErrorTypeRequired, w0 + ".sideEffects", "must specify one of None, NoneOnDryRun"}}},
		{name: "sideEffects Some and Unknown are refused in v1",
			obj: hook0(func(w *admissionregistrationv1.ValidatingWebhook) {
				w.SideEffects = ptr.To(admissionregistrationv1.SideEffectClassSome)
			}),
			want: []want{{field.ErrorTypeNotSupported, w0 + ".sideEffects", `"None", "NoneOnDryRun"`}}},
		{name: "timeoutSeconds is between 1 and 30",
			obj:  hook0(func(w *admissionregistrationv1.ValidatingWebhook) { w.TimeoutSeconds = ptr.To[int32](31) }),
			want: []want{{field.ErrorTypeInvalid, w0 + ".timeoutSeconds", "the timeout value must be between 1 and 30 seconds"}}},
		{name: "failurePolicy and matchPolicy are known values",
			obj: hook0(func(w *admissionregistrationv1.ValidatingWebhook) {
				w.FailurePolicy = ptr.To[admissionregistrationv1.FailurePolicyType]("Retry")
				w.MatchPolicy = ptr.To[admissionregistrationv1.MatchPolicyType]("Loose")
			}),
			want: []want{{field.ErrorTypeNotSupported, w0 + ".failurePolicy", `"Fail", "Ignore"`},
				{field.ErrorTypeNotSupported, w0 + ".matchPolicy", `"Equivalent", "Exact"`}}},
		{name: "selectors are valid label selectors",
			obj: hook0(func(w *admissionregistrationv1.ValidatingWebhook) {
				w.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: "Near"}}}
				w.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a b"}}
			}),
			want: []want{{field.ErrorTypeInvalid, w0 + ".namespaceSelector.matchExpressions[0].operator", "not a valid selector operator"},
				{field.ErrorTypeInvalid, w0 + ".objectSelector.matchLabels", "a valid label must be"}}},
		{name: "clientConfig has a url or a service",
			obj:  hook0(func(w *admissionregistrationv1.ValidatingWebhook) { w.ClientConfig.Service = nil }),
			want: []want{{field.ErrorTypeRequired, w0 + ".clientConfig", "exactly one of url or service is required"}}},
		{name: "clientConfig has not both a url and a service",
			obj: hook0(func(w *admissionregistrationv1.ValidatingWebhook) {
				w.ClientConfig.URL = ptr.To("https://h.example.com")
			}),
			want: []want{{field.ErrorTypeRequired, w0 + ".clientConfig", "exactly one of url or service is required"}}},
		{name: "a url is https, without user, query or fragment",
			obj: hook0(func(w *admissionregistrationv1.ValidatingWebhook) {
				w.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: ptr.To("http://me@h.example.com/v?x=1#top")}
			}),
			want: []want{{field.ErrorTypeInvalid, w0 + ".clientConfig.url", "'https' is the only allowed URL scheme; desired format: https://host[/path]"},
				{field.ErrorTypeInvalid, w0 + ".clientConfig.url", "user information is not permitted in the URL"},
				{field.ErrorTypeInvalid, w0 + ".clientConfig.url", "fragments are not permitted in the URL"},
				{field.ErrorTypeInvalid, w0 + ".clientConfig.url", "query parameters are not permitted in the URL"}}},
		{name: "a url has a host",
			obj: hook0(func(w *admissionregistrationv1.ValidatingWebhook) {
				w.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https:///validate")}
			}),
			want: []want{{field.ErrorTypeInvalid, w0 + ".clientConfig.url", "host must be specified"}}},
		{name: "a service has a name, a namespace and a valid port",
			obj: hook0(func(w *admissionregistrationv1.ValidatingWebhook) {
				w.ClientConfig.Service = &admissionregistrationv1.ServiceReference{Port: ptr.To[int32](70000)}
			}),
			want: []want{{field.ErrorTypeRequired, w0 + ".clientConfig.service.name", ""},
				{field.ErrorTypeRequired, w0 + ".clientConfig.service.namespace", ""},
				{field.ErrorTypeInvalid, w0 + ".clientConfig.service.port", "port is not valid: must be between 1 and 65535, inclusive"}}},
		{name: "a service path starts with a slash and has DNS subdomain segments",
			obj: hook0(func(w *admissionregistrationv1.ValidatingWebhook) {
				w.ClientConfig.Service.Path = ptr.To("validate//Pods_")
			}),
			want: []want{{field.ErrorTypeInvalid, w0 + ".clientConfig.service.path", "must start with a '/'"},
				{field.ErrorTypeInvalid, w0 + ".clientConfig.service.path", "segment[1] may not be empty"},
				{field.ErrorTypeInvalid, w0 + ".clientConfig.service.path", "segment[2]: a lowercase RFC 1123 subdomain"}}},
		{name: "a service path may end with a slash",
			obj: hook0(func(w *admissionregistrationv1.ValidatingWebhook) {
				w.ClientConfig.Service.Path = ptr.To("/v1/validate/")
			})},
		{name: "rules name operations, groups, versions and resources",
			obj: rule0(func(r *admissionregistrationv1.RuleWithOperations) {
				*r = admissionregistrationv1.RuleWithOperations{Rule: admissionregistrationv1.Rule{Scope: ptr.To[admissionregistrationv1.ScopeType]("Node")}}
			}),
			want: []want{{field.ErrorTypeRequired, w0 + ".rules[0].operations", ""},
				{field.ErrorTypeRequired, w0 + ".rules[0].apiGroups", ""},
				{field.ErrorTypeRequired, w0 + ".rules[0].apiVersions", ""},
				{field.ErrorTypeRequired, w0 + ".rules[0].resources", ""},
				{field.ErrorTypeNotSupported, w0 + ".rules[0].scope", `"*", "Cluster", "Namespaced"`}}},
		{name: "an operation is CREATE, UPDATE, DELETE, CONNECT or * alone",
			obj: rule0(func(r *admissionregistrationv1.RuleWithOperations) {
				r.Operations = []admissionregistrationv1.OperationType{"*", "PATCH"}
			}),
			want: []want{{field.ErrorTypeInvalid, w0 + ".rules[0].operations", "if '*' is present, must not specify other operations"},
				{field.ErrorTypeNotSupported, w0 + ".rules[0].operations[1]", `"*", "CONNECT", "CREATE", "DELETE", "UPDATE"`}}},
		{name: "a wildcard group or version stands alone, and a version is not empty",
			obj: rule0(func(r *admissionregistrationv1.RuleWithOperations) {
				r.APIGroups = []string{"*", "apps"}
				r.APIVersions = []string{"*", ""}
			}),
			want: []want{{field.ErrorTypeInvalid, w0 + ".rules[0].apiGroups", "if '*' is present, must not specify other API groups"},
				{field.ErrorTypeInvalid, w0 + ".rules[0].apiVersions", "if '*' is present, must not specify other API versions"},
				{field.ErrorTypeRequired, w0 + ".rules[0].apiVersions[1]", ""}}},
		{name: "'*' with a resource without subresources is refused",
			obj:  rule0(func(r *admissionregistrationv1.RuleWithOperations) { r.Resources = []string{"*", "pods"} }),
			want: []want{{field.ErrorTypeInvalid, w0 + ".rules[0].resources", "if '*' is present, must not specify other resources without subresources"}}},
		{name: "'*' with '*/status' and 'pods/*' is valid",
			obj: rule0(func(r *admissionregistrationv1.RuleWithOperations) { r.Resources = []string{"*", "*/status", "pods/*"} })},
		{name: "'*/*' stands alone",
			obj:  rule0(func(r *admissionregistrationv1.RuleWithOperations) { r.Resources = []string{"*/*", "pods/log"} }),
			want: []want{{field.ErrorTypeInvalid, w0 + ".rules[0].resources", "if '*/*' is present, must not specify other resources"}}},
		{name: "'pods/*' covers 'pods/status', '*/status' covers 'deployments/status'",
			obj: rule0(func(r *admissionregistrationv1.RuleWithOperations) {
				r.Resources = []string{"pods/*", "pods/status", "*/scale", "deployments/scale", ""}
			}),
			want: []want{{field.ErrorTypeInvalid, w0 + ".rules[0].resources[1]", "if 'pods/*' is present, must not specify pods/status"},
				{field.ErrorTypeInvalid, w0 + ".rules[0].resources[3]", "if '*/scale' is present, must not specify deployments/scale"},
				{field.ErrorTypeRequired, w0 + ".rules[0].resources[4]", ""}}},
		{name: "matchConditions are refused: minik does not evaluate CEL",
			obj: hook0(func(w *admissionregistrationv1.ValidatingWebhook) {
				w.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "not-leases", Expression: "true"}}
			}),
			want: []want{{field.ErrorTypeForbidden, w0 + ".matchConditions", "minik does not evaluate matchConditions"}}},
		{name: "a mutating webhook's reinvocationPolicy is Never or IfNeeded",
			obj: mutatingConfig(func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
				c.Webhooks[0].ReinvocationPolicy = ptr.To[admissionregistrationv1.ReinvocationPolicyType]("Always")
			}),
			want: []want{{field.ErrorTypeNotSupported, w0 + ".reinvocationPolicy", `"IfNeeded", "Never"`}}},
		{name: "a mutating webhook is checked as a validating one",
			obj: mutatingConfig(func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
				c.Webhooks[0].TimeoutSeconds = ptr.To[int32](0)
				c.Webhooks = append(c.Webhooks, c.Webhooks[0])
			}),
			want: []want{{field.ErrorTypeInvalid, w0 + ".timeoutSeconds", "between 1 and 30"},
				{field.ErrorTypeInvalid, "webhooks[1].timeoutSeconds", "between 1 and 30"},
				{field.ErrorTypeDuplicate, "webhooks[1].name", ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertErrors(t, Create(tt.obj, false), tt.want)
		})
	}
}

func TestWebhookConfigurationUpdate(t *testing.T) {
	tests := []struct {
		name     string
		obj, old runtime.Object
		want     []want
	}{
		{name: "rules may change", old: validatingConfig(),
			obj: rule0(func(r *admissionregistrationv1.RuleWithOperations) { r.Resources = []string{"*"} })},
		{name: "a changed configuration is checked as a new one", old: validatingConfig(),
			obj: hook0(func(w *admissionregistrationv1.ValidatingWebhook) {
				w.SideEffects = ptr.To(admissionregistrationv1.SideEffectClassUnknown)
			}),
			want: []want{{field.ErrorTypeNotSupported, "webhooks[0].sideEffects", `"None", "NoneOnDryRun"`}}},
		{name: "a stored webhook with side effects may keep them (upstream's ratchet)",
			old: hook0(func(w *admissionregistrationv1.ValidatingWebhook) {
				w.SideEffects = ptr.To(admissionregistrationv1.SideEffectClassSome)
			}),
			obj: hook0(func(w *admissionregistrationv1.ValidatingWebhook) {
				w.SideEffects = ptr.To(admissionregistrationv1.SideEffectClassSome)
				w.TimeoutSeconds = ptr.To[int32](5)
			})},
		{name: "matchConditions are refused on update too", old: mutatingConfig(),
			obj: mutatingConfig(func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
				c.Webhooks[0].MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "a", Expression: "true"}}
			}),
			want: []want{{field.ErrorTypeForbidden, "webhooks[0].matchConditions", "minik does not evaluate matchConditions"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertErrors(t, Update(tt.obj, tt.old, false), tt.want)
		})
	}
}
