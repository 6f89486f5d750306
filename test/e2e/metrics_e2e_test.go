package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestMetricsAndAutoscaling reads real containers' usage through
// metrics.k8s.io (`kubectl top`) and lets an HPA scale a Deployment whose
// pod burns CPU. The cluster's HPA sync period is 2s (startCluster).
func TestMetricsAndAutoscaling(t *testing.T) {
	e := startCluster(t)
	ctx := context.Background()
	kubectl := func(t *testing.T, args ...string) string {
		t.Helper()
		return e.c.MustKubectl(t, "", args...)
	}
	t.Cleanup(func() {
		_, _ = e.c.Kubectl(ctx, "", "delete", "hpa/web", "deployment/web", "--ignore-not-found", "--wait=false")
	})
	// One busy loop with a 20m request: far above a 50% target.
	e.c.MustKubectl(t, `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: busybox
        image: busybox
        imagePullPolicy: IfNotPresent
        command: [sh, -c, "while :; do :; done"]
        resources: {requests: {cpu: 20m}}
`, "apply", "-f", "-")
	waitFor(t, 60*time.Second, "a ready web pod with the cpu request", func() (bool, string) {
		l, err := e.cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return false, err.Error()
		}
		for _, p := range l.Items {
			if podReady(&p) && p.Spec.Containers[0].Resources.Requests.Cpu().MilliValue() == 20 {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d pods", len(l.Items))
	})

	nonZero := regexp.MustCompile(`^[1-9][0-9]*m$`)
	t.Run("kubectl top pods shows the busy container's cpu and memory", func(t *testing.T) {
		waitFor(t, 30*time.Second, "web's usage in kubectl top pods", func() (bool, string) {
			out, err := e.c.Kubectl(ctx, "", "top", "pods", "-l", "app=web", "--no-headers")
			if err != nil {
				return false, out
			}
			f := strings.Fields(out)
			// A busy loop uses most of a core (at least 100m); a shell's
			// working set is under a MiB.
			return len(f) == 3 && strings.HasPrefix(f[0], "web-") && nonZero.MatchString(f[1]) && len(f[1]) >= 4 &&
				regexp.MustCompile(`^\d+Mi$`).MatchString(f[2]), out
		})
		out := kubectl(t, "top", "pods", "-A", "--containers")
		if !regexp.MustCompile(`(?m)^default\s+web-\S+\s+busybox\s+\d+m\s+\d+Mi`).MatchString(out) {
			t.Errorf("kubectl top pods -A --containers:\n%s\nwant web's container busybox with its usage", out)
		}
	})
	t.Run("kubectl top nodes shows both nodes' cpu and memory", func(t *testing.T) {
		out := kubectl(t, "top", "nodes", "--no-headers")
		for _, n := range e.nodes {
			re := regexp.MustCompile(`(?m)^` + n + `\s+[1-9]\d*m\s+\d+%\s+[1-9]\d*Mi\s+\d+%`)
			if !re.MatchString(out) {
				t.Errorf("kubectl top nodes:\n%s\nwant node %s with non-zero cpu and memory", out, n)
			}
		}
	})
	t.Run("kubectl autoscale creates an HPA that scales the busy Deployment up to its max", func(t *testing.T) {
		kubectl(t, "autoscale", "deployment/web", "--cpu-percent=50", "--min=1", "--max=3")
		start := time.Now()
		waitFor(t, 40*time.Second, "deployment web scaled to 3", func() (bool, string) {
			d, err := e.cs.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return *d.Spec.Replicas == 3, fmt.Sprintf("replicas %d", *d.Spec.Replicas)
		})
		t.Logf("scaled to 3 in %v", time.Since(start).Round(time.Second))
		// The controller writes the HPA's status after the scale, and its
		// events asynchronously.
		hpa := regexp.MustCompile(`NAME\s+REFERENCE\s+TARGETS\s+MINPODS\s+MAXPODS\s+REPLICAS\s+AGE\nweb\s+Deployment/web\s+cpu: \d+%/50%\s+1\s+3\s+\d+`)
		waitFor(t, 15*time.Second, "kubectl get hpa with the current utilization", func() (bool, string) {
			out, err := e.c.Kubectl(ctx, "", "get", "hpa", "web")
			return err == nil && hpa.MatchString(out), out
		})
		waitFor(t, 15*time.Second, "a SuccessfulRescale event for the cpu utilization", func() (bool, string) {
			events, err := e.cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=web,reason=SuccessfulRescale"})
			if err != nil {
				return false, err.Error()
			}
			for _, ev := range events.Items {
				if ev.InvolvedObject.Kind == "HorizontalPodAutoscaler" && ev.Type == corev1.EventTypeNormal &&
					strings.HasSuffix(ev.Message, "reason: cpu resource utilization (percentage of request) above target") {
					return true, ""
				}
			}
			return false, fmt.Sprintf("%+v", events.Items)
		})
	})
}
