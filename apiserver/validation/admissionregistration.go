package validation

import (
	"fmt"
	"net/url"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The facts follow upstream pkg/apis/admissionregistration/validation and
// k8s.io/apiserver/pkg/util/webhook (URL and service reference).

// AdmissionReviewVersions are the AdmissionReview versions minik sends, in
// its order of preference; a webhook must accept one of them.
var AdmissionReviewVersions = []string{"v1", "v1beta1"}

// MatchConditionsUnsupported is the reason a webhook with matchConditions
// is refused: minik has no CEL evaluator, and a condition it ignored
// would call the webhook on requests its author meant to skip.
const MatchConditionsUnsupported = "minik does not evaluate matchConditions (CEL): leave them out and filter with rules, namespaceSelector and objectSelector, or in the webhook itself"

// webhookOptions are upstream's ratcheting options: a create gets the
// strict ones; an update keeps what the stored configuration already had.
type webhookOptions struct {
	requireNoSideEffects, requireKnownReviewVersion, requireUniqueNames, allowInvalidLabelValue bool
}

var strictWebhookOptions = webhookOptions{requireNoSideEffects: true, requireKnownReviewVersion: true, requireUniqueNames: true}

// webhookFields are the fields both kinds of webhook share, so that one
// check serves both.
type webhookFields struct {
	name              string
	clientConfig      admissionregistrationv1.WebhookClientConfig
	rules             []admissionregistrationv1.RuleWithOperations
	failurePolicy     *admissionregistrationv1.FailurePolicyType
	matchPolicy       *admissionregistrationv1.MatchPolicyType
	namespaceSelector *metav1.LabelSelector
	objectSelector    *metav1.LabelSelector
	sideEffects       *admissionregistrationv1.SideEffectClass
	timeoutSeconds    *int32
	reviewVersions    []string
	matchConditions   []admissionregistrationv1.MatchCondition
	reinvocation      *admissionregistrationv1.ReinvocationPolicyType // mutating only
	mutating          bool
}

func validatingFields(ws []admissionregistrationv1.ValidatingWebhook) []webhookFields {
	out := make([]webhookFields, len(ws))
	for i, w := range ws {
		out[i] = webhookFields{name: w.Name, clientConfig: w.ClientConfig, rules: w.Rules, failurePolicy: w.FailurePolicy,
			matchPolicy: w.MatchPolicy, namespaceSelector: w.NamespaceSelector, objectSelector: w.ObjectSelector,
			sideEffects: w.SideEffects, timeoutSeconds: w.TimeoutSeconds, reviewVersions: w.AdmissionReviewVersions,
			matchConditions: w.MatchConditions}
	}
	return out
}

func mutatingFields(ws []admissionregistrationv1.MutatingWebhook) []webhookFields {
	out := make([]webhookFields, len(ws))
	for i, w := range ws {
		out[i] = webhookFields{name: w.Name, clientConfig: w.ClientConfig, rules: w.Rules, failurePolicy: w.FailurePolicy,
			matchPolicy: w.MatchPolicy, namespaceSelector: w.NamespaceSelector, objectSelector: w.ObjectSelector,
			sideEffects: w.SideEffects, timeoutSeconds: w.TimeoutSeconds, reviewVersions: w.AdmissionReviewVersions,
			matchConditions: w.MatchConditions, reinvocation: w.ReinvocationPolicy, mutating: true}
	}
	return out
}

// optionsFor gives an update the options its stored webhooks allow, as
// upstream's Validate*WebhookConfigurationUpdate.
func optionsFor(old []webhookFields) webhookOptions {
	opts := strictWebhookOptions
	names := sets.New[string]()
	for _, w := range old {
		if w.sideEffects == nil || !noSideEffectClasses.Has(string(*w.sideEffects)) {
			opts.requireNoSideEffects = false
		}
		if len(w.reviewVersions) > 0 && !sets.New(w.reviewVersions...).HasAny(AdmissionReviewVersions...) {
			opts.requireKnownReviewVersion = false
		}
		if names.Has(w.name) {
			opts.requireUniqueNames = false
		}
		names.Insert(w.name)
		for _, sel := range []*metav1.LabelSelector{w.namespaceSelector, w.objectSelector} {
			if sel != nil && len(metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, nil)) > 0 {
				opts.allowInvalidLabelValue = true
			}
		}
	}
	return opts
}

