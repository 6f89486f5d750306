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
