package kubelet

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/internal/metrics"
	"minik/internal/metrics/metricstest"
	"minik/kubelet/runtime"
	"minik/proto/cri"
)

func TestMetricsFollowTheRuntimeAndPodStarts(t *testing.T) {
	srv := httptest.NewServer(metrics.Handler(metrics.NewRegistry(Collectors()...)))
	defer srv.Close()
	scrape := func() metricstest.Families {
		_, f := metricstest.Scrape(t, http.DefaultClient, srv.URL)
		return f
	}
	ctr := func(pod string, state cri.ContainerState) *cri.Container {
		return &cri.Container{State: state, Labels: map[string]string{runtime.LabelPodUID: pod}}
	}
	before := scrape()
	var counts runtimeCounts
	counts.publish(countRuntime([]*cri.Container{
		ctr("a", cri.ContainerState_CONTAINER_RUNNING), ctr("a", cri.ContainerState_CONTAINER_RUNNING),
		ctr("b", cri.ContainerState_CONTAINER_RUNNING), ctr("c", cri.ContainerState_CONTAINER_EXITED),
	}))
	mid := scrape()
	running := map[string]string{"container_state": "running"}
	if got := mid.Value("kubelet_running_pods", nil) - before.Value("kubelet_running_pods", nil); got != 2 {
		t.Errorf("running pods moved by %v, want 2 (a and b)", got)
	}
	if got := mid.Value("kubelet_running_containers", running) - before.Value("kubelet_running_containers", running); got != 3 {
		t.Errorf("running containers moved by %v, want 3", got)
	}
	counts.publish(runtimeCounts{}) // the kubelet stops: its share goes
	if got := scrape().Value("kubelet_running_pods", nil); got != before.Value("kubelet_running_pods", nil) {
		t.Errorf("running pods %v after the kubelet left, want %v", got, before.Value("kubelet_running_pods", nil))
	}

	created := time.Now().Add(-3 * time.Second)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)}}
	w := &podWorker{pulling: 2 * time.Second}
	running1 := corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{
		{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}
	w.observePodStart(pod, &corev1.PodStatus{Phase: corev1.PodPending}, time.Now())
	w.observePodStart(pod, &running1, time.Now())
	w.observePodStart(pod, &running1, time.Now()) // once per pod
	after := scrape()
	if got := after.Value("kubelet_pod_start_sli_duration_seconds", nil) - before.Value("kubelet_pod_start_sli_duration_seconds", nil); got != 1 {
		t.Errorf("pod starts observed %v, want 1", got)
	}
	sum := after["kubelet_pod_start_sli_duration_seconds"].GetMetric()[0].GetHistogram().GetSampleSum() -
		before["kubelet_pod_start_sli_duration_seconds"].GetMetric()[0].GetHistogram().GetSampleSum()
	if sum < 0.9 || sum > 1.5 {
		t.Errorf("pod start %vs, want about 1s (3s since creation, less 2s of pulls)", sum)
	}
}