func validateWebhooks(hooks []webhookFields, opts webhookOptions) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, w := range hooks {
		p := field.NewPath("webhooks").Index(i)
		errs = append(errs, validateWebhook(&w, opts, p)...)
		errs = append(errs, validateReviewVersions(w.reviewVersions, opts.requireKnownReviewVersion, p.Child("admissionReviewVersions"))...)
		if opts.requireUniqueNames && w.name != "" {
			if names.Has(w.name) {
				errs = append(errs, field.Duplicate(p.Child("name"), w.name))
			}
			names.Insert(w.name)
		}
	}
	return errs
}

var (
	failurePolicies      = sets.New(string(admissionregistrationv1.Ignore), string(admissionregistrationv1.Fail))
	matchPolicies        = sets.New(string(admissionregistrationv1.Exact), string(admissionregistrationv1.Equivalent))
	allSideEffectClasses = sets.New(string(admissionregistrationv1.SideEffectClassUnknown), string(admissionregistrationv1.SideEffectClassNone),
		string(admissionregistrationv1.SideEffectClassSome), string(admissionregistrationv1.SideEffectClassNoneOnDryRun))
	noSideEffectClasses  = sets.New(string(admissionregistrationv1.SideEffectClassNone), string(admissionregistrationv1.SideEffectClassNoneOnDryRun))
	reinvocationPolicies = sets.New(string(admissionregistrationv1.NeverReinvocationPolicy), string(admissionregistrationv1.IfNeededReinvocationPolicy))
	webhookOperations    = sets.New(string(admissionregistrationv1.OperationAll), string(admissionregistrationv1.Create),
		string(admissionregistrationv1.Update), string(admissionregistrationv1.Delete), string(admissionregistrationv1.Connect))
	ruleScopes = sets.New(string(admissionregistrationv1.ClusterScope), string(admissionregistrationv1.NamespacedScope), string(admissionregistrationv1.AllScopes))
)

func validateWebhook(w *webhookFields, opts webhookOptions, p *field.Path) field.ErrorList {
	errs := utilvalidation.IsFullyQualifiedName(p.Child("name"), w.name)
	for i := range w.rules {
		errs = append(errs, validateWebhookRule(&w.rules[i], p.Child("rules").Index(i))...)
	}
	if w.failurePolicy != nil && !failurePolicies.Has(string(*w.failurePolicy)) {
		errs = append(errs, field.NotSupported(p.Child("failurePolicy"), *w.failurePolicy, sets.List(failurePolicies)))
	}
	if w.matchPolicy != nil && !matchPolicies.Has(string(*w.matchPolicy)) {
		errs = append(errs, field.NotSupported(p.Child("matchPolicy"), *w.matchPolicy, sets.List(matchPolicies)))
	}
	allowed := allSideEffectClasses
	if opts.requireNoSideEffects {
		allowed = noSideEffectClasses
	}
	if w.sideEffects == nil {
		errs = append(errs, field.Required(p.Child("sideEffects"), "must specify one of "+strings.Join(sets.List(allowed), ", ")))
	} else if !allowed.Has(string(*w.sideEffects)) {
		errs = append(errs, field.NotSupported(p.Child("sideEffects"), *w.sideEffects, sets.List(allowed)))
	}
	if t := w.timeoutSeconds; t != nil && (*t < 1 || *t > 30) {
		errs = append(errs, field.Invalid(p.Child("timeoutSeconds"), *t, "the timeout value must be between 1 and 30 seconds"))
	}
	selOpts := metav1validation.LabelSelectorValidationOptions{AllowInvalidLabelValueInSelector: opts.allowInvalidLabelValue}
	if w.namespaceSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(w.namespaceSelector, selOpts, p.Child("namespaceSelector"))...)
	}
	if w.objectSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(w.objectSelector, selOpts, p.Child("objectSelector"))...)
	}
	if w.mutating && w.reinvocation != nil && !reinvocationPolicies.Has(string(*w.reinvocation)) {
		errs = append(errs, field.NotSupported(p.Child("reinvocationPolicy"), *w.reinvocation, sets.List(reinvocationPolicies)))
	}
	cc := w.clientConfig
	switch {
	case (cc.URL == nil) == (cc.Service == nil):
		errs = append(errs, field.Required(p.Child("clientConfig"), "exactly one of url or service is required"))
	case cc.URL != nil:
		errs = append(errs, validateWebhookURL(p.Child("clientConfig", "url"), *cc.URL)...)
	default:
		errs = append(errs, validateWebhookService(p.Child("clientConfig", "service"), cc.Service)...)
	}
	if len(w.matchConditions) > 0 {
		errs = append(errs, field.Forbidden(p.Child("matchConditions"), MatchConditionsUnsupported))
	}
	return errs
}

