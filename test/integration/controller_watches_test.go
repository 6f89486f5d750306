package integration

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"minik/controller"
	"minik/internal/metrics/metricstest"
	"minik/internal/pki"
	"minik/internal/testcluster"
)

// openWatches reads the apiserver's apiserver_longrunning_requests and
// returns its open watches by resource ("pods", "deployments.apps").
func openWatches(t *testing.T, c *testcluster.Cluster) map[string]int {
	t.Helper()
	hc, err := rest.HTTPClientFor(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	_, fams := metricstest.Scrape(t, hc, c.RESTConfig().Host+"/metrics")
	out := map[string]int{}
	for _, m := range fams["apiserver_longrunning_requests"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["verb"] != "WATCH" || m.GetGauge().GetValue() == 0 {
			continue
		}
		name := labels["resource"]
		if labels["group"] != "" {
			name += "." + labels["group"]
		}
		out[name] += int(m.GetGauge().GetValue())
	}
	return out
}

// The controller manager holds one watch per resource, however many of
// its controllers read it (the shared informers, and the garbage
// collector's metadata-only informers for the other kinds). Before,
// Leases, ResourceQuotas, HorizontalPodAutoscalers and CRDs were each
// watched twice.
func TestControllerManagerWatchesEachResourceOnce(t *testing.T) {
	c := testcluster.StartAPIOnly(t)
	runInBackground(t, func(ctx context.Context) {
		cfg := controller.Config{Client: c.ClientAs(pki.ControllerUser), UseServiceAccountCredentials: true, Logger: testLogger(slog.LevelWarn)}
		if err := controller.Run(ctx, cfg); err != nil {
			t.Errorf("controller.Run: %v", err)
		}
	})
	// The garbage collector follows the kinds no shared informer holds
	// once discovery has answered: roles are one of them.
	eventually(t, 30*time.Second, "the controller watches roles and every shared kind", func() (bool, string) {
		n := openWatches(t, c)
		return n["roles.rbac.authorization.k8s.io"] > 0 && n["pods"] > 0 && n["horizontalpodautoscalers.autoscaling"] > 0, fmt.Sprint(n)
	})
	time.Sleep(2 * time.Second) // a second informer of a kind would have started by now
	n := openWatches(t, c)
	for _, r := range slices.Sorted(maps.Keys(n)) {
		if n[r] != 1 {
			t.Errorf("%s watched %d times, want once", r, n[r])
		}
	}
	t.Logf("open watches: %v", n)
}
