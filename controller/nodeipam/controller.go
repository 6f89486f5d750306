package nodeipam

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

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
	c     *client.Client
	nodes *informer.Informer[corev1.Node]
	rec   *record.Recorder
	log   *slog.Logger
	set   *CIDRSet
	queue *framework.Queue
}

// New registers the allocator on the node informer.
func New(c *client.Client, inf *framework.Informers, rec *record.Recorder, clusterCIDR string, maskSize int, log *slog.Logger) (*Controller, error) {
	set, err := NewCIDRSet(clusterCIDR, maskSize)
	if err != nil {
		return nil, err
	}
	ic := &Controller{c: c, nodes: inf.Nodes, rec: rec, log: log.With("controller", Name), set: set,
		queue: framework.NewQueue(framework.QueueConfig{Name: Name})}
	inf.Nodes.AddHandler(informer.Handler[corev1.Node]{
		OnAdd:    ic.observe,
		OnUpdate: func(_, n *corev1.Node) { ic.observe(n) },
		OnDelete: func(n *corev1.Node) {
			for _, cidr := range cidrsOf(n) {
				ic.set.Release(cidr)
			}
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
	}
}

// Run assigns CIDRs until ctx ends. It waits for the node cache so that
// CIDRs in use are known before any is handed out.
func (ic *Controller) Run(ctx context.Context, workers int) {
	framework.RunWorkers(ctx, ic.queue, 1, ic.sync, func(key string, err error) {
		ic.log.Warn("allocate failed", "node", key, "err", err)
	})
}

func (ic *Controller) sync(ctx context.Context, name string) (framework.Result, error) {
	n, ok := ic.nodes.Store().Get("", name)
	if !ok || len(cidrsOf(n)) > 0 {
		return framework.Result{}, nil
	}
	cidr, err := ic.set.Allocate()
	if err != nil {
		ic.rec.Eventf(n, corev1.EventTypeNormal, "CIDRNotAvailable", "Node %s status is now: CIDRNotAvailable", name)
		return framework.Result{}, err
	}
	patch, _ := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": n.UID},
		"spec":     map[string]any{"podCIDR": cidr, "podCIDRs": []string{cidr}},
	})
	_, err = ic.c.Nodes().Patch(ctx, "", name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		ic.set.Release(cidr)
		if apierrors.IsNotFound(err) {
			return framework.Result{}, nil
		}
		return framework.Result{}, fmt.Errorf("set podCIDR %s: %w", cidr, err)
	}
	ic.log.Info("assigned podCIDR", "node", name, "podCIDR", cidr)
	return framework.Result{}, nil
}
