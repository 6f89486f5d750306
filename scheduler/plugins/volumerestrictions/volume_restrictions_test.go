package volumerestrictions

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/scheduler/cache"
	"minik/scheduler/framework"
	"minik/scheduler/internal/st"
)

func withClaim(p *corev1.Pod, claim string) *corev1.Pod {
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "v", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
	return p
}

func TestPreFilter(t *testing.T) {
	claim := func(name string, mode corev1.PersistentVolumeAccessMode) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{mode}}}
	}
	claims := []*corev1.PersistentVolumeClaim{claim("solo", corev1.ReadWriteOncePod), claim("shared", corev1.ReadWriteOnce)}
	running := func(c string) *corev1.Pod {
		return withClaim(st.MakePod().Name("other").Namespace("default").Node("n1").Obj(), c)
	}
	tests := []struct {
		name     string
		pod      *corev1.Pod
		existing []*corev1.Pod
		want     string
	}{
		{"a ReadWriteOncePod claim another pod uses is refused", withClaim(st.MakePod().Name("new").Namespace("default").Obj(), "solo"),
			[]*corev1.Pod{running("solo")}, ErrReasonReadWriteOncePodConflict},
		{"a free ReadWriteOncePod claim is fine", withClaim(st.MakePod().Name("new").Namespace("default").Obj(), "solo"), nil, ""},
		{"a ReadWriteOnce claim may be shared", withClaim(st.MakePod().Name("new").Namespace("default").Obj(), "shared"),
			[]*corev1.Pod{running("shared")}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ni := framework.NewNodeInfo()
			ni.SetNode(st.MakeNode().Name("n1").Obj())
			for _, p := range tt.existing {
				ni.AddPod(p)
			}
			snap := cache.NewSnapshot([]*framework.NodeInfo{ni}, nil)
			snap.SetStorage(framework.NewStaticStorage(claims, nil, nil))
			got := ""
			if s := New().PreFilter(framework.NewCycleState(), tt.pod, snap); !s.IsSuccess() {
				got = s.Message()
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
