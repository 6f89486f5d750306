package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"

	"minik/internal/hostip"
)

// TestServices runs the whole Service path on two real nodes: the
// EndpointSlice controller, every node's proxy (nftables) and the cluster
// DNS, with busybox's wget and nslookup in pods; then an admission
// webhook the apiserver reaches through a Service.
func TestServices(t *testing.T) {
	e := startCluster(t)
	ctx := context.Background()
	replicas := int32(2)
	grace := int64(1)
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				TerminationGracePeriodSeconds: &grace,
				Containers: []corev1.Container{{Name: "httpd", Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent,
					Command: []string{"sh", "-c", "hostname > /tmp/index.html; touch /tmp/ready; exec httpd -f -p 8080 -h /tmp"},
					Ports:   []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
					ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"test", "-f", "/tmp/ready"}}},
						// A loaded CI host (compose and integration run
						// alongside) can take over a second to exec: the
						// default 1s timeout would flap the healthy backend.
						PeriodSeconds: 1, FailureThreshold: 1, TimeoutSeconds: 10}}},
				// One backend per node, so the traffic crosses nodes.
				Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
					{LabelSelector: &metav1.LabelSelector{MatchLabels: labels}, TopologyKey: "kubernetes.io/hostname"}}}},
			}}}}
	if _, err := e.cs.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.cs.AppsV1().Deployments("default").Delete(context.Background(), "web", metav1.DeleteOptions{})
		waitFor(t, 60*time.Second, "web's pods gone", func() (bool, string) {
			pods, err := e.cs.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: "app=web"})
			return err == nil && len(pods.Items) == 0, fmt.Sprint(err)
		})
	})
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: corev1.ServiceSpec{
		Type: corev1.ServiceTypeNodePort, Selector: labels,
		Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}}}
	svc, err := e.cs.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	headless := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web-all", Namespace: "default"}, Spec: corev1.ServiceSpec{
		ClusterIP: corev1.ClusterIPNone, Selector: labels, Ports: []corev1.ServicePort{{Port: 8080}}}}
	if _, err := e.cs.CoreV1().Services("default").Create(ctx, headless, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	client := e.create(t, makePod("client", e.nodes[0]).Obj())
	e.waitPod(t, client.Name, 60*time.Second, "running", running)
	backends := e.waitReadyEndpoints(t, "web", 2)

	fetch := func(url string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		// busybox's timeout, not wget -T: Debian's busybox 1.35 wget
		// crashes with -T.
		out, err := e.c.Kubectl(ctx, "", "exec", "client", "--", "timeout", "5", "wget", "-qO-", url)
		return strings.TrimSpace(out), err
	}
	for _, name := range []string{"web", "web.default.svc.cluster.local"} {
		seen := map[string]bool{}
		waitFor(t, 60*time.Second, "both backends behind http://"+name, func() (bool, string) {
			out, err := fetch("http://" + name)
			if err == nil {
				seen[out] = true
			}
			return len(seen) == 2, fmt.Sprintf("seen %v, last %q %v", seen, out, err)
		})
	}

	// NodePort from the host, on the node's address.
	hostIP := hostip.PrimaryIPv4()
	url := fmt.Sprintf("http://%s/", net.JoinHostPort(hostIP, fmt.Sprint(svc.Spec.Ports[0].NodePort)))
	waitFor(t, 30*time.Second, "the NodePort "+url, func() (bool, string) {
		resp, err := (&http.Client{Timeout: 3 * time.Second}).Get(url)
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == 200, resp.Status
	})

	// kubectl port-forward svc/NAME: kubectl picks a ready pod of the
	// Service and forwards to its target port.
	local := portForward(t, e.c.Kubeconfig, "true", "svc/web", "80")
	waitFor(t, 30*time.Second, "http://"+local+" through kubectl port-forward svc/web", func() (bool, string) {
		resp, err := (&http.Client{Timeout: 3 * time.Second}).Get("http://" + local + "/")
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == 200 && strings.HasPrefix(strings.TrimSpace(string(body)), "web-"), resp.Status + " " + string(body)
	})

	// The headless Service answers with every ready pod.
	waitFor(t, 30*time.Second, "nslookup web-all", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		out, _ := e.c.Kubectl(ctx, "", "exec", "client", "--", "nslookup", "web-all.default.svc.cluster.local")
		for _, ip := range backends {
			if !strings.Contains(out, ip) {
				return false, out
			}
		}
		return true, ""
	})

	// A pod that fails readiness leaves the endpoints, and comes back.
	pods, err := e.cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil || len(pods.Items) != 2 {
		t.Fatalf("web pods: %v %d", err, len(pods.Items))
	}
	sick := pods.Items[0].Name
	e.c.MustKubectl(t, "", "exec", sick, "--", "rm", "/tmp/ready")
	e.waitReadyEndpoints(t, "web", 1)
	// The proxy rewrites its rules after the slice changed.
	sickTarget := "dnat to " + pods.Items[0].Status.PodIP + ":8080"
	waitFor(t, 30*time.Second, "the proxy's rules without "+sick, func() (bool, string) {
		out, err := exec.Command("nft", "list", "table", "ip", "minik-proxy").CombinedOutput()
		return err == nil && !strings.Contains(string(out), sickTarget), string(out)
	})
	for range 5 {
		if out, err := fetch("http://web"); err != nil || out == sick {
			t.Errorf("with %s not ready: %q %v, want the other backend", sick, out, err)
		}
	}
	e.c.MustKubectl(t, "", "exec", sick, "--", "touch", "/tmp/ready")
	e.waitReadyEndpoints(t, "web", 2)

	// No endpoints: refused at once, never a hang; then back.
	scale := func(n int32) {
		// The controller writes the Deployment's status meanwhile: a
		// conflict means read again, as a client-go user retries.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			s, err := e.cs.AppsV1().Deployments("default").GetScale(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			s.Spec.Replicas = n
			_, err = e.cs.AppsV1().Deployments("default").UpdateScale(ctx, "web", s, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	scale(0)
	e.waitReadyEndpoints(t, "web", 0)
	waitFor(t, 30*time.Second, "a refused connection with no endpoints", func() (bool, string) {
		start := time.Now()
		_, err := fetch("http://web")
		return err != nil && time.Since(start) < 2500*time.Millisecond, fmt.Sprintf("%v after %v", err, time.Since(start))
	})
	scale(2)
	e.waitReadyEndpoints(t, "web", 2)
	waitFor(t, 60*time.Second, "web answers again", func() (bool, string) {
		out, err := fetch("http://web")
		return err == nil, fmt.Sprintf("%q %v", out, err)
	})

	// Deleting the Service removes its rules.
	if err := e.cs.CoreV1().Services("default").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the Service's rules gone", func() (bool, string) {
		out, err := exec.Command("nft", "list", "table", "ip", "minik-proxy").CombinedOutput()
		return err == nil && !strings.Contains(string(out), svc.Spec.ClusterIP), string(out)
	})
	_ = e.cs.CoreV1().Services("default").Delete(ctx, "web-all", metav1.DeleteOptions{})

	testWebhookBehindService(t, e)
}

// waitReadyEndpoints waits for the Service's slices to hold n ready
// endpoints and returns their addresses.
func (e *env) waitReadyEndpoints(t *testing.T, service string, n int) []string {
	t.Helper()
	var ready []string
	waitFor(t, 60*time.Second, fmt.Sprintf("%d ready endpoints of %s", n, service), func() (bool, string) {
		slices, err := e.cs.DiscoveryV1().EndpointSlices("default").List(context.Background(),
			metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + service})
		if err != nil {
			return false, err.Error()
		}
		ready = nil
		for _, s := range slices.Items {
			for _, ep := range s.Endpoints {
				if ep.Conditions.Ready != nil && *ep.Conditions.Ready {
					ready = append(ready, ep.Addresses...)
				}
			}
		}
		sort.Strings(ready)
		return len(ready) == n, fmt.Sprint(ready)
	})
	return ready
}
