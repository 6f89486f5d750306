package defaults

import (
	"reflect"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestWebhookConfigurationDefaults(t *testing.T) {
	rule := func(scope *admissionregistrationv1.ScopeType) admissionregistrationv1.RuleWithOperations {
		return admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}, Scope: scope}}
	}
	service := func(port *int32) admissionregistrationv1.WebhookClientConfig {
		return admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "ns", Name: "hook", Port: port}}
	}
	everything := &metav1.LabelSelector{}
	defaulted := admissionregistrationv1.ValidatingWebhook{Name: "a.example.com",
		ClientConfig: service(ptr.To[int32](443)), Rules: []admissionregistrationv1.RuleWithOperations{rule(ptr.To(admissionregistrationv1.AllScopes))},
		FailurePolicy: ptr.To(admissionregistrationv1.Fail), MatchPolicy: ptr.To(admissionregistrationv1.Equivalent),
		NamespaceSelector: everything, ObjectSelector: everything, TimeoutSeconds: ptr.To[int32](10)}
	set := defaulted
	set.ClientConfig = service(ptr.To[int32](8443))
	set.Rules = []admissionregistrationv1.RuleWithOperations{rule(ptr.To(admissionregistrationv1.NamespacedScope))}
	set.FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
	set.MatchPolicy = ptr.To(admissionregistrationv1.Exact)
	set.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}
	set.TimeoutSeconds = ptr.To[int32](3)
	tests := []struct {
		name     string
		in, want admissionregistrationv1.ValidatingWebhook
	}{
		{
			name: "a bare webhook fails closed, matches equivalent resources, selects everything and waits 10s",
			in:   admissionregistrationv1.ValidatingWebhook{Name: "a.example.com", ClientConfig: service(nil), Rules: []admissionregistrationv1.RuleWithOperations{rule(nil)}},
			want: defaulted,
		},
		{
			name: "values the client set are kept",
			in:   set,
			want: set,
		},
		{
			name: "a URL webhook gets no service port",
			in:   admissionregistrationv1.ValidatingWebhook{Name: "u.example.com", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://h/")}},
			want: admissionregistrationv1.ValidatingWebhook{Name: "u.example.com", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://h/")},
				FailurePolicy: ptr.To(admissionregistrationv1.Fail), MatchPolicy: ptr.To(admissionregistrationv1.Equivalent),
				NamespaceSelector: everything, ObjectSelector: everything, TimeoutSeconds: ptr.To[int32](10)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &admissionregistrationv1.ValidatingWebhookConfiguration{Webhooks: []admissionregistrationv1.ValidatingWebhook{*tt.in.DeepCopy()}}
			Object(c)
			if !reflect.DeepEqual(c.Webhooks[0], tt.want) {
				t.Errorf("got\n%+v\nwant\n%+v", c.Webhooks[0], tt.want)
			}
			// The mutating kind shares these defaults and adds reinvocationPolicy Never.
			m := &admissionregistrationv1.MutatingWebhookConfiguration{Webhooks: []admissionregistrationv1.MutatingWebhook{{
				Name: tt.in.Name, ClientConfig: *tt.in.ClientConfig.DeepCopy(), Rules: tt.in.DeepCopy().Rules, FailurePolicy: tt.in.FailurePolicy,
				MatchPolicy: tt.in.MatchPolicy, NamespaceSelector: tt.in.NamespaceSelector, TimeoutSeconds: tt.in.TimeoutSeconds}}}
			Object(m)
			got := m.Webhooks[0]
			if got.ReinvocationPolicy == nil || *got.ReinvocationPolicy != admissionregistrationv1.NeverReinvocationPolicy {
				t.Errorf("mutating reinvocationPolicy %v, want Never", got.ReinvocationPolicy)
			}
			if !reflect.DeepEqual(got.ClientConfig, tt.want.ClientConfig) || !reflect.DeepEqual(got.Rules, tt.want.Rules) ||
				*got.FailurePolicy != *tt.want.FailurePolicy || *got.TimeoutSeconds != *tt.want.TimeoutSeconds ||
				!reflect.DeepEqual(got.ObjectSelector, tt.want.ObjectSelector) {
				t.Errorf("mutating webhook %+v, want the validating defaults %+v", got, tt.want)
			}
		})
	}
	t.Run("a webhook that set reinvocationPolicy keeps it", func(t *testing.T) {
		m := &admissionregistrationv1.MutatingWebhookConfiguration{Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "m.example.com", ReinvocationPolicy: ptr.To(admissionregistrationv1.IfNeededReinvocationPolicy)}}}
		Object(m)
		if *m.Webhooks[0].ReinvocationPolicy != admissionregistrationv1.IfNeededReinvocationPolicy {
			t.Errorf("reinvocationPolicy %v, want IfNeeded", *m.Webhooks[0].ReinvocationPolicy)
		}
	})
}
