package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/controller"
	"minik/controller/podautoscaler"
	"minik/internal/pki"
	"minik/internal/resourcemetrics"
	"minik/internal/testcluster"
	"minik/kubelet"
	"minik/kubelet/runtime/fake"
)

// runServingHollowKubelet is runHollowKubelet with the kubelet's HTTPS
// endpoint (a serving certificate of the cluster's CA), so that the
// apiserver reaches it for /stats/summary as it reaches real kubelets.
func runServingHollowKubelet(t *testing.T, c *testcluster.Cluster, node string) {
	t.Helper()
	pkiDir := filepath.Join(c.DataDir, "pki")
	ca, err := pki.LoadCA(pkiDir)
	if err != nil {
		t.Fatal(err)
	}
	cert, key, err := ca.EnsureServing(t.TempDir(), "kubelet-"+node, []string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	rt := fake.New(fake.Config{Images: []string{"busybox"}})
	cfg := kubelet.Config{NodeName: node, Client: c.Client(), Runtime: rt, RootDir: filepath.Join(t.TempDir(), node),
		NodeIP: "127.0.0.1", LeaseRenewInterval: 500 * time.Millisecond, Logger: testLogger(slog.LevelError),
		ServingAddress: "127.0.0.1:0", TLSCertFile: cert, TLSKeyFile: key, ClientCAFile: filepath.Join(pkiDir, "ca.crt")}
	runInBackground(t, func(ctx context.Context) { _ = kubelet.Run(ctx, cfg) })
}

// TestResourceMetricsAndHPAOnHollowNodes serves metrics.k8s.io from two
// hollow kubelets, whose fake runtime reports a tenth of each container's
// cpu request and a quarter of its memory limit, and lets an HPA created
// by `kubectl autoscale` scale the Deployment on that usage.
func TestResourceMetricsAndHPAOnHollowNodes(t *testing.T) {
	c, cs, ctx := startWithController(t, controller.Config{
		HorizontalPodAutoscaler: podautoscaler.Config{SyncPeriod: 500 * time.Millisecond}})
	runSchedulerInProcess(t, c)
	nodes := []string{"hollow-m1", "hollow-m2"}
	for _, n := range nodes {
		runServingHollowKubelet(t, c, n)
	}
	d := makeDeployment("web", 2, "busybox")
	d.Spec.Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}}
	if _, err := cs.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "2 ready web pods", func() (bool, string) {
		l, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return false, err.Error()
		}
		ready := 0
		for _, p := range l.Items {
			if podReady(&p) {
				ready++
			}
		}
		return ready == 2, fmt.Sprint(ready)
	})

	t.Run("kubectl top pods shows each pod's usage as its hollow node reports it", func(t *testing.T) {
		eventually(t, 20*time.Second, "two web pods at 20m and 16Mi", func() (bool, string) {
			out, err := c.Kubectl(ctx, "", "top", "pods", "-l", "app=web", "--no-headers")
			rows := regexp.MustCompile(`(?m)^web-\S+\s+(19|20|21)m\s+16Mi\s*$`).FindAllString(out, -1)
			return err == nil && len(rows) == 2, out
		})
	})
	t.Run("kubectl top nodes lists both hollow nodes", func(t *testing.T) {
		out := c.MustKubectl(t, "", "top", "nodes")
		for _, n := range nodes {
			if !regexp.MustCompile(`(?m)^` + n + `\s+\d+m\s+\d+%\s+\d+Mi\s+\d+%`).MatchString(out) {
				t.Errorf("kubectl top nodes:\n%s\nwant %s", out, n)
			}
		}
	})
	t.Run("metrics.k8s.io answers get, list by label and namespace, and 404 as Kubernetes", func(t *testing.T) {
		var list resourcemetrics.PodMetricsList
		raw := c.MustKubectl(t, "", "get", "--raw", "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods?labelSelector=app%3Dweb")
		if err := json.Unmarshal([]byte(raw), &list); err != nil || list.Kind != "PodMetricsList" || len(list.Items) != 2 {
			t.Fatalf("pod metrics list %s (%v), want 2 items", raw, err)
		}
		m := list.Items[0]
		if m.Labels["app"] != "web" || len(m.Containers) != 1 || m.Containers[0].Usage.Cpu().IsZero() || m.Timestamp.IsZero() {
			t.Errorf("pod metrics %+v", m)
		}
		one := c.MustKubectl(t, "", "get", "--raw", "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/"+m.Name)
		if !strings.Contains(one, `"kind":"PodMetrics"`) || !strings.Contains(one, `"name":"`+m.Name+`"`) {
			t.Errorf("get %s: %s", m.Name, one)
		}
		if out := c.MustKubectl(t, "", "get", "--raw", "/apis/metrics.k8s.io/v1beta1/namespaces/kube-system/pods?labelSelector=app%3Dweb"); !strings.Contains(out, `"items":[]`) {
			t.Errorf("another namespace's list: %s, want no items", out)
		}
		if out, err := c.Kubectl(ctx, "", "top", "pod", "nope"); err == nil || !strings.Contains(out, `podmetrics.metrics.k8s.io "default/nope" not found`) {
			t.Errorf("kubectl top pod nope: %v %s, want metrics-server's NotFound", err, out)
		}
		if out := c.MustKubectl(t, "", "get", "pods.metrics.k8s.io", "-l", "app=web"); !regexp.MustCompile(`NAME\s+CPU\s+MEMORY\s+WINDOW\nweb-`).MatchString(out) {
			t.Errorf("kubectl get pods.metrics.k8s.io:\n%s", out)
		}
		if out := c.MustKubectl(t, "", "get", "--raw", "/apis/metrics.k8s.io/v1beta1/nodes/"+nodes[0]); !strings.Contains(out, `"kind":"NodeMetrics"`) {
			t.Errorf("node metrics: %s", out)
		}
	})
	t.Run("a user bound to view may read usage (system:aggregated-metrics-reader)", func(t *testing.T) {
		c.MustKubectl(t, "", "create", "rolebinding", "alice-view", "--clusterrole=view", "--user=alice")
		eventually(t, 10*time.Second, "alice's kubectl top pods", func() (bool, string) {
			out, err := c.Kubectl(ctx, "", "top", "pods", "--as", "alice")
			return err == nil && strings.Contains(out, "web-"), out
		})
		if out, err := c.Kubectl(ctx, "", "top", "pods", "-n", "kube-system", "--as", "alice"); err == nil || !strings.Contains(out, "Forbidden") {
			t.Errorf("alice's top in kube-system: %v %s, want Forbidden", err, out)
		}
	})
	t.Run("kubectl autoscale creates an HPA that scales up on 10% usage against a 5% target, shown by kubectl get hpa", func(t *testing.T) {
		c.MustKubectl(t, "", "autoscale", "deployment/web", "--cpu-percent=5", "--min=1", "--max=3")
		eventually(t, 30*time.Second, "deployment web at 3 replicas", func() (bool, string) {
			d, err := cs.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return *d.Spec.Replicas == 3, fmt.Sprint(*d.Spec.Replicas)
		})
		eventually(t, 10*time.Second, "kubectl get hpa with the current utilization", func() (bool, string) {
			out, _ := c.Kubectl(ctx, "", "get", "hpa")
			return regexp.MustCompile(`web\s+Deployment/web\s+cpu: \d+%/5%\s+1\s+3\s+[23]\s+`).MatchString(out), out
		})
		h, err := cs.AutoscalingV2().HorizontalPodAutoscalers("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		conds := map[string]string{}
		for _, cd := range h.Status.Conditions {
			conds[string(cd.Type)] = string(cd.Status) + "/" + cd.Reason
		}
		if conds["ScalingActive"] != "True/ValidMetricFound" || h.Status.LastScaleTime == nil {
			t.Errorf("status %+v, want ScalingActive with a valid metric and a last scale time", h.Status)
		}
		// The controller's events are written asynchronously, after the status.
		eventually(t, 15*time.Second, "kubectl describe hpa web with the rescale event and the conditions", func() (bool, string) {
			out, err := c.Kubectl(ctx, "", "describe", "hpa", "web")
			return err == nil && strings.Contains(out, "SuccessfulRescale") && strings.Contains(out, "ValidMetricFound"), out
		})
		v1, err := cs.AutoscalingV1().HorizontalPodAutoscalers("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil || v1.Spec.TargetCPUUtilizationPercentage == nil || *v1.Spec.TargetCPUUtilizationPercentage != 5 {
			t.Errorf("autoscaling/v1 view: %+v, %v", v1, err)
		}
	})
}
