// Package defaultbinder writes the scheduler's decision: a Binding posted
// to pods/NAME/binding. It is the only plugin that talks to the API.
package defaultbinder

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/scheduler/framework"
)

// Name is the plugin's name in the registry.
const Name = "DefaultBinder"

// API is the part of the client the binder uses; *client.Client has it.
type API interface {
	Bind(ctx context.Context, b *corev1.Binding, opts metav1.CreateOptions) error
}

// DefaultBinder is a bind plugin.
type DefaultBinder struct {
	api API
}

var _ framework.BindPlugin = &DefaultBinder{}

// New returns a binder that posts through api.
func New(api API) *DefaultBinder { return &DefaultBinder{api: api} }

// Name implements framework.Plugin.
func (*DefaultBinder) Name() string { return Name }

// Bind implements framework.BindPlugin.
func (b *DefaultBinder) Bind(ctx context.Context, pod *corev1.Pod, nodeName string) *framework.Status {
	binding := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: nodeName},
	}
	if err := b.api.Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
		return framework.AsStatus(err)
	}
	return nil
}
