package defaults

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// ValidatingWebhookConfiguration fills in upstream's
// SetDefaults_ValidatingWebhook, SetDefaults_Rule and
// SetDefaults_ServiceReference (admissionregistration/v1) on every webhook.
// sideEffects and admissionReviewVersions have no default in v1: they are
// required.
func ValidatingWebhookConfiguration(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
	for i := range c.Webhooks {
		w := &c.Webhooks[i]
		webhookCommon(&w.FailurePolicy, &w.MatchPolicy, &w.NamespaceSelector, &w.ObjectSelector, &w.TimeoutSeconds, w.Rules, &w.ClientConfig)
	}
}

// MutatingWebhookConfiguration is ValidatingWebhookConfiguration's
// defaults plus reinvocationPolicy Never (SetDefaults_MutatingWebhook).
func MutatingWebhookConfiguration(c *admissionregistrationv1.MutatingWebhookConfiguration) {
	for i := range c.Webhooks {
		w := &c.Webhooks[i]
		webhookCommon(&w.FailurePolicy, &w.MatchPolicy, &w.NamespaceSelector, &w.ObjectSelector, &w.TimeoutSeconds, w.Rules, &w.ClientConfig)
		if w.ReinvocationPolicy == nil {
			w.ReinvocationPolicy = ptr.To(admissionregistrationv1.NeverReinvocationPolicy)
		}
	}
}

// webhookCommon holds the defaults both kinds of webhook share: failure
// policy Fail, match policy Equivalent, selectors that select everything,
// a 10 second timeout, rules of any scope and service port 443.
func webhookCommon(failure **admissionregistrationv1.FailurePolicyType, match **admissionregistrationv1.MatchPolicyType,
	nsSel, objSel **metav1.LabelSelector, timeout **int32, rules []admissionregistrationv1.RuleWithOperations,
	cc *admissionregistrationv1.WebhookClientConfig) {
	if *failure == nil {
		*failure = ptr.To(admissionregistrationv1.Fail)
	}
	if *match == nil {
		*match = ptr.To(admissionregistrationv1.Equivalent)
	}
	if *nsSel == nil {
		*nsSel = &metav1.LabelSelector{}
	}
	if *objSel == nil {
		*objSel = &metav1.LabelSelector{}
	}
	if *timeout == nil {
		*timeout = ptr.To[int32](10)
	}
	for i := range rules {
		if rules[i].Scope == nil {
			rules[i].Scope = ptr.To(admissionregistrationv1.AllScopes)
		}
	}
	if cc.Service != nil && cc.Service.Port == nil {
		cc.Service.Port = ptr.To[int32](443)
	}
}
