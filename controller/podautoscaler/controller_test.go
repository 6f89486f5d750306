package podautoscaler

import (
	"context"
	"log/slog"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"

	"minik/controller/framework"
	"minik/controller/internal/synctest"
	"minik/internal/resourcemetrics"
)

// TestSyncRunsThePlanThroughTheSink drives the controller's sync over a
// cache filled by hand, canned scale and metrics reads, and a FakeSink:
// no apiserver.
func TestSyncRunsThePlanThroughTheSink(t *testing.T) {
	scale := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: autoscalingv1.ScaleSpec{Replicas: 2}, Status: autoscalingv1.ScaleStatus{Replicas: 2, Selector: "app=web"}}
	usage := func(cpu string) resourcemetrics.PodMetricsList {
		var l resourcemetrics.PodMetricsList
		for _, name := range []string{"a", "b"} {
			l.Items = append(l.Items, resourcemetrics.PodMetrics{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
				Timestamp: metav1.NewTime(t0), Window: metav1.Duration{Duration: 10 * time.Second},
				Containers: []resourcemetrics.ContainerMetrics{{Name: "c", Usage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}})
		}
		return l
	}
	const scalePath, metricsPath = "/apis/apps/v1/namespaces/default/deployments/web/scale", "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods"
	busy := synctest.Reads{scalePath: scale, metricsPath: usage("100m")}
	cases := []struct {
		name     string
		reads    synctest.Reads
		fail     ActionType // the sink refuses this action
		wantDone []string
		wantErr  string
	}{
		{name: "pods over their target: the target is rescaled, the event recorded, the status written",
			reads: busy, wantDone: []string{"Rescale default/web", "RecordEvent default/web SuccessfulRescale", "UpdateStatus default/web"}},
		{name: "a refused rescale does not end the sync: FailedRescale is recorded and the status says so",
			reads: busy, fail: Rescale, wantDone: []string{"RecordEvent default/web FailedRescale", "UpdateStatus default/web"}},
		{name: "a refused status write fails the sync",
			reads: busy, fail: UpdateStatus, wantDone: []string{"Rescale default/web", "RecordEvent default/web SuccessfulRescale"},
			wantErr: "UpdateStatus default/web: refused"},
		{name: "pods at their target: only the status is written",
			reads: synctest.Reads{scalePath: scale, metricsPath: usage("50m")}, wantDone: []string{"UpdateStatus default/web"}},
		{name: "a target whose scale cannot be read: reported, nothing rescaled",
			reads: synctest.Reads{}, wantDone: []string{"RecordEvent default/web FailedGetScale", "UpdateStatus default/web"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.reads.Client()
			inf := framework.NewInformers(c, slog.New(slog.DiscardHandler))
			pods := []*corev1.Pod{makePod("a", "100m").Obj(), makePod("b", "100m").Obj()}
			for _, p := range pods {
				p.Labels = map[string]string{"app": "web"}
			}
			inf.Pods.Replace(pods)
			hc := New(c, inf, nil, testingclock.NewFakeClock(t0), Config{}, slog.New(slog.DiscardHandler))
			hc.hpas.Replace([]*autoscalingv2.HorizontalPodAutoscaler{makeHPA(1, 10, 50)})
			sink := synctest.Refusing(func(a Action) bool { return a.Type == tc.fail })
			hc.sink = func(*autoscalingv2.HorizontalPodAutoscaler, string, *autoscalingv1.Scale) framework.Sink[Action] {
				return sink
			}
			res, err := hc.sync(context.Background(), "default/web")
			synctest.Check(t, err, tc.wantErr, sink, tc.wantDone)
			if err == nil && res.RequeueAfter != hc.cfg.SyncPeriod {
				t.Errorf("requeue after %v, want the sync period", res.RequeueAfter)
			}
		})
	}
}
