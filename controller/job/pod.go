package job

import (
	"fmt"
	"maps"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/controller/framework"
)

// PodToCreate is one pod a sync creates.
type PodToCreate struct {
	// Index is its completion index (Indexed Jobs), or NoIndex.
	Index int
	// IndexFailures and IndexIgnoredFailures are how often its index
	// failed so far, counted and ignored by a pod failure policy
	// (backoffLimitPerIndex); they go on the pod as annotations.
	IndexFailures, IndexIgnoredFailures int32
}

// NewPod returns the pod spec asks for: job's template, controlled by job.
// An Indexed Job's pod carries its index in the annotation and label
// batch.kubernetes.io/job-completion-index, reads it from the env var
// JOB_COMPLETION_INDEX, has the hostname <job>-<index> and is named
// <job>-<index>-<random>.
func NewPod(job *batchv1.Job, spec PodToCreate) *corev1.Pod {
	t := job.Spec.Template.DeepCopy()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    job.Name + "-",
			Namespace:       job.Namespace,
			Labels:          maps.Clone(t.Labels),
			Annotations:     maps.Clone(t.Annotations),
			OwnerReferences: []metav1.OwnerReference{framework.ControllerRef(job, "batch/v1", "Job")},
		},
		Spec: t.Spec,
	}
	if !isIndexed(job) || spec.Index == NoIndex {
		return pod
	}
	ix := strconv.Itoa(spec.Index)
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.GenerateName = indexedGenerateName(job.Name, spec.Index)
	pod.Annotations[batchv1.JobCompletionIndexAnnotation] = ix
	// The label has the annotation's key, as in Kubernetes.
	pod.Labels[batchv1.JobCompletionIndexAnnotation] = ix
	pod.Spec.Hostname = job.Name + "-" + ix
	for i := range pod.Spec.InitContainers {
		addCompletionIndexEnv(&pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		addCompletionIndexEnv(&pod.Spec.Containers[i])
	}
	if hasBackoffLimitPerIndex(job) {
		pod.Annotations[batchv1.JobIndexFailureCountAnnotation] = strconv.Itoa(int(spec.IndexFailures))
		if spec.IndexIgnoredFailures > 0 {
			pod.Annotations[batchv1.JobIndexIgnoredFailureCountAnnotation] = strconv.Itoa(int(spec.IndexIgnoredFailures))
		}
	}
	return pod
}

// addCompletionIndexEnv gives c the variable JOB_COMPLETION_INDEX, read
// from the pod's index label, unless c sets it itself.
func addCompletionIndexEnv(c *corev1.Container) {
	for _, e := range c.Env {
		if e.Name == CompletionIndexEnv {
			return
		}
	}
	c.Env = append(c.Env, corev1.EnvVar{Name: CompletionIndexEnv, ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: fmt.Sprintf("metadata.labels['%s']", batchv1.JobCompletionIndexAnnotation)}}})
}
