package ui

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"minik/client"
	"minik/internal/testcluster"
	"minik/ui/flow"
)

func TestLiveViewStreamsTheClusterAndExplainsAPendingPod(t *testing.T) {
	if testing.Short() {
		t.Skip("starts minik up (-short)")
	}
	cl := testcluster.StartAPIOnly(t)
	c := cl.Client()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := New(c, nil)
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	srv := httptest.NewTLSServer(s.Handler())
	defer srv.Close()

	// Without the session cookie nothing but /login answers; the login
	// link works once.
	hc := srv.Client()
	jar, _ := cookiejar.New(nil)
	hc.Jar = jar
	status := func(path string) int {
		resp, err := hc.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := status("/"); got != http.StatusUnauthorized {
		t.Fatalf("GET / without logging in: %d, want 401", got)
	}
	if got := status("/login?token=wrong"); got != http.StatusUnauthorized {
		t.Fatalf("a wrong token: %d, want 401", got)
	}
	token := s.LoginToken()
	if got := status("/login?token=" + token); got != http.StatusOK {
		t.Fatalf("the login link: %d, want 200 after the redirect to the page", got)
	}
	if got := status("/login?token=" + token); got != http.StatusUnauthorized {
		t.Fatalf("the login link used twice: %d, want 401", got)
	}

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{
		Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi"), corev1.ResourcePods: resource.MustParse("110")},
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi"), corev1.ResourcePods: resource.MustParse("110")},
		Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	if _, err := c.Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	resp, err := hc.Get(srv.URL + "/api/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("stream content type %q", ct)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "big"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "c", Image: "busybox", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}}}}}
	if _, err := c.Pods().Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A Service and a claim come through the same stream as slim views.
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}, Spec: corev1.ServiceSpec{
		Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
	if _, err := client.For[corev1.Service](c, client.Services).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "data"}, Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("16Mi")}}}}
	if _, err := c.PersistentVolumeClaims().Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The stream brings them and the pod, in the snapshot or in a batch.
	// The Service has its cluster IP; the claim is of the default class
	// (admission sets it) and waits for a pod.
	goodSvc := func(v *serviceView) bool {
		return v.Name == "web" && v.ClusterIP != "" && len(v.Ports) == 1 && v.Ports[0].TargetPort == "8080"
	}
	goodClaim := func(v *claimView) bool {
		return v.Name == "data" && v.Class == "local-path" && v.Phase == "Pending" && v.Request == "16Mi"
	}
	lines := bufio.NewScanner(resp.Body)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	deadline := time.AfterFunc(20*time.Second, func() { resp.Body.Close() })
	defer deadline.Stop()
	sawNode, sawPod, sawSvc, sawClaim := false, false, false, false
	for (!sawNode || !sawPod || !sawSvc || !sawClaim) && lines.Scan() {
		line := lines.Text()
		if !strings.HasPrefix(line, "data: ") {
			continue
		}
		var msg struct {
			Snapshot *struct {
				Pods     []podView     `json:"pods"`
				Nodes    []nodeView    `json:"nodes"`
				Services []serviceView `json:"services"`
				Claims   []claimView   `json:"claims"`
			} `json:"snapshot"`
			Batch []message `json:"batch"`
		}
		if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &msg); err != nil {
			t.Fatal(err)
		}
		if msg.Snapshot != nil {
			for _, n := range msg.Snapshot.Nodes {
				sawNode = sawNode || (n.Name == "n1" && n.Ready && n.Capacity["cpu"] == "1")
			}
			for _, p := range msg.Snapshot.Pods {
				sawPod = sawPod || p.Name == "big"
			}
			for _, v := range msg.Snapshot.Services {
				sawSvc = sawSvc || goodSvc(&v)
			}
			for _, v := range msg.Snapshot.Claims {
				sawClaim = sawClaim || goodClaim(&v)
			}
		}
		for _, m := range msg.Batch {
			sawNode = sawNode || (m.Node != nil && m.Node.Name == "n1")
			sawPod = sawPod || (m.Pod != nil && m.Pod.Name == "big" && m.Pod.Phase == "Pending")
			sawSvc = sawSvc || (m.Service != nil && goodSvc(m.Service))
			sawClaim = sawClaim || (m.Claim != nil && goodClaim(m.Claim))
		}
	}
	if !sawNode || !sawPod || !sawSvc || !sawClaim {
		t.Fatalf("the stream did not bring the node (%v), the pod (%v), the Service (%v) and the claim (%v)", sawNode, sawPod, sawSvc, sawClaim)
	}

	getJSON := func(path string, out any) {
		resp, err := hc.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d", path, resp.StatusCode)
		}
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatal(err)
		}
	}
	var e explainView
	getJSON("/api/explain?ns=default&name=big", &e)
	if len(e.Nodes) != 1 || e.Nodes[0].Feasible || !strings.Contains(e.Nodes[0].Verdicts["NodeResourcesFit"], "Insufficient cpu") {
		t.Errorf("explanation: %+v, want n1 rejected by NodeResourcesFit for cpu", e)
	}
	if !strings.Contains(e.Message, "0/1 nodes are available") {
		t.Errorf("message %q", e.Message)
	}
	var f flow.Flow
	getJSON("/api/flow?ns=default&name=big", &f)
	if f.Steps[flow.Created].At.IsZero() || f.Steps[flow.Persisted].At.IsZero() || !f.Steps[flow.Controller].Skipped || !f.Steps[flow.Bound].At.IsZero() {
		t.Errorf("flow of a pending pod created directly: %+v", f.Steps)
	}
}
