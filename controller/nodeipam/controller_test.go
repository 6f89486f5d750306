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
