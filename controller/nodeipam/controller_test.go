package nodeipam

import (
	"context"
	"log/slog"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"minik/client"
	"minik/controller/framework"
	"minik/controller/internal/synctest"
)

// TestSyncRunsThePlanThroughTheSink drives the controller's sync over a
// node cache filled by hand and a FakeSink: no apiserver.
func TestSyncRunsThePlanThroughTheSink(t *testing.T) {
	cases := []struct {
		name     string
		cidr     string // the cluster CIDR
		nodes    []*corev1.Node
		refuse   ActionType
		wantDone []string
		wantErr  string
	}{
		{name: "a new node gets the lowest subnet no other node has",
			cidr: "10.244.0.0/16", nodes: []*corev1.Node{node("a", "10.244.0.0/24"), node("b")},
			wantDone: []string{"AssignPodCIDR b 10.244.1.0/24"}},
		{name: "a full cluster CIDR is reported on the node",
			cidr: "10.244.0.0/24", nodes: []*corev1.Node{node("a", "10.244.0.0/24"), node("b")},
			wantDone: []string{"ReportCIDRNotAvailable b"}},
		{name: "a refused assignment fails the sync",
			cidr: "10.244.0.0/16", nodes: []*corev1.Node{node("b")}, refuse: AssignPodCIDR,
			wantErr: "AssignPodCIDR b 10.244.0.0/24: refused"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inf := framework.NewInformers(&client.Client{}, slog.New(slog.DiscardHandler))
			ic, err := New(&client.Client{}, inf, nil, tc.cidr, 24, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			inf.Nodes.Replace(tc.nodes)
			for _, n := range tc.nodes {
				ic.observe(n) // as the node handler does, once the informer runs
			}
			sink := synctest.Refusing(func(a Action) bool { return a.Type == tc.refuse })
			ic.sink = sink
			_, err = ic.sync(context.Background(), "b")
			synctest.Check(t, err, tc.wantErr, sink, tc.wantDone)
		})
	}
}

// TestNoSecondSubnetFromAStaleCache: a node queued again before the cache
// shows the subnet it was given (the kubelet's status update) gets no
// second one, which the apiserver would refuse; a node recreated under
// the same name gets one again.
func TestNoSecondSubnetFromAStaleCache(t *testing.T) {
	inf := framework.NewInformers(&client.Client{}, slog.New(slog.DiscardHandler))
	ic, err := New(&client.Client{}, inf, nil, "10.244.0.0/16", 24, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	sink := synctest.Refusing(func(Action) bool { return false })
	ic.sink = sink
	sync := func() {
		t.Helper()
		if _, err := ic.sync(context.Background(), "b"); err != nil {
			t.Fatal(err)
		}
	}
	inf.Nodes.Replace([]*corev1.Node{node("b")})
	sync()
	sync() // the cache still shows b without a subnet
	synctest.Check(t, nil, "", sink, []string{"AssignPodCIDR b 10.244.0.0/24"})

	assigned := node("b", "10.244.0.0/24")
	inf.Nodes.Replace([]*corev1.Node{assigned})
	ic.observe(assigned)
	sync()
	synctest.Check(t, nil, "", sink, []string{"AssignPodCIDR b 10.244.0.0/24"})

	recreated := node("b")
	recreated.UID = "uid-b-2"
	inf.Nodes.Replace([]*corev1.Node{recreated})
	ic.observe(recreated)
	sync()
	synctest.Check(t, nil, "", sink, []string{"AssignPodCIDR b 10.244.0.0/24", "AssignPodCIDR b 10.244.1.0/24"}) // the first is still held: no delete was seen
}
