package client

import (
	"context"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Bind assigns a pod to a node by posting b to pods/NAME/binding, which is
// how the scheduler records its decision. b.Name is the pod's name and
// b.Target.Name the node's.
func (c *Client) Bind(ctx context.Context, b *corev1.Binding, opts metav1.CreateOptions) error {
	q, err := encodeOptions(&opts)
	if err != nil {
		return err
	}
	body := *b
	if body.Kind == "" {
		body.APIVersion, body.Kind = "v1", "Binding"
	}
	cl := c.Pods().call(http.MethodPost, b.Namespace, b.Name, q, &body, "binding")
	return c.do(ctx, cl, nil)
}

// Evict asks the apiserver to delete a pod through pods/NAME/eviction, which
// honours PodDisruptionBudgets: a 429 TooManyRequests answer
// (apierrors.IsTooManyRequests) means a budget forbids it for now.
func (c *Client) Evict(ctx context.Context, e *policyv1.Eviction) error {
	body := *e
	if body.Kind == "" {
		body.APIVersion, body.Kind = "policy/v1", "Eviction"
	}
	return c.Pods().Post(ctx, e.Namespace, e.Name, "eviction", &body, nil)
}
