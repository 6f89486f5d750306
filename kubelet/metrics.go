package kubelet

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik/kubelet/runtime"
	"minik/proto/cri"
)

// Metrics of the kubelet, with upstream's names and labels. They are
// package-wide, as upstream's: the kubelets of one process (`minik up`
// with several nodes) add up, each contributing its own counts to the
// gauges.
//
//	relist ──▶ kubelet_pleg_relist_duration_seconds
//	       ──▶ kubelet_running_pods, kubelet_running_containers{container_state}
//	watchEvents ──▶ kubelet_evented_pleg_connection_success_count, _error_count (subscriptions)
//	            ──▶ kubelet_evented_pleg_connection_latency_seconds (each event's age on arrival)
//	first Running status with every container started, less image pulls ──▶ kubelet_pod_start_sli_duration_seconds
var (
	podStartSLI = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "kubelet_pod_start_sli_duration_seconds",
		Help:    "Duration in seconds to start a pod, excluding time to pull images, measured from pod creation timestamp to when all its containers are reported as started",
		Buckets: []float64{0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600},
	})
	runningPods = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "kubelet_running_pods", Help: "Number of pods that have a running pod sandbox",
	})
	runningContainers = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kubelet_running_containers", Help: "Number of containers currently running",
	}, []string{"container_state"})
	relistDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "kubelet_pleg_relist_duration_seconds",
		Help:    "Duration in seconds for relisting pods in PLEG.",
		Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
	})
	// Upstream's Evented PLEG names (pkg/kubelet/metrics), "_count"
	// counters included.
	eventedConnErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kubelet_evented_pleg_connection_error_count",
		Help: "The number of errors encountered during the establishment of streaming connection with the CRI runtime.",
	})
	eventedConnSuccess = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kubelet_evented_pleg_connection_success_count",
		Help: "The number of times a streaming client was obtained to receive CRI Events.",
	})
	eventedLatency = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "kubelet_evented_pleg_connection_latency_seconds",
		Help:    "The latency of streaming connection with the CRI runtime, measured in seconds.",
		Buckets: prometheus.DefBuckets,
	})
)

// Collectors returns the kubelet's metrics, for the process's registry.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{podStartSLI, runningPods, runningContainers, relistDuration,
		eventedConnErrors, eventedConnSuccess, eventedLatency}
}

// containerStates are upstream's container_state values, by CRI state.
var containerStates = map[cri.ContainerState]string{
	cri.ContainerState_CONTAINER_CREATED: "created",
	cri.ContainerState_CONTAINER_RUNNING: "running",
	cri.ContainerState_CONTAINER_EXITED:  "exited",
	cri.ContainerState_CONTAINER_UNKNOWN: "unknown",
}

// runtimeCounts is one kubelet's share of the running gauges.
type runtimeCounts struct {
	pods       int
	containers map[string]int // by container_state
}

// countRuntime counts what one relist found: containers by state, and
// pods with a running container.
func countRuntime(cs []*cri.Container) runtimeCounts {
	c := runtimeCounts{containers: map[string]int{}}
	pods := map[types.UID]bool{}
	for _, ctr := range cs {
		c.containers[containerStates[ctr.State]]++
		if ctr.State == cri.ContainerState_CONTAINER_RUNNING {
			pods[types.UID(ctr.Labels[runtime.LabelPodUID])] = true
		}
	}
	c.pods = len(pods)
	return c
}

// publish moves the gauges from this kubelet's last counts to cur.
func (last *runtimeCounts) publish(cur runtimeCounts) {
	runningPods.Add(float64(cur.pods - last.pods))
	for _, state := range containerStates {
		if d := cur.containers[state] - last.containers[state]; d != 0 {
			runningContainers.WithLabelValues(state).Add(float64(d))
		}
	}
	*last = cur
}

// observePodStart records a pod's start once: the first status sent with
// the pod Running and every container started, less the time its images
// took to pull. w.mu is held.
func (w *podWorker) observePodStart(pod *corev1.Pod, status *corev1.PodStatus, now time.Time) {
	if w.startObserved || status.Phase != corev1.PodRunning || len(status.ContainerStatuses) == 0 {
		return
	}
	for _, cs := range status.ContainerStatuses {
		if cs.State.Running == nil {
			return
		}
	}
	w.startObserved = true
	if !pod.CreationTimestamp.IsZero() {
		podStartSLI.Observe((now.Sub(pod.CreationTimestamp.Time) - w.pulling).Seconds())
	}
}