func validateReviewVersions(versions []string, requireKnown bool, p *field.Path) field.ErrorList {
	if len(versions) == 0 {
		return field.ErrorList{field.Required(p, "must specify one of "+strings.Join(AdmissionReviewVersions, ", "))}
	}
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, v := range versions {
		if seen.Has(v) {
			errs = append(errs, field.Invalid(p.Index(i), v, "duplicate version"))
			continue
		}
		seen.Insert(v)
		for _, msg := range utilvalidation.IsDNS1035Label(v) {
			errs = append(errs, field.Invalid(p.Index(i), v, msg))
		}
	}
	if requireKnown && !seen.HasAny(AdmissionReviewVersions...) {
		errs = append(errs, field.Invalid(p, versions, "must include at least one of "+strings.Join(AdmissionReviewVersions, ", ")))
	}
	return errs
}

func validateWebhookRule(r *admissionregistrationv1.RuleWithOperations, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	ops := p.Child("operations")
	if len(r.Operations) == 0 {
		errs = append(errs, field.Required(ops, ""))
	}
	if len(r.Operations) > 1 && hasWildcard(r.Operations) {
		errs = append(errs, field.Invalid(ops, r.Operations, "if '*' is present, must not specify other operations"))
	}
	for i, op := range r.Operations {
		if !webhookOperations.Has(string(op)) {
			errs = append(errs, field.NotSupported(ops.Index(i), op, sets.List(webhookOperations)))
		}
	}
	if len(r.APIGroups) == 0 {
		errs = append(errs, field.Required(p.Child("apiGroups"), ""))
	}
	if len(r.APIGroups) > 1 && hasWildcard(r.APIGroups) {
		errs = append(errs, field.Invalid(p.Child("apiGroups"), r.APIGroups, "if '*' is present, must not specify other API groups"))
	}
	// A group may be "" (the core group); a version may not.
	if len(r.APIVersions) == 0 {
		errs = append(errs, field.Required(p.Child("apiVersions"), ""))
	}
	if len(r.APIVersions) > 1 && hasWildcard(r.APIVersions) {
		errs = append(errs, field.Invalid(p.Child("apiVersions"), r.APIVersions, "if '*' is present, must not specify other API versions"))
	}
	for i, v := range r.APIVersions {
		if v == "" {
			errs = append(errs, field.Required(p.Child("apiVersions").Index(i), ""))
		}
	}
	errs = append(errs, validateRuleResources(r.Resources, p.Child("resources"))...)
	if r.Scope != nil && !ruleScopes.Has(string(*r.Scope)) {
		errs = append(errs, field.NotSupported(p.Child("scope"), *r.Scope, sets.List(ruleScopes)))
	}
	return errs
}

func hasWildcard[T ~string](list []T) bool {
	for _, s := range list {
		if s == "*" {
			return true
		}
	}
	return false
}

