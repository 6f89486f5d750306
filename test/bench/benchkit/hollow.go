package benchkit

import (
	"context"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/client"
)

// StartHollow runs `minik hollow --nodes n` as the user of kubeconfig.
func StartHollow(cp *ControlPlane, kubeconfig string, n int, logPath string) (*Proc, error) {
	return Start("hollow", cp.bin, logPath, "hollow", "--kubeconfig", kubeconfig, "--nodes", strconv.Itoa(n))
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

// WaitNodesReady waits until n nodes are Ready, checking every second,
// or fails when p exits or timeout passes.
func WaitNodesReady(ctx context.Context, c *client.Client, p *Proc, n int, timeout time.Duration) error {
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
