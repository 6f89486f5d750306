package e2e

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/ui"
)

// TestLiveViewInABrowser opens the live view in Debian's chromium,
// headless, on the two-node cluster: a Deployment's pods appear as cards
// in their nodes' columns, following a new pod lights its ten steps in
// order, an unschedulable pod shows the filter table with the reason, a
// Service lists the Deployment's pods as ready endpoints on their nodes
// and a pod that stops being Ready as not ready, and a claim of the default class is Bound to a volume on the node of
// the pod that uses it. Screenshots are kept (their paths are logged).
func TestLiveViewInABrowser(t *testing.T) {
	e := startCluster(t)
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("the live view's browser test needs Debian's chromium (deploy/deps.sh installs it)")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	view := ui.New(e.c.Client(), nil)
	done := make(chan error, 1)
	go func() { done <- view.Run(ctx) }()
	defer func() { cancel(); <-done }()
	srv := httptest.NewTLSServer(view.Handler())
	defer srv.Close()

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox,
		chromedp.Flag("ignore-certificate-errors", true), chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1400, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	if _, err := chromedp.Run(bctx, chromedp.Navigate(srv.URL+"/login?token="+view.LoginToken())); err != nil {
		t.Fatal(err)
	}
	shots, err := os.MkdirTemp("", "minik-ui-screenshots-")
	if err != nil {
		t.Fatal(err)
	}
	shot := func(name string) {
		png, err := chromedp.Run(bctx, chromedp.FullScreenshot(90))
		if err != nil {
			t.Errorf("screenshot %s: %v", name, err)
			return
		}
		path := filepath.Join(shots, name+".jpg") // quality below 100: JPEG
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Error(err)
		}
		t.Logf("screenshot: %s", path)
	}
	defer func() {
		if t.Failed() {
			shot("failure")
		}
	}()
	poll := func(what, js string, timeout time.Duration) {
		t.Helper()
		if _, err := chromedp.Run(bctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(timeout))); err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
	}
	eval := func(js string) string {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return v
	}
	poll("the stream", `document.getElementById("status").textContent === "live"`, 20*time.Second)
	for _, n := range e.nodes {
		poll("the column of "+n, `!!document.querySelector('.column[data-node="`+n+`"]')`, 20*time.Second)
	}

	// Follow the next new pod, then create a Deployment with kubectl.
	if _, err := chromedp.Run(bctx, chromedp.Click(`nav button[data-tab="flow"]`)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(bctx, chromedp.Click(`#follow-next`)); err != nil {
		t.Fatal(err)
	}
	e.c.MustKubectl(t, `apiVersion: apps/v1
kind: Deployment
metadata: {name: watch-it, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: watch-it}}
  template:
    metadata: {labels: {app: watch-it}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - {name: main, image: busybox, imagePullPolicy: IfNotPresent, command: [sleep, "3600"]}
`, "apply", "-f", "-")
	defer e.c.MustKubectl(t, "", "delete", "deployment", "watch-it", "--wait=false")

	// Every step lit, numbered 1 to 10, at times in order.
	poll("every step of the followed pod", `document.querySelectorAll("#steps .step.lit").length === 10`, 60*time.Second)
	order := eval(`[...document.querySelectorAll("#steps .step")].map(s => s.dataset.step + "@" + s.dataset.at).join(" ")`)
	var last int64
	for i, s := range strings.Fields(order) {
		n, at, _ := strings.Cut(s, "@")
		ms, err := strconv.ParseInt(at, 10, 64)
		if err != nil || n != strconv.Itoa(i+1) || ms < last {
			t.Errorf("steps %q: step %d out of order", order, i+1)
		}
		last = ms
	}
	followed := eval(`document.getElementById("flow-pod").value`)
	if !strings.HasPrefix(followed, "default/watch-it-") {
		t.Errorf("followed %q, want a pod of the Deployment", followed)
	}
	shot("flow")

	// The cards are in the columns of the nodes the pods run on.
	waitFor(t, 60*time.Second, "both pods running", func() (bool, string) {
		pods, err := e.cs.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: "app=watch-it"})
		if err != nil || len(pods.Items) != 2 {
			return false, "pods not listed yet"
		}
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodRunning {
				return false, p.Name + " " + string(p.Status.Phase)
			}
		}
		for _, p := range pods.Items {
			poll("the card of "+p.Name+" in "+p.Spec.NodeName, `!!document.querySelector('.column[data-node="`+p.Spec.NodeName+`"] .card.Running[data-pod="default/`+p.Name+`"]')`, 20*time.Second)
		}
		return true, ""
	})
	if _, err := chromedp.Run(bctx, chromedp.Click(`nav button[data-tab="cluster"]`)); err != nil {
		t.Fatal(err)
	}
	shot("cluster")

	// An unschedulable pod: the filter table says why, node by node.
	e.c.MustKubectl(t, `apiVersion: v1
kind: Pod
metadata: {name: too-big, namespace: default}
spec:
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: [sleep, "3600"]
    resources: {requests: {cpu: "1000"}}
`, "apply", "-f", "-")
	defer e.c.MustKubectl(t, "", "delete", "pod", "too-big", "--wait=false")
	if _, err := chromedp.Run(bctx, chromedp.Click(`nav button[data-tab="scheduling"]`)); err != nil {
		t.Fatal(err)
	}
	poll("too-big in the pending list", `!!document.querySelector('#pending-list a[data-pod="default/too-big"]')`, 20*time.Second)
	if _, err := chromedp.Run(bctx, chromedp.Click(`#pending-list a[data-pod="default/too-big"]`)); err != nil {
		t.Fatal(err)
	}
	for _, n := range e.nodes {
		poll("the reason of "+n, `(document.querySelector('#filter-table tr[data-node="`+n+`"] td.fail[data-plugin="NodeResourcesFit"]')?.textContent || "").includes("Insufficient cpu")`, 20*time.Second)
	}
	shot("scheduling")

	// A Service selecting the Deployment: the Services panel lists its
	// ready endpoints, each the pod on its node; a click follows the pod.
	e.c.MustKubectl(t, `apiVersion: v1
kind: Service
metadata: {name: watch-it, namespace: default}
spec:
  selector: {app: watch-it}
  ports: [{name: http, port: 80, targetPort: 8080}]
`, "apply", "-f", "-")
	defer e.c.MustKubectl(t, "", "delete", "service", "watch-it", "--wait=false")
	if _, err := chromedp.Run(bctx, chromedp.Click(`nav button[data-tab="services"]`)); err != nil {
		t.Fatal(err)
	}
	pods, err := e.cs.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: "app=watch-it"})
	if err != nil || len(pods.Items) != 2 {
		t.Fatalf("the Deployment's pods: %v %v", pods, err)
	}
	const svc = `#svc-list .svc[data-svc="default/watch-it"]`
	poll("the Service's ports", `(document.querySelector('`+svc+` .svc-head')?.textContent || "").includes("80→8080/TCP")`, 20*time.Second)
	for _, p := range pods.Items {
		poll("the endpoint of "+p.Name+" ready on "+p.Spec.NodeName,
			`document.querySelector('`+svc+` tr.ep.ready[data-pod="default/`+p.Name+`"] td.node')?.textContent === "`+p.Spec.NodeName+`"`, 30*time.Second)
	}
	if got := eval(`document.querySelector('` + svc + ` .meta').textContent`); !strings.HasPrefix(got, "2 of 2 endpoints ready") {
		t.Errorf("the Service's endpoint count: %q", got)
	}
	shot("services")
	// A pod of the Service that stops being Ready drops out: its
	// endpoint stays, not ready, and gets no new traffic.
	e.c.MustKubectl(t, `apiVersion: v1
kind: Pod
metadata: {name: watch-it-flaky, namespace: default, labels: {app: watch-it}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: [sh, -c, "touch /tmp/ready; sleep 15; rm /tmp/ready; exec sleep 3600"]
    readinessProbe: {exec: {command: [test, -f, /tmp/ready]}, periodSeconds: 1, failureThreshold: 1}
`, "apply", "-f", "-")
	defer e.c.MustKubectl(t, "", "delete", "pod", "watch-it-flaky", "--wait=false")
	const flaky = svc + ` tr.ep[data-pod="default/watch-it-flaky"]`
	poll("watch-it-flaky's endpoint ready", `!!document.querySelector('`+flaky+`.ready')`, 30*time.Second)
	poll("watch-it-flaky's endpoint not ready once its probe fails", `!!document.querySelector('`+flaky+`.notready')`, 40*time.Second)
	if got := eval(`document.querySelector('` + svc + ` .meta').textContent`); !strings.HasPrefix(got, "2 of 3 endpoints ready") {
		t.Errorf("the Service's endpoint count with a pod not Ready: %q", got)
	}
	shot("services-not-ready")
	first := pods.Items[0].Name
	if _, err := chromedp.Run(bctx, chromedp.Click(svc+` a.podlink[data-pod="default/`+first+`"]`)); err != nil {
		t.Fatal(err)
	}
	poll("the Flow panel following "+first, `document.getElementById("flow").classList.contains("active") && document.getElementById("flow-pod").value === "default/`+first+`"`, 10*time.Second)

	// A claim of the default class (local-path, WaitForFirstConsumer) and
	// a pod using it: the claim waits, then is Bound to a volume on the
	// pod's node, and the pod is listed as its user and marked on its card.
	if _, err := chromedp.Run(bctx, chromedp.Click(`nav button[data-tab="volumes"]`)); err != nil {
		t.Fatal(err)
	}
	poll("the default class", `(document.querySelector('#class-list .sc[data-class="local-path"]')?.textContent || "").includes("(default)") && document.querySelector('#class-list .sc[data-class="local-path"]').textContent.includes("WaitForFirstConsumer")`, 20*time.Second)
	e.c.MustKubectl(t, `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: watch-data, namespace: default}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 16Mi}}
`, "apply", "-f", "-")
	defer e.c.MustKubectl(t, "", "delete", "pvc", "watch-data", "--wait=false")
	const claim = `#claim-table tr.claim[data-claim="default/watch-data"]`
	poll("the claim waiting for its first consumer", `!!document.querySelector('`+claim+`.Pending')`, 20*time.Second)
	e.c.MustKubectl(t, `apiVersion: v1
kind: Pod
metadata: {name: watch-data, namespace: default}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: main, image: busybox, imagePullPolicy: IfNotPresent, command: [sleep, "3600"], volumeMounts: [{name: data, mountPath: /data}]}
  volumes: [{name: data, persistentVolumeClaim: {claimName: watch-data}}]
`, "apply", "-f", "-")
	defer e.c.MustKubectl(t, "", "delete", "pod", "watch-data", "--wait=false")
	var node string
	waitFor(t, 60*time.Second, "the claim's pod running", func() (bool, string) {
		p, err := e.cs.CoreV1().Pods("default").Get(context.Background(), "watch-data", metav1.GetOptions{})
		if err != nil || p.Status.Phase != corev1.PodRunning {
			return false, fmt.Sprint(err, p.Status.Phase)
		}
		node = p.Spec.NodeName
		return true, ""
	})
	text := func(cell string) string {
		return `(document.querySelector('` + claim + ` td.` + cell + `')?.textContent || "")`
	}
	poll("the claim Bound to a volume on "+node, `!!document.querySelector('`+claim+`.Bound') && `+text("vphase")+` === "Bound" && `+
		text("volume")+` !== "" && `+text("vnode")+` === "`+node+`" && `+text("selected")+` === "`+node+`"`, 30*time.Second)
	poll("the pod using the claim", `!!document.querySelector('`+claim+` td.users a.podlink[data-pod="default/watch-data"]')`, 20*time.Second)
	poll("the claim marker on the pod's card", `!!document.querySelector('.column[data-node="`+node+`"] .card[data-pod="default/watch-data"] .pvc')`, 20*time.Second)
	shot("volumes")
	if _, err := chromedp.Run(bctx, chromedp.Click(`nav button[data-tab="cluster"]`)); err != nil {
		t.Fatal(err)
	}
	shot("cluster-claim")
}
