package apiserver

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"minik/internal/quota"
)

// limitRangerAnnotation records on a pod what LimitRanger filled in.
const limitRangerAnnotation = "kubernetes.io/limit-ranger"

// admitLimitRanger is the LimitRanger plugin for a new pod: the
// LimitRanges of its namespace fill in default requests and limits, then
// bound them. A violation is a 403, as upstream.
func (s *Server) admitLimitRanger(ctx context.Context, pod *corev1.Pod, reads *admissionReads) error {
	ranges, err := reads.limitRanges(ctx, pod.Namespace)
	if err != nil || len(ranges) == 0 {
		return err
	}
	if err := limitRanger(pod, ranges); err != nil {
		return apierrors.NewForbidden(corev1.Resource("pods"), pod.Name, err)
	}
	return nil
}

// limitRanger applies ranges to pod: first every range's container
// defaults (default → limits, defaultRequest → requests, where the
// container names none), then every range's min, max and
// maxLimitRequestRatio for each container and for the pod as a whole.
// It returns every violation, aggregated.
func limitRanger(pod *corev1.Pod, ranges []*corev1.LimitRange) error {
	var set []string
	for _, lr := range ranges {
		def := containerDefaults(lr)
		for i := range pod.Spec.InitContainers {
			set = mergeDefaults(&pod.Spec.InitContainers[i], def, "init container", set)
		}
		for i := range pod.Spec.Containers {
			set = mergeDefaults(&pod.Spec.Containers[i], def, "container", set)
		}
	}
	if len(set) > 0 {
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[limitRangerAnnotation] = "LimitRanger plugin set: " + strings.Join(set, "; ")
	}
	var errs []error
	for _, lr := range ranges {
		for _, item := range lr.Spec.Limits {
			switch item.Type {
			case corev1.LimitTypeContainer:
				for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
					for i := range list {
						errs = append(errs, checkItem(item, list[i].Resources.Requests, list[i].Resources.Limits)...)
					}
				}
			case corev1.LimitTypePod:
				errs = append(errs, checkItem(item, quota.PodRequests(pod), quota.PodLimits(pod))...)
			}
		}
	}
	return utilerrors.NewAggregate(errs)
}

// containerDefaults gathers the defaults of a range's Container items.
func containerDefaults(lr *corev1.LimitRange) corev1.ResourceRequirements {
	def := corev1.ResourceRequirements{Limits: corev1.ResourceList{}, Requests: corev1.ResourceList{}}
	for _, item := range lr.Spec.Limits {
		if item.Type != corev1.LimitTypeContainer {
			continue
		}
		for k, v := range item.Default {
			def.Limits[k] = v.DeepCopy()
		}
		for k, v := range item.DefaultRequest {
			def.Requests[k] = v.DeepCopy()
		}
	}
	return def
}

// mergeDefaults fills in what c does not name and notes it in set, in
// upstream's annotation form ("cpu, memory request for container app").
func mergeDefaults(c *corev1.Container, def corev1.ResourceRequirements, kind string, set []string) []string {
	fill := func(list *corev1.ResourceList, from corev1.ResourceList) []string {
		var names []string
		for k, v := range from {
			if _, ok := (*list)[k]; ok {
				continue
			}
			if *list == nil {
				*list = corev1.ResourceList{}
			}
			(*list)[k] = v.DeepCopy()
			names = append(names, string(k))
		}
		sort.Strings(names)
		return names
	}
	if names := fill(&c.Resources.Requests, def.Requests); len(names) > 0 {
		set = append(set, fmt.Sprintf("%s request for %s %s", strings.Join(names, ", "), kind, c.Name))
	}
	if names := fill(&c.Resources.Limits, def.Limits); len(names) > 0 {
		set = append(set, fmt.Sprintf("%s limit for %s %s", strings.Join(names, ", "), kind, c.Name))
	}
	return set
}

// checkItem checks one item's min, max and ratios against requests and
// limits, in upstream's words.
func checkItem(item corev1.LimitRangeItem, requests, limits corev1.ResourceList) []error {
	var errs []error
	kind := string(item.Type)
	for _, k := range sortedResourceNames(item.Min) {
		if err := minConstraint(kind, k, item.Min[k], requests, limits); err != nil {
			errs = append(errs, err)
		}
	}
	for _, k := range sortedResourceNames(item.Max) {
		if err := maxConstraint(kind, k, item.Max[k], requests, limits); err != nil {
			errs = append(errs, err)
		}
	}
	for _, k := range sortedResourceNames(item.MaxLimitRequestRatio) {
		if err := ratioConstraint(kind, k, item.MaxLimitRequestRatio[k], requests, limits); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// compared returns request, limit and enforced as comparable integers:
// milli-units unless that would overflow.
func compared(req, lim, enforced resource.Quantity) (r, l, e int64) {
	r, l, e = req.Value(), lim.Value(), enforced.Value()
	if r <= resource.MaxMilliValue && l <= resource.MaxMilliValue && e <= resource.MaxMilliValue {
		r, l, e = req.MilliValue(), lim.MilliValue(), enforced.MilliValue()
	}
	return r, l, e
}

func minConstraint(kind string, name corev1.ResourceName, enforced resource.Quantity, requests, limits corev1.ResourceList) error {
	req, hasReq := requests[name]
	lim, hasLim := limits[name]
	r, l, e := compared(req, lim, enforced)
	switch {
	case !hasReq:
		return fmt.Errorf("minimum %s usage per %s is %s.  No request is specified", name, kind, enforced.String())
	case r < e:
		return fmt.Errorf("minimum %s usage per %s is %s, but request is %s", name, kind, enforced.String(), req.String())
	case hasLim && l < e:
		return fmt.Errorf("minimum %s usage per %s is %s, but limit is %s", name, kind, enforced.String(), lim.String())
	}
	return nil
}

func maxConstraint(kind string, name corev1.ResourceName, enforced resource.Quantity, requests, limits corev1.ResourceList) error {
	req, hasReq := requests[name]
	lim, hasLim := limits[name]
	r, l, e := compared(req, lim, enforced)
	switch {
	case !hasLim:
		return fmt.Errorf("maximum %s usage per %s is %s.  No limit is specified", name, kind, enforced.String())
	case l > e:
		return fmt.Errorf("maximum %s usage per %s is %s, but limit is %s", name, kind, enforced.String(), lim.String())
	case hasReq && r > e:
		return fmt.Errorf("maximum %s usage per %s is %s, but request is %s", name, kind, enforced.String(), req.String())
	}
	return nil
}

func ratioConstraint(kind string, name corev1.ResourceName, enforced resource.Quantity, requests, limits corev1.ResourceList) error {
	req, hasReq := requests[name]
	lim, hasLim := limits[name]
	r, l, _ := compared(req, lim, enforced)
	if !hasReq || r == 0 {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but no request is specified or request is 0", name, kind, enforced.String())
	}
	if !hasLim || l == 0 {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but no limit is specified or limit is 0", name, kind, enforced.String())
	}
	ratio := float64(l) / float64(r)
	observed, bound := ratio, float64(enforced.Value())
	if enforced.Value() <= resource.MaxMilliValue {
		observed, bound = ratio*1000, float64(enforced.MilliValue())
	}
	if observed > bound {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but provided ratio is %f", name, kind, enforced.String(), ratio)
	}
	return nil
}

func sortedResourceNames(list corev1.ResourceList) []corev1.ResourceName {
	out := make([]corev1.ResourceName, 0, len(list))
	for k := range list {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
