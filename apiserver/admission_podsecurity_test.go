package apiserver

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	psapi "k8s.io/pod-security-admission/api"
)

func privilegedPod(name string) *corev1.Pod {
	yes := true
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox",
			SecurityContext: &corev1.SecurityContext{Privileged: &yes}}}}}
}

func restrictedPod() *corev1.Pod {
	no, yes := false, true
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ok", Namespace: "ns"},
		Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: &yes, SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{Name: "app", Image: "busybox", SecurityContext: &corev1.SecurityContext{
				AllowPrivilegeEscalation: &no, Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}}}}
}

func TestPodSecurity(t *testing.T) {
	ev, err := podSecurityEvaluator()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name          string
		labels        map[string]string
		pod           *corev1.Pod
		enforce       bool
		wantViolation string
		wantWarning   string
	}{
		{name: "a namespace without labels admits a privileged pod", pod: privilegedPod("p"), enforce: true},
		{
			name: "a restricted namespace refuses a privileged pod with upstream's message", pod: privilegedPod("p"), enforce: true,
			labels:        map[string]string{"pod-security.kubernetes.io/enforce": "restricted"},
			wantViolation: `violates PodSecurity "restricted:latest": privileged (container "app" must not set securityContext.privileged=true), allowPrivilegeEscalation != false (container "app" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "app" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "app" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "app" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`,
		},
		{
			name: "a baseline namespace at a pinned version refuses a privileged pod", pod: privilegedPod("p"), enforce: true,
			labels:        map[string]string{"pod-security.kubernetes.io/enforce": "baseline", "pod-security.kubernetes.io/enforce-version": "v1.30"},
			wantViolation: `violates PodSecurity "baseline:v1.30": privileged (container "app" must not set securityContext.privileged=true)`,
		},
		{
			name: "a restricted namespace admits a pod that meets restricted", pod: restrictedPod(), enforce: true,
			labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"},
		},
		{
			name: "warn gives a warning and admits", pod: privilegedPod("p"), enforce: true,
			labels:      map[string]string{"pod-security.kubernetes.io/warn": "baseline"},
			wantWarning: `would violate PodSecurity "baseline:latest": privileged (container "app" must not set securityContext.privileged=true)`,
		},
		{
			name: "a workload is only warned about, even under enforce", pod: privilegedPod("p"), enforce: false,
			labels:      map[string]string{"pod-security.kubernetes.io/enforce": "baseline", "pod-security.kubernetes.io/warn": "baseline"},
			wantWarning: `would violate PodSecurity "baseline:latest": privileged (container "app" must not set securityContext.privileged=true)`,
		},
		{
			name: "an unparsable level counts as restricted", pod: privilegedPod("p"), enforce: true,
			labels:        map[string]string{"pod-security.kubernetes.io/enforce": "strict"},
			wantViolation: `violates PodSecurity "restricted:latest": privileged`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			violation, warning := podSecurity(ev, tt.labels, &tt.pod.ObjectMeta, &tt.pod.Spec, tt.enforce)
			switch {
			case tt.wantViolation == "" && violation != nil:
				t.Fatalf("violation %v, want none", violation)
			case tt.wantViolation != "" && (violation == nil || !strings.HasPrefix(violation.Error(), tt.wantViolation)):
				t.Fatalf("violation %v, want %q", violation, tt.wantViolation)
			}
			if warning != tt.wantWarning {
				t.Fatalf("warning %q, want %q", warning, tt.wantWarning)
			}
		})
	}
}

func TestExistingPodWarnings(t *testing.T) {
	ev, _ := podSecurityEvaluator()
	got := existingPodWarnings(ev, "ns", psapi.LevelVersion{Level: psapi.LevelBaseline, Version: psapi.LatestVersion()},
		[]*corev1.Pod{privilegedPod("c"), restrictedPod(), privilegedPod("b")})
	want := []string{
		`existing pods in namespace "ns" violate the new PodSecurity enforce level "baseline:latest"`,
		`b (and 1 other pod): privileged`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
