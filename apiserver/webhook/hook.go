// Package webhook calls admission webhooks as kube-apiserver's
// MutatingAdmissionWebhook and ValidatingAdmissionWebhook plugins do:
// which webhooks a request matches (rules, scope, namespace and object
// selectors), the AdmissionReview sent and the answer read back, JSON
// patches, reinvocation, failure policies and upstream's error words.
// The apiserver supplies the configurations (from its watch cache), the
// request's attributes, and how to reach a Service.
package webhook

import (
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Hook is one webhook of a configuration, ready to match: defaults
// applied and selectors parsed once, when the configuration is read.
type Hook struct {
	// Configuration names the configuration that holds the webhook.
	Configuration string
	Name          string
	ClientConfig  admissionregistrationv1.WebhookClientConfig
	Rules         []admissionregistrationv1.RuleWithOperations
	// FailOpen is failurePolicy Ignore: an error calling the webhook
	// admits the request.
	FailOpen bool
	// NoSideEffectsOnDryRun is sideEffects None or NoneOnDryRun: the
	// webhook may be called for dry-run requests.
	NoSideEffectsOnDryRun bool
	NamespaceSelector     labels.Selector
	ObjectSelector        labels.Selector
	TimeoutSeconds        int32
	ReviewVersions        []string
	// Reinvoke is reinvocationPolicy IfNeeded (mutating webhooks).
	Reinvoke bool
	// Equivalent is matchPolicy Equivalent: a rule naming another version
	// of the request's resource matches too, and the webhook gets the
	// object in that version.
	Equivalent bool
}

// Set is the webhooks of every configuration of one kind, in the order
// they are called: configurations by name, webhooks as listed.
type Set struct {
	Hooks []*Hook
}

// Validating compiles validating configurations into a Set. A webhook
// whose selector does not parse (validation refuses those) is kept with a
// selector that matches nothing, and reported in the error.
func Validating(configs []*admissionregistrationv1.ValidatingWebhookConfiguration) (*Set, error) {
	return compileSet(configs, func(c *admissionregistrationv1.ValidatingWebhookConfiguration) string { return c.Name },
		func(c *admissionregistrationv1.ValidatingWebhookConfiguration, add func(*Hook, error)) {
			for _, w := range c.Webhooks {
				add(compile(c.Name, w.Name, w.ClientConfig, w.Rules, w.FailurePolicy, w.SideEffects,
					w.NamespaceSelector, w.ObjectSelector, w.TimeoutSeconds, w.AdmissionReviewVersions, w.MatchPolicy, nil))
			}
		})
}

// Mutating compiles mutating configurations into a Set.
func Mutating(configs []*admissionregistrationv1.MutatingWebhookConfiguration) (*Set, error) {
	return compileSet(configs, func(c *admissionregistrationv1.MutatingWebhookConfiguration) string { return c.Name },
		func(c *admissionregistrationv1.MutatingWebhookConfiguration, add func(*Hook, error)) {
			for _, w := range c.Webhooks {
				add(compile(c.Name, w.Name, w.ClientConfig, w.Rules, w.FailurePolicy, w.SideEffects,
					w.NamespaceSelector, w.ObjectSelector, w.TimeoutSeconds, w.AdmissionReviewVersions, w.MatchPolicy, w.ReinvocationPolicy))
			}
		})
}

// compileSet orders configurations by name and adds each one's webhooks
// in the order it lists them; the first compile error is returned.
func compileSet[C any](configs []C, name func(C) string, webhooks func(C, func(*Hook, error))) (*Set, error) {
	sorted := slices.SortedFunc(slices.Values(configs), func(a, b C) int { return strings.Compare(name(a), name(b)) })
	var set Set
	var firstErr error
	for _, c := range sorted {
		webhooks(c, func(h *Hook, err error) {
			if err != nil && firstErr == nil {
				firstErr = err
			}
			set.Hooks = append(set.Hooks, h)
		})
	}
	return &set, firstErr
}

func compile(config, name string, cc admissionregistrationv1.WebhookClientConfig, rules []admissionregistrationv1.RuleWithOperations,
	failure *admissionregistrationv1.FailurePolicyType, sideEffects *admissionregistrationv1.SideEffectClass,
	nsSel, objSel *metav1.LabelSelector, timeout *int32, versions []string, matchPolicy *admissionregistrationv1.MatchPolicyType,
	reinvoke *admissionregistrationv1.ReinvocationPolicyType) (*Hook, error) {
	h := &Hook{Configuration: config, Name: name, ClientConfig: cc, Rules: rules, TimeoutSeconds: 10, ReviewVersions: versions}
	h.FailOpen = failure != nil && *failure == admissionregistrationv1.Ignore
	h.NoSideEffectsOnDryRun = sideEffects != nil &&
		(*sideEffects == admissionregistrationv1.SideEffectClassNone || *sideEffects == admissionregistrationv1.SideEffectClassNoneOnDryRun)
	if timeout != nil {
		h.TimeoutSeconds = *timeout
	}
	h.Reinvoke = reinvoke != nil && *reinvoke == admissionregistrationv1.IfNeededReinvocationPolicy
	h.Equivalent = matchPolicy != nil && *matchPolicy == admissionregistrationv1.Equivalent
	var err error
	if h.NamespaceSelector, err = selector(nsSel); err != nil {
		return h, fmt.Errorf("webhook %q of %s: namespaceSelector: %w", name, config, err)
	}
	if h.ObjectSelector, err = selector(objSel); err != nil {
		return h, fmt.Errorf("webhook %q of %s: objectSelector: %w", name, config, err)
	}
	return h, nil
}

// selector parses a label selector; nil selects everything, as the
// defaulted {}; one that does not parse selects nothing.
func selector(s *metav1.LabelSelector) (labels.Selector, error) {
	if s == nil {
		return labels.Everything(), nil
	}
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		return labels.Nothing(), err
	}
	return sel, nil
}
