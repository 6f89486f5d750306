package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/internal/testcluster"
)

const deploymentAndPod = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: busybox:1.36
        command: ["sleep", "3600"]
---
apiVersion: v1
kind: Pod
metadata:
  name: solo
  labels: {role: solo}
spec:
  containers:
  - name: c
    image: busybox
`

// networkingManifest is what an app's chart commonly carries besides its
// workloads: an IngressClass, an Ingress of that class and a NetworkPolicy.
const networkingManifest = `
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata:
  name: nginx
  annotations: {ingressclass.kubernetes.io/is-default-class: "true"}
spec:
  controller: k8s.io/ingress-nginx
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: web
spec:
  ingressClassName: nginx
  tls:
  - hosts: [web.example.com]
    secretName: web-tls
  rules:
  - host: web.example.com
    http:
      paths:
      - path: /
        pathType: Prefix
        backend:
          service:
            name: web
            port: {number: 80}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: web
spec:
  podSelector:
    matchLabels: {app: web}
  ingress:
  - from:
    - podSelector:
        matchLabels: {role: frontend}
    ports:
    - port: 80
`

func TestKubectl(t *testing.T) {
	c := testcluster.StartAPIOnly(t)

	t.Run("apply creates a Deployment and a Pod, and a second apply changes nothing", func(t *testing.T) {
		out := c.MustKubectl(t, deploymentAndPod, "apply", "-f", "-")
		if !strings.Contains(out, "deployment.apps/web created") || !strings.Contains(out, "pod/solo created") {
			t.Fatalf("apply: %s", out)
		}
		out = c.MustKubectl(t, deploymentAndPod, "apply", "-f", "-")
		if !strings.Contains(out, "deployment.apps/web unchanged") || !strings.Contains(out, "pod/solo unchanged") {
			t.Fatalf("second apply: %s", out)
		}
	})
	t.Run("apply of a changed manifest patches the object", func(t *testing.T) {
		out := c.MustKubectl(t, strings.Replace(deploymentAndPod, "replicas: 2", "replicas: 4", 1), "apply", "-f", "-")
		if !strings.Contains(out, "deployment.apps/web configured") {
			t.Fatalf("apply: %s", out)
		}
		if got := c.MustKubectl(t, "", "get", "deploy", "web", "-o", "jsonpath={.spec.replicas}"); got != "4" {
			t.Fatalf("replicas = %q", got)
		}
	})
	t.Run("apply rejects an unknown field under the default strict validation", func(t *testing.T) {
		bad := strings.Replace(deploymentAndPod, "replicas: 2", "replicas: 2\n  replicaz: 3", 1)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, err := c.Kubectl(ctx, bad, "apply", "-f", "-")
		if err == nil || !strings.Contains(out, "replicaz") {
			t.Fatalf("want a strict decoding error naming the field, got %v: %s", err, out)
		}
	})
	t.Run("get -o wide shows the pod columns", func(t *testing.T) {
		out := c.MustKubectl(t, "", "get", "pods", "-o", "wide")
		for _, col := range []string{"NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "NOMINATED NODE", "READINESS GATES", "solo", "Pending"} {
			if !strings.Contains(out, col) {
				t.Errorf("missing %q in:\n%s", col, out)
			}
		}
	})
	t.Run("get -o jsonpath reads fields", func(t *testing.T) {
		if got := c.MustKubectl(t, "", "get", "pod", "solo", "-o", "jsonpath={.spec.containers[0].image} {.spec.restartPolicy}"); got != "busybox Always" {
			t.Fatalf("got %q", got)
		}
	})
	t.Run("label --overwrite and label key- change labels", func(t *testing.T) {
		c.MustKubectl(t, "", "label", "pod", "solo", "tier=a")
		c.MustKubectl(t, "", "label", "--overwrite", "pod", "solo", "tier=b")
		if got := c.MustKubectl(t, "", "get", "pod", "solo", "-o", "jsonpath={.metadata.labels.tier}"); got != "b" {
			t.Fatalf("tier = %q", got)
		}
		c.MustKubectl(t, "", "label", "pod", "solo", "tier-")
		if got := c.MustKubectl(t, "", "get", "pod", "solo", "-o", "jsonpath={.metadata.labels}"); strings.Contains(got, "tier") {
			t.Fatalf("tier still there: %s", got)
		}
		if out := c.MustKubectl(t, "", "get", "pods", "-l", "role=solo", "-o", "name"); strings.TrimSpace(out) != "pod/solo" {
			t.Fatalf("label selector: %q", out)
		}
	})
	t.Run("taint, cordon and uncordon a node the test created", func(t *testing.T) {
		c.MustKubectl(t, `{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"}}`, "create", "-f", "-")
		c.MustKubectl(t, "", "taint", "nodes", "n1", "dedicated=db:NoSchedule")
		if got := c.MustKubectl(t, "", "get", "node", "n1", "-o", "jsonpath={.spec.taints[0].key}={.spec.taints[0].value}:{.spec.taints[0].effect}"); got != "dedicated=db:NoSchedule" {
			t.Fatalf("taint: %q", got)
		}
		c.MustKubectl(t, "", "taint", "nodes", "n1", "dedicated:NoSchedule-")
		if got := c.MustKubectl(t, "", "get", "node", "n1", "-o", "jsonpath={.spec.taints}"); got != "" {
			t.Fatalf("taint not removed: %q", got)
		}
		c.MustKubectl(t, "", "cordon", "n1")
		if got := c.MustKubectl(t, "", "get", "node", "n1", "-o", "jsonpath={.spec.unschedulable}"); got != "true" {
			t.Fatalf("cordon: %q", got)
		}
		if out := c.MustKubectl(t, "", "get", "node", "n1"); !strings.Contains(out, "SchedulingDisabled") {
			t.Fatalf("get node after cordon:\n%s", out)
		}
		c.MustKubectl(t, "", "uncordon", "n1")
		if got := c.MustKubectl(t, "", "get", "node", "n1", "-o", "jsonpath={.spec.unschedulable}"); got != "" && got != "false" {
			t.Fatalf("uncordon: %q", got)
		}
	})
	t.Run("scale changes the replicas through the scale subresource", func(t *testing.T) {
		c.MustKubectl(t, "", "scale", "deployment", "web", "--replicas=7")
		if got := c.MustKubectl(t, "", "get", "deploy", "web", "-o", "jsonpath={.spec.replicas}"); got != "7" {
			t.Fatalf("replicas = %q", got)
		}
	})
	t.Run("describe shows a pod's details", func(t *testing.T) {
		out := c.MustKubectl(t, "", "describe", "pod", "solo")
		for _, want := range []string{"Name:", "solo", "Namespace:", "default", "QoS Class:", "BestEffort", "Tolerations:", "node.kubernetes.io/not-ready:NoExecute op=Exists for 300s"} {
			if !strings.Contains(out, want) {
				t.Errorf("describe misses %q:\n%s", want, out)
			}
		}
	})
	t.Run("get all, api-resources and explain work", func(t *testing.T) {
		if out := c.MustKubectl(t, "", "get", "all"); !strings.Contains(out, "deployment.apps/web") || !strings.Contains(out, "pod/solo") {
			t.Fatalf("get all:\n%s", out)
		}
		if out := c.MustKubectl(t, "", "api-resources"); !strings.Contains(out, "deploy") || !strings.Contains(out, "priorityclasses") {
			t.Fatalf("api-resources:\n%s", out)
		}
		if out := c.MustKubectl(t, "", "explain", "pod.spec.containers.image"); !strings.Contains(out, "image") {
			t.Fatalf("explain:\n%s", out)
		}
	})
	t.Run("apply of an Ingress, its IngressClass and a NetworkPolicy stores them; get prints upstream's columns and explain describes them", func(t *testing.T) {
		out := c.MustKubectl(t, networkingManifest, "apply", "-f", "-")
		for _, want := range []string{"ingressclass.networking.k8s.io/nginx created", "ingress.networking.k8s.io/web created",
			"networkpolicy.networking.k8s.io/web created", "Warning: minik stores NetworkPolicies but does not enforce them"} {
			if !strings.Contains(out, want) {
				t.Errorf("apply misses %q:\n%s", want, out)
			}
		}
		// Each line with its runs of blanks made one space (ADDRESS is empty).
		var lines []string
		for _, l := range strings.Split(c.MustKubectl(t, "", "get", "ingress,networkpolicy,ingressclass"), "\n") {
			lines = append(lines, strings.Join(strings.Fields(l), " "))
		}
		got := strings.Join(lines, "\n")
		for _, want := range []string{
			"NAME CLASS HOSTS ADDRESS PORTS AGE\ningress.networking.k8s.io/web nginx web.example.com 80, 443 ",
			"NAME POD-SELECTOR AGE\nnetworkpolicy.networking.k8s.io/web app=web ",
			"NAME CONTROLLER PARAMETERS AGE\ningressclass.networking.k8s.io/nginx (default) k8s.io/ingress-nginx <none> "} {
			if !strings.Contains(got, want) {
				t.Errorf("get misses %q:\n%s", want, got)
			}
		}
		if got := c.MustKubectl(t, "", "get", "netpol", "web", "-o", "jsonpath={.spec.policyTypes} {.spec.ingress[0].ports[0].protocol}"); got != `["Ingress"] TCP` {
			t.Errorf("defaulted policyTypes and protocol: %q", got)
		}
		out = c.MustKubectl(t, "", "explain", "ingress.spec.rules")
		for _, want := range []string{"GROUP:      networking.k8s.io", "KIND:       Ingress", "VERSION:    v1",
			"FIELD: rules <[]IngressRule>", "host\t<string>", "http\t<HTTPIngressRuleValue>"} {
			if !strings.Contains(out, want) {
				t.Errorf("explain misses %q:\n%s", want, out)
			}
		}
		// The policy is "configured" again, as against kube-apiserver: its
		// ingress rules are an atomic list, which the server's defaulted
		// protocol makes differ from the manifest's.
		out = c.MustKubectl(t, networkingManifest, "apply", "-f", "-")
		if !strings.Contains(out, "ingressclass.networking.k8s.io/nginx unchanged") || !strings.Contains(out, "ingress.networking.k8s.io/web unchanged") {
			t.Errorf("second apply:\n%s", out)
		}
		// Taking the objects over by server-side apply needs
		// --force-conflicts for the same reason, as against kube-apiserver
		// (the same engine): the applied rules differ from the stored ones.
		if out := c.MustKubectl(t, networkingManifest, "apply", "--server-side", "--force-conflicts", "-f", "-"); strings.Count(out, "serverside-applied") != 3 {
			t.Errorf("server-side apply:\n%s", out)
		}
	})
	t.Run("delete removes the objects", func(t *testing.T) {
		c.MustKubectl(t, "", "delete", "deployment", "web")
		c.MustKubectl(t, "", "delete", "pod", "solo") // unscheduled: deleted at once
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, err := c.Kubectl(ctx, "", "get", "pod", "solo")
		if err == nil || !strings.Contains(out, "NotFound") {
			t.Fatalf("pod still there: %v %s", err, out)
		}
	})
}

func TestRestartKeepsEveryObject(t *testing.T) {
	c := testcluster.StartAPIOnly(t)
	c.MustKubectl(t, deploymentAndPod, "apply", "-f", "-")
	c.MustKubectl(t, `{"apiVersion":"v1","kind":"Node","metadata":{"name":"keep"}}`, "create", "-f", "-")
	c.MustKubectl(t, "", "create", "namespace", "team")
	c.MustKubectl(t, "", "create", "configmap", "cfg", "-n", "team", "--from-literal=a=b")
	before := c.MustKubectl(t, "", "get", "deploy,pods,nodes,ns,cm", "-A", "-o", "name")

	c.Restart()

	after := c.MustKubectl(t, "", "get", "deploy,pods,nodes,ns,cm", "-A", "-o", "name")
	if before != after {
		t.Fatalf("objects differ after restart:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	cs := c.Clientset()
	cm, err := cs.CoreV1().ConfigMaps("team").Get(context.Background(), "cfg", metav1.GetOptions{})
	if err != nil || cm.Data["a"] != "b" {
		t.Fatalf("configmap after restart: %v %v", cm, err)
	}
}
