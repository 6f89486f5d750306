package defaults

import (
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/utils/ptr"
)

// StatefulSet defaults replicas to 1, podManagementPolicy to OrderedReady,
// the update strategy to RollingUpdate with partition 0,
// revisionHistoryLimit to 10 and the claim retention policy to
// Retain/Retain. Each volumeClaimTemplate gets the claim defaults
// (volumeMode Filesystem, phase Pending), as upstream's generated
// defaulters apply them to the nested claims.
func StatefulSet(s *appsv1.StatefulSet) {
	spec := &s.Spec
	if spec.Replicas == nil {
		spec.Replicas = ptr.To[int32](1)
	}
	if spec.PodManagementPolicy == "" {
		spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement
	}
	us := &spec.UpdateStrategy
	if us.Type == "" {
		us.Type = appsv1.RollingUpdateStatefulSetStrategyType
		if us.RollingUpdate == nil {
			us.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{}
		}
	}
	if us.Type == appsv1.RollingUpdateStatefulSetStrategyType && us.RollingUpdate != nil && us.RollingUpdate.Partition == nil {
		us.RollingUpdate.Partition = ptr.To[int32](0)
	}
	if spec.RevisionHistoryLimit == nil {
		spec.RevisionHistoryLimit = ptr.To[int32](10)
	}
	if spec.PersistentVolumeClaimRetentionPolicy == nil {
		spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{}
	}
	rp := spec.PersistentVolumeClaimRetentionPolicy
	if rp.WhenDeleted == "" {
		rp.WhenDeleted = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	if rp.WhenScaled == "" {
		rp.WhenScaled = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	for i := range spec.VolumeClaimTemplates {
		PersistentVolumeClaim(&spec.VolumeClaimTemplates[i])
	}
	PodTemplateSpec(&spec.Template)
}

// CronJob defaults concurrencyPolicy to Allow, suspend to false and the
// history limits to 3 successful and 1 failed Job. The Job template's pod
// template gets the pod defaults; the Job spec itself is defaulted when a
// Job is made from it, as upstream does.
func CronJob(cj *batchv1.CronJob) {
	spec := &cj.Spec
	if spec.ConcurrencyPolicy == "" {
		spec.ConcurrencyPolicy = batchv1.AllowConcurrent
	}
	if spec.Suspend == nil {
		spec.Suspend = ptr.To(false)
	}
	if spec.SuccessfulJobsHistoryLimit == nil {
		spec.SuccessfulJobsHistoryLimit = ptr.To[int32](3)
	}
	if spec.FailedJobsHistoryLimit == nil {
		spec.FailedJobsHistoryLimit = ptr.To[int32](1)
	}
	PodTemplateSpec(&spec.JobTemplate.Spec.Template)
}
