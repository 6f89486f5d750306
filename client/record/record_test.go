package record

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/client"
	"minik/client/kubeconfig"
	"minik/internal/testcluster"
)

func newClient(t *testing.T, c *testcluster.Cluster) *client.Client {
	t.Helper()
	kc, err := kubeconfig.Load(c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.NewFromKubeconfig(kc)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

func TestRecorderAggregatesRepeatsIntoOneEvent(t *testing.T) {
	if testing.Short() {
		t.Skip("starts minik up; skipped with -short")
	}
	c := testcluster.StartAPIOnly(t)
	cl := newClient(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "u1"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "team", UID: "u2"}}
	r := NewRecorder(cl, "test-component", "host-a")
	r.Eventf(node, corev1.EventTypeNormal, "Starting", "starting %s", "kubelet")
	r.Eventf(node, corev1.EventTypeNormal, "Starting", "starting %s", "kubelet")
	r.Eventf(node, corev1.EventTypeNormal, "Starting", "starting %s", "kubelet")
	r.Eventf(pod, corev1.EventTypeWarning, "Failed", "boom")
	r.For("second-component").Eventf(node, corev1.EventTypeNormal, "Other", "from the second")
	go r.Run(ctx) // sends the second recorder's events too

	var events []corev1.Event
	var other *corev1.Event
	for ctx.Err() == nil {
		list, err := cl.Events().List(ctx, "default", metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		events, other = nil, nil
		for i, ev := range list.Items {
			if ev.Reason == "Other" {
				other = &list.Items[i]
			} else {
				events = append(events, ev)
			}
		}
		if len(events) == 1 && events[0].Count == 3 && other != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	cases := []struct {
		name string
		ok   bool
	}{
		{"three repeats about a cluster-scoped node become one event in default with count 3", len(events) == 1 && events[0].Count == 3},
		{"the event names its object, source and reporting controller", len(events) == 1 && events[0].InvolvedObject.Kind == "Node" &&
			events[0].InvolvedObject.Name == "n1" && events[0].Source.Component == "test-component" && events[0].ReportingController == "test-component"},
		{"the message is formatted", len(events) == 1 && events[0].Message == "starting kubelet"},
		{"a recorder made by For reports its own component, from the same instance, sent by the first's Run",
			other != nil && other.Source.Component == "second-component" && other.ReportingController == "second-component" && other.Source.Host == "host-a"},
	}
	for _, tc := range cases {
		if !tc.ok {
			t.Errorf("%s: got %+v", tc.name, events)
		}
	}
	// The pod's namespace does not exist, so its event is dropped without
	// blocking the node's.
}
