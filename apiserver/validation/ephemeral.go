package validation

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// EphemeralContainersUpdate validates an update through the pod's
// ephemeralcontainers subresource (kubectl debug), as Kubernetes does:
// ephemeral containers may only be added, each with a unique name, an
// image, no ports, probes, lifecycle, resources or restart policy, and a
// targetContainerName that names one of the pod's containers.
func EphemeralContainersUpdate(obj, old runtime.Object) field.ErrorList {
	return update(obj.(*corev1.Pod), old, func(pod, old *corev1.Pod) field.ErrorList {
		errs := objectMetaUpdate(&pod.ObjectMeta, &old.ObjectMeta, true)
		return append(errs, validateEphemeralContainers(pod, old)...)
	})
}

func validateEphemeralContainers(pod, old *corev1.Pod) field.ErrorList {
	var errs field.ErrorList
	p := specPath.Child("ephemeralContainers")
	vols, _ := validateVolumes(pod.Spec.Volumes, specPath.Child("volumes"), true)
	hostUsers := pod.Spec.HostUsers == nil || *pod.Spec.HostUsers
	names := sets.New[string]()
	targets := sets.New[string]()
	for _, c := range pod.Spec.Containers {
		names.Insert(c.Name)
		targets.Insert(c.Name)
	}
	for _, c := range pod.Spec.InitContainers {
		names.Insert(c.Name)
		targets.Insert(c.Name)
	}
	for i := range pod.Spec.EphemeralContainers {
		ec := &pod.Spec.EphemeralContainers[i]
		ip := p.Index(i)
		c := (*corev1.Container)(&ec.EphemeralContainerCommon)
		errs = append(errs, validateContainerCommon(c, vols, ip, pod.Spec.RestartPolicy, hostUsers)...)
		if names.Has(ec.Name) {
			errs = append(errs, field.Duplicate(ip.Child("name"), ec.Name))
		} else {
			names.Insert(ec.Name)
		}
		if ec.TargetContainerName != "" && !targets.Has(ec.TargetContainerName) {
			errs = append(errs, field.NotFound(ip.Child("targetContainerName"), ec.TargetContainerName))
		}
		for _, f := range []struct {
			name string
			set  bool
		}{
			{"ports", len(ec.Ports) > 0}, {"livenessProbe", ec.LivenessProbe != nil}, {"readinessProbe", ec.ReadinessProbe != nil},
			{"startupProbe", ec.StartupProbe != nil}, {"lifecycle", ec.Lifecycle != nil},
			{"resources", len(ec.Resources.Limits)+len(ec.Resources.Requests)+len(ec.Resources.Claims) > 0},
			{"resizePolicy", len(ec.ResizePolicy) > 0}, {"restartPolicy", ec.RestartPolicy != nil},
		} {
			if f.set {
				errs = append(errs, field.Forbidden(ip.Child(f.name), "cannot be set for an Ephemeral Container"))
			}
		}
		for j, m := range ec.VolumeMounts {
			if m.SubPath != "" {
				errs = append(errs, field.Forbidden(ip.Child("volumeMounts").Index(j).Child("subPath"), "cannot be set for an Ephemeral Container"))
			}
		}
	}
	// Existing ephemeral containers stay as they are.
	current := map[string]*corev1.EphemeralContainer{}
	for i := range pod.Spec.EphemeralContainers {
		current[pod.Spec.EphemeralContainers[i].Name] = &pod.Spec.EphemeralContainers[i]
	}
	for _, ec := range old.Spec.EphemeralContainers {
		cur, ok := current[ec.Name]
		switch {
		case !ok:
			errs = append(errs, field.Forbidden(p, fmt.Sprintf("existing ephemeral containers %q may not be removed", ec.Name)))
		case !apiequality.Semantic.DeepEqual(ec, *cur):
			errs = append(errs, field.Forbidden(p, fmt.Sprintf("existing ephemeral containers %q may not be changed", ec.Name)))
		}
	}
	return errs
}