// validateRuleResources checks the forms "*", "*/*", "pods", "pods/*",
// "*/status" and "pods/status" as upstream: a wildcard form may not be
// combined with the names it already covers.
func validateRuleResources(resources []string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(resources) == 0 {
		errs = append(errs, field.Required(p, ""))
	}
	anySub := sets.New[string]()      // "pods/*"
	anyResource := sets.New[string]() // "*/status"
	var doubleWildcard, singleWildcard, plainResource bool
	for i, rs := range resources {
		if rs == "" {
			errs = append(errs, field.Required(p.Index(i), ""))
			continue
		}
		doubleWildcard = doubleWildcard || rs == "*/*"
		singleWildcard = singleWildcard || rs == "*"
		res, sub, hasSub := strings.Cut(rs, "/")
		if !hasSub {
			// Upstream keeps only the last plain entry's verdict.
			plainResource = rs != "*"
			continue
		}
		if anySub.Has(res) {
			errs = append(errs, field.Invalid(p.Index(i), rs, fmt.Sprintf("if '%s/*' is present, must not specify %s", res, rs)))
		}
		if anyResource.Has(sub) {
			errs = append(errs, field.Invalid(p.Index(i), rs, fmt.Sprintf("if '*/%s' is present, must not specify %s", sub, rs)))
		}
		if sub == "*" {
			anySub.Insert(res)
		}
		if res == "*" {
			anyResource.Insert(sub)
		}
	}
	if len(resources) > 1 && doubleWildcard {
		errs = append(errs, field.Invalid(p, resources, "if '*/*' is present, must not specify other resources"))
	}
	if singleWildcard && plainResource {
		errs = append(errs, field.Invalid(p, resources, "if '*' is present, must not specify other resources without subresources"))
	}
	return errs
}

// validateWebhookURL: an https URL with a host and no user, query or
// fragment.
func validateWebhookURL(p *field.Path, raw string) field.ErrorList {
	const form = "; desired format: https://host[/path]"
	u, err := url.Parse(raw)
	if err != nil {
		return field.ErrorList{field.Required(p, "url must be a valid URL: "+err.Error()+form)}
	}
	var errs field.ErrorList
	if u.Scheme != "https" {
		errs = append(errs, field.Invalid(p, u.Scheme, "'https' is the only allowed URL scheme"+form))
	}
	if u.Host == "" {
		errs = append(errs, field.Invalid(p, u.Host, "host must be specified"+form))
	}
	if u.User != nil {
		errs = append(errs, field.Invalid(p, u.User.String(), "user information is not permitted in the URL"))
	}
	if u.Fragment != "" {
		errs = append(errs, field.Invalid(p, u.Fragment, "fragments are not permitted in the URL"))
	}
	if u.RawQuery != "" {
		errs = append(errs, field.Invalid(p, u.RawQuery, "query parameters are not permitted in the URL"))
	}
	return errs
}

// validateWebhookService: a name, a namespace, a port and a path of DNS
// subdomain segments. (Upstream's ValidateWebhookService swaps the name
// and namespace paths, kubernetes#141353; minik names the field missing.)
func validateWebhookService(p *field.Path, svc *admissionregistrationv1.ServiceReference) field.ErrorList {
	var errs field.ErrorList
	if svc.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	}
	if svc.Namespace == "" {
		errs = append(errs, field.Required(p.Child("namespace"), ""))
	}
	port := int32(443) // the default, if validation runs before defaulting
	if svc.Port != nil {
		port = *svc.Port
	}
	if msgs := utilvalidation.IsValidPortNum(int(port)); msgs != nil {
		errs = append(errs, field.Invalid(p.Child("port"), port, "port is not valid: "+strings.Join(msgs, ", ")))
	}
	if svc.Path == nil || *svc.Path == "" || *svc.Path == "/" {
		return errs
	}
	path := *svc.Path
	if path == "//" {
		return append(errs, field.Invalid(p.Child("path"), path, "segment[0] may not be empty"))
	}
	if !strings.HasPrefix(path, "/") {
		errs = append(errs, field.Invalid(p.Child("path"), path, "must start with a '/'"))
	}
	// Upstream drops the first character whatever it is, and one trailing slash.
	for i, seg := range strings.Split(strings.TrimSuffix(path[1:], "/"), "/") {
		if seg == "" {
			errs = append(errs, field.Invalid(p.Child("path"), path, fmt.Sprintf("segment[%d] may not be empty", i)))
			continue
		}
		for _, msg := range utilvalidation.IsDNS1123Subdomain(seg) {
			errs = append(errs, field.Invalid(p.Child("path"), path, fmt.Sprintf("segment[%d]: %v", i, msg)))
		}
	}
	return errs
}
