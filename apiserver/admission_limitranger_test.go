package apiserver

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func rl(pairs ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(pairs); i += 2 {
		out[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

func podWith(containers ...corev1.ResourceRequirements) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	for i, r := range containers {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: string(rune('a' + i)), Image: "busybox", Resources: r})
	}
	return pod
}

func limitRangeOf(items ...corev1.LimitRangeItem) *corev1.LimitRange {
	return &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "lr", Namespace: "ns"}, Spec: corev1.LimitRangeSpec{Limits: items}}
}

func TestLimitRanger(t *testing.T) {
	container := corev1.LimitTypeContainer
	tests := []struct {
		name       string
		pod        *corev1.Pod
		ranges     []*corev1.LimitRange
		wantErr    string
		wantReq    corev1.ResourceList // of the first container
		wantLim    corev1.ResourceList
		annotation string
	}{
		{
			name:       "a container without resources gets the default request and limit",
			pod:        podWith(corev1.ResourceRequirements{}),
			ranges:     []*corev1.LimitRange{limitRangeOf(corev1.LimitRangeItem{Type: container, Default: rl("cpu", "500m", "memory", "128Mi"), DefaultRequest: rl("cpu", "100m", "memory", "64Mi")})},
			wantReq:    rl("cpu", "100m", "memory", "64Mi"),
			wantLim:    rl("cpu", "500m", "memory", "128Mi"),
			annotation: "LimitRanger plugin set: cpu, memory request for container a; cpu, memory limit for container a",
		},
		{
			name:    "what the container names is kept",
			pod:     podWith(corev1.ResourceRequirements{Requests: rl("cpu", "200m"), Limits: rl("cpu", "300m")}),
			ranges:  []*corev1.LimitRange{limitRangeOf(corev1.LimitRangeItem{Type: container, Default: rl("cpu", "500m", "memory", "128Mi"), DefaultRequest: rl("cpu", "100m", "memory", "64Mi")})},
			wantReq: rl("cpu", "200m", "memory", "64Mi"),
			wantLim: rl("cpu", "300m", "memory", "128Mi"),
		},
		{
			name:    "a limit over the container max is refused with upstream's message",
			pod:     podWith(corev1.ResourceRequirements{Limits: rl("cpu", "2"), Requests: rl("cpu", "2")}),
			ranges:  []*corev1.LimitRange{limitRangeOf(corev1.LimitRangeItem{Type: container, Max: rl("cpu", "1")})},
			wantErr: "maximum cpu usage per Container is 1, but limit is 2",
		},
		{
			name:    "a max without a default limit and no limit named fills the max as limit (API defaulting of the range)",
			pod:     podWith(corev1.ResourceRequirements{}),
			ranges:  []*corev1.LimitRange{limitRangeOf(corev1.LimitRangeItem{Type: container, Max: rl("cpu", "1"), Default: rl("cpu", "1"), DefaultRequest: rl("cpu", "1")})},
			wantReq: rl("cpu", "1"),
			wantLim: rl("cpu", "1"),
		},
		{
			name:    "a max with no limit and no default is refused",
			pod:     podWith(corev1.ResourceRequirements{}),
			ranges:  []*corev1.LimitRange{limitRangeOf(corev1.LimitRangeItem{Type: corev1.LimitTypePod, Max: rl("memory", "1Gi")})},
			wantErr: "maximum memory usage per Pod is 1Gi.  No limit is specified",
		},
		{
			name:    "a request under the min is refused",
			pod:     podWith(corev1.ResourceRequirements{Requests: rl("memory", "10Mi")}),
			ranges:  []*corev1.LimitRange{limitRangeOf(corev1.LimitRangeItem{Type: container, Min: rl("memory", "64Mi")})},
			wantErr: "minimum memory usage per Container is 64Mi, but request is 10Mi",
		},
		{
			name:    "the pod max counts the sum of its containers",
			pod:     podWith(corev1.ResourceRequirements{Limits: rl("cpu", "600m")}, corev1.ResourceRequirements{Limits: rl("cpu", "600m")}),
			ranges:  []*corev1.LimitRange{limitRangeOf(corev1.LimitRangeItem{Type: corev1.LimitTypePod, Max: rl("cpu", "1")})},
			wantErr: "maximum cpu usage per Pod is 1, but limit is 1200m",
		},
		{
			name:    "a limit over ratio times the request is refused",
			pod:     podWith(corev1.ResourceRequirements{Requests: rl("cpu", "100m"), Limits: rl("cpu", "1")}),
			ranges:  []*corev1.LimitRange{limitRangeOf(corev1.LimitRangeItem{Type: container, MaxLimitRequestRatio: rl("cpu", "4")})},
			wantErr: "cpu max limit to request ratio per Container is 4, but provided ratio is 10.000000",
		},
		{
			name:    "every violation is reported",
			pod:     podWith(corev1.ResourceRequirements{Requests: rl("cpu", "2", "memory", "1Mi"), Limits: rl("cpu", "2", "memory", "1Mi")}),
			ranges:  []*corev1.LimitRange{limitRangeOf(corev1.LimitRangeItem{Type: container, Max: rl("cpu", "1"), Min: rl("memory", "4Mi")})},
			wantErr: "[minimum memory usage per Container is 4Mi, but request is 1Mi, maximum cpu usage per Container is 1, but limit is 2]",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := limitRanger(tt.pod, tt.ranges)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			res := tt.pod.Spec.Containers[0].Resources
			if !equalLists(res.Requests, tt.wantReq) || !equalLists(res.Limits, tt.wantLim) {
				t.Fatalf("requests %v limits %v, want %v and %v", res.Requests, res.Limits, tt.wantReq, tt.wantLim)
			}
			if got := tt.pod.Annotations[limitRangerAnnotation]; tt.annotation != "" && got != tt.annotation {
				t.Fatalf("annotation = %q, want %q", got, tt.annotation)
			}
		})
	}
}

func equalLists(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || v.Cmp(w) != 0 {
			return false
		}
	}
	return true
}
