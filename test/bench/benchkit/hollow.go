package benchkit

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/client"
)

// StartWithHollowNodes starts a control plane in dir and n hollow nodes
// on it (StartHollowNodes), and returns them with an admin's client.
// Stop the hollow nodes, then the control plane.
func StartWithHollowNodes(ctx context.Context, bin, dir string, o ControlPlaneOptions, n int, spread time.Duration) (*ControlPlane, *Proc, *client.Client, error) {
	cp, err := StartControlPlane(ctx, bin, dir, o)
	if err != nil {
		return nil, nil, nil, err
	}
	c, err := cp.Client("bench")
	if err == nil {
		var h *Proc
		if h, err = cp.StartHollowNodes(ctx, n, spread); err == nil {
			return cp, h, c, nil
		}
	}
	cp.Stop()
	return nil, nil, nil, err
}

// StartHollowNodes runs `minik hollow --nodes n --start-spread spread`
// as hollow.User and waits until the n nodes are Ready.
func (cp *ControlPlane) StartHollowNodes(ctx context.Context, n int, spread time.Duration) (*Proc, error) {
	kc, err := cp.HollowKubeconfig(ctx)
	if err != nil {
		return nil, err
	}
	c, err := cp.Client("bench")
	if err != nil {
		return nil, err
	}
	p, err := Start("hollow", cp.bin, filepath.Join(cp.Dir, "hollow.log"), "hollow", "--kubeconfig", kc, "--nodes", strconv.Itoa(n),
		"--start-spread", spread.String())
	if err != nil {
		return nil, err
	}
	if err := waitNodesReady(ctx, c, p, n, 10*time.Minute); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

// ReadyNodes counts the nodes whose Ready condition is True.
func ReadyNodes(ctx context.Context, c *client.Client) (int, error) {
	l, err := c.Nodes().List(ctx, "", metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, node := range l.Items {
		for _, cond := range node.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				n++
			}
		}
	}
	return n, nil
}

// waitNodesReady waits until n nodes are Ready, checking every second,
// or fails when p exits or timeout passes.
func waitNodesReady(ctx context.Context, c *client.Client, p *Proc, n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		ready, err := ReadyNodes(ctx, c)
		if err == nil && ready >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d nodes Ready after %v (last error %v); see %s", ready, n, timeout, err, p.Log)
		}
		select {
		case <-p.Done():
			return fmt.Errorf("%s exited; see %s", p.Name, p.Log)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
