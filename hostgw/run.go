package hostgw

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"

	"minik/client"
	"minik/client/informer"
)

// ResyncPeriod is how often the routes are checked without a Node change
// (someone may have removed one).
const ResyncPeriod = 30 * time.Second

// Sync makes the routes tagged with Protocol those Desired(nodes, self)
// names; it returns what it changed, and every error met (it goes on past
// one route's failure).
func Sync(ctx context.Context, routes Routes, nodes []*corev1.Node, self string, log *slog.Logger) error {
	installed, err := routes.List(ctx)
	if err != nil {
		return err
	}
	add, del := Diff(Desired(nodes, self), installed)
	var errs []error
	for _, r := range del {
		if err := routes.Delete(ctx, r); err != nil {
			errs = append(errs, err)
			continue
		}
		log.Info("removed the route of a node that is gone", "dst", r.Dst, "via", r.Via)
	}
	for _, r := range add {
		if err := routes.Replace(ctx, r); err != nil {
			errs = append(errs, fmt.Errorf("route to node %s's pods: %w", r.Node, err))
			continue
		}
		log.Info("route to a node's pods", "node", r.Node, "dst", r.Dst, "via", r.Via)
	}
	return errors.Join(errs...)
}

// Run keeps the routes of the node nodeName until ctx ends: it watches
// every Node through c (an identity allowed to list and watch Nodes, such
// as system:kube-proxy; a kubelet's may read only its own Node) and syncs
// on each change and every ResyncPeriod.
func Run(ctx context.Context, c *client.Client, nodeName string) error {
	return RunWith(ctx, c, nodeName, IPRoute{}, slog.Default())
}

// RunWith is Run with a given routing table and logger.
func RunWith(ctx context.Context, c *client.Client, nodeName string, routes Routes, log *slog.Logger) error {
	log = log.With("component", "hostgw", "node", nodeName)
	nodes := informer.New(c.Nodes(), informer.Config{Logger: log})
	kick := make(chan struct{}, 1)
	poke := func() {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	nodes.AddHandler(informer.Handler[corev1.Node]{
		OnAdd:    func(*corev1.Node) { poke() },
		OnUpdate: func(*corev1.Node, *corev1.Node) { poke() },
		OnDelete: func(*corev1.Node) { poke() },
	})
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- nodes.Run(ctx) }()
	select {
	case <-nodes.Synced():
	case <-ctx.Done():
		return nil
	case err := <-errc:
		return err
	}
	log.Info("watching nodes; keeping routes to their pods")
	for {
		if err := Sync(ctx, routes, nodes.Store().List(), nodeName, log); err != nil && ctx.Err() == nil {
			log.Warn("syncing pod routes", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case err := <-errc:
			if err != nil && ctx.Err() == nil {
				return err
			}
			return nil
		case <-kick:
		case <-time.After(ResyncPeriod):
		}
	}
}
