package nodeipam

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik/client"
	"minik/client/informer"
	"minik/client/record"
	"minik/controller/framework"
)

// Name is the controller's name.
const Name = "nodeipam"

// Controller assigns podCIDRs.
type Controller struct {
	nodes *informer.Informer[corev1.Node]
	log   *slog.Logger
	set   *CIDRSet
	queue *framework.Queue
	// sink performs the writes (apiSink; a FakeSink in tests).
	sink framework.Sink[Action]

	// assigned holds the nodes given a subnet that the node cache does not
	// show yet, by name (their UID). A node update seen meanwhile (the
	// kubelet's status) queues the node again, and a sync planned from
	// the stale cache would give it a second subnet, which the apiserver
	// refuses: "node updates may not change podCIDR".
	mu       sync.Mutex
	assigned map[string]types.UID
}

// New registers the allocator on the node informer.
func New(c *client.Client, inf *framework.Informers, rec *record.Recorder, clusterCIDR string, maskSize int, log *slog.Logger) (*Controller, error) {
	set, err := NewCIDRSet(clusterCIDR, maskSize)
	if err != nil {
		return nil, err
	}
	ic := &Controller{nodes: inf.Nodes, log: log.With("controller", Name), set: set,
		queue: framework.NewQueue(framework.QueueConfig{Name: Name}), assigned: map[string]types.UID{}}
	ic.sink = apiSink{c: c, rec: rec, set: set, log: ic.log}
	inf.Nodes.AddHandler(informer.Handler[corev1.Node]{
		OnAdd:    ic.observe,
		OnUpdate: func(_, n *corev1.Node) { ic.observe(n) },
		OnDelete: func(n *corev1.Node) {
			for _, cidr := range cidrsOf(n) {
				ic.set.Release(cidr)
			}
			ic.mu.Lock()
			delete(ic.assigned, n.Name)
			ic.mu.Unlock()
		},
	})
	return ic, nil
}

func cidrsOf(n *corev1.Node) []string {
	if len(n.Spec.PodCIDRs) > 0 {
		return n.Spec.PodCIDRs
	}
	if n.Spec.PodCIDR != "" {
		return []string{n.Spec.PodCIDR}
	}
	return nil
}

// observe occupies a node's CIDR at once (so that the allocator never
// hands it out), and queues nodes without one.
func (ic *Controller) observe(n *corev1.Node) {
	cidrs := cidrsOf(n)
	for _, cidr := range cidrs {
		ic.set.Occupy(cidr)
	}
	if len(cidrs) == 0 {
		ic.queue.Add(n.Name)
		return
	}
	ic.mu.Lock()
	delete(ic.assigned, n.Name)
	ic.mu.Unlock()
}

// Run assigns CIDRs until ctx ends. It waits for nothing itself: the
// manager starts it once every informer has synced, when the node
// handlers have occupied the subnets of every listed node, so none in
// use is handed out. One worker, whatever workers says: two syncs would
// plan the same Next subnet.
func (ic *Controller) Run(ctx context.Context, workers int) {
	framework.RunWorkers(ctx, ic.queue, 1, ic.sync, func(key string, err error) {
		ic.log.Warn("allocate failed", "node", key, "err", err)
	})
}

// ActionType says what an Action does.
type ActionType string

// The actions of a sync.
const (
	// AssignPodCIDR gives Node the subnet CIDR.
	AssignPodCIDR ActionType = "AssignPodCIDR"
	// ReportCIDRNotAvailable records that no subnet is left for Node.
	ReportCIDRNotAvailable ActionType = "ReportCIDRNotAvailable"
)

// Action is one action on a node.
type Action struct {
	Type ActionType
	Node *corev1.Node
	CIDR string
}

// String names the action, its node and subnet, as
// "AssignPodCIDR n1 10.244.0.0/24".
func (a Action) String() string {
	if a.CIDR == "" {
		return string(a.Type) + " " + a.Node.Name
	}
	return string(a.Type) + " " + a.Node.Name + " " + a.CIDR
}

// Output is what one node needs.
type Output = framework.Output[Action]

// Plan decides what node n, as cached, needs: next, the lowest free
// subnet ("" if none is left), unless it has a podCIDR already.
func Plan(n *corev1.Node, next string) Output {
	var out Output
	switch {
	case n == nil || len(cidrsOf(n)) > 0:
	case next == "":
		out.Actions = append(out.Actions, Action{Type: ReportCIDRNotAvailable, Node: n})
	default:
		out.Actions = append(out.Actions, Action{Type: AssignPodCIDR, Node: n, CIDR: next})
	}
	return out
}

func (ic *Controller) sync(ctx context.Context, name string) (framework.Result, error) {
	n, _ := ic.nodes.Store().Get("", name)
	ic.mu.Lock()
	waiting := n != nil && ic.assigned[name] == n.UID
	ic.mu.Unlock()
	if waiting {
		return framework.Result{}, nil // the cache will show its subnet
	}
	next, _ := ic.set.Next() // "" when full
	actions := Plan(n, next).Actions
	if err := framework.Execute(ctx, ic.sink, actions); err != nil {
		return framework.Result{}, err
	}
	for _, a := range actions {
		// Not for a node deleted meanwhile (the patch found none).
		if cur, _ := ic.nodes.Store().Get("", name); a.Type == AssignPodCIDR && cur != nil && cur.UID == a.Node.UID {
			ic.mu.Lock()
			ic.assigned[name] = a.Node.UID
			ic.mu.Unlock()
		}
	}
	return framework.Result{}, nil
}

// apiSink performs the actions through the apiserver, taking each
// assigned subnet in set first and giving it back if the patch fails.
type apiSink struct {
	c   *client.Client
	rec *record.Recorder
	set *CIDRSet
	log *slog.Logger
}

func (s apiSink) Do(ctx context.Context, a Action) error {
	n := a.Node
	if a.Type == ReportCIDRNotAvailable {
		s.rec.Eventf(n, corev1.EventTypeNormal, "CIDRNotAvailable", "Node %s status is now: CIDRNotAvailable", n.Name)
		return ErrFull // retried with backoff, as subnets may be released
	}
	if !s.set.Occupy(a.CIDR) {
		return fmt.Errorf("podCIDR %s was taken meanwhile", a.CIDR) // by a node seen since Next
	}
	patch, _ := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": n.UID},
		"spec":     map[string]any{"podCIDR": a.CIDR, "podCIDRs": []string{a.CIDR}},
	})
	_, err := s.c.Nodes().Patch(ctx, "", n.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		s.set.Release(a.CIDR)
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("set podCIDR %s: %w", a.CIDR, err)
	}
	s.log.Info("assigned podCIDR", "node", n.Name, "podCIDR", a.CIDR)
	return nil
}
