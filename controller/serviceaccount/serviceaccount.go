// Package serviceaccount gives every namespace what its pods' identity
// needs, as two of kube-controller-manager's controllers do:
//
//	namespace added, "default" ServiceAccount deleted ─▶ queue ns ─▶ Active and no "default"? ─▶ create it
//	namespace added, kube-root-ca.crt changed/deleted ─▶ queue ns ─▶ ConfigMap kube-root-ca.crt = the cluster CA
//
// The token of a pod comes from the TokenRequest API, not from a Secret,
// so no token controller is needed (as in Kubernetes 1.24+).
package serviceaccount

import (
	"context"
	"fmt"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/client"
	"minik/client/informer"
	"minik/controller/framework"
)

// Name is the controller's name.
const Name = "serviceaccount"

// The ConfigMap every namespace gets with the cluster's CA bundle.
const (
	RootCAConfigMap   = "kube-root-ca.crt"
	rootCADescription = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."
)

// Controller keeps "default" and kube-root-ca.crt in every namespace.
type Controller struct {
	c      *client.Client
	inf    *framework.Informers
	rootCA string // PEM; empty publishes no ConfigMap
	queue  *framework.Queue
	log    *slog.Logger
}

// New registers the controller on the shared informers.
func New(c *client.Client, inf *framework.Informers, rootCA []byte, log *slog.Logger) *Controller {
	ctl := &Controller{c: c, inf: inf, rootCA: string(rootCA), queue: framework.NewQueue(framework.QueueConfig{Name: Name}),
		log: log.With("controller", Name)}
	inf.Namespaces.AddHandler(informer.Handler[corev1.Namespace]{
		OnAdd:    func(ns *corev1.Namespace) { ctl.queue.Add(ns.Name) },
		OnUpdate: func(_, ns *corev1.Namespace) { ctl.queue.Add(ns.Name) },
	})
	inf.ServiceAccounts.AddHandler(informer.Handler[corev1.ServiceAccount]{
		OnDelete: func(sa *corev1.ServiceAccount) {
			if sa.Name == "default" {
				ctl.queue.Add(sa.Namespace)
			}
		},
	})
	inf.ConfigMaps.AddHandler(informer.Handler[corev1.ConfigMap]{
		OnUpdate: func(_, cm *corev1.ConfigMap) {
			if cm.Name == RootCAConfigMap {
				ctl.queue.Add(cm.Namespace)
			}
		},
		OnDelete: func(cm *corev1.ConfigMap) {
			if cm.Name == RootCAConfigMap {
				ctl.queue.Add(cm.Namespace)
			}
		},
	})
	return ctl
}

// Run works until ctx ends.
func (ctl *Controller) Run(ctx context.Context, workers int) {
	framework.RunWorkers(ctx, ctl.queue, workers, ctl.sync, func(key string, err error) {
		ctl.log.Warn("sync failed", "namespace", key, "err", err)
	})
}

// Output is what one namespace lacks.
type Output struct {
	CreateDefault bool
	// RootCA is the ConfigMap to create (Create) or replace (Update).
	RootCA         *corev1.ConfigMap
	CreateRootCA   bool
	UpdateRootCACM bool
}

// Plan decides, from the cached state of one namespace, what to
// create or fix. A namespace being deleted gets nothing new.
func Plan(ns *corev1.Namespace, defaultSA *corev1.ServiceAccount, rootCA *corev1.ConfigMap, caPEM string) Output {
	var p Output
	if ns == nil || ns.Status.Phase != corev1.NamespaceActive || ns.DeletionTimestamp != nil {
		return p
	}
	p.CreateDefault = defaultSA == nil
	if caPEM == "" {
		return p
	}
	want := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: RootCAConfigMap, Namespace: ns.Name,
		Annotations: map[string]string{"kubernetes.io/description": rootCADescription}},
		Data: map[string]string{"ca.crt": caPEM}}
	switch {
	case rootCA == nil:
		p.RootCA, p.CreateRootCA = want, true
	case rootCA.Data["ca.crt"] != caPEM || len(rootCA.Data) != 1 || rootCA.Annotations["kubernetes.io/description"] != rootCADescription:
		fixed := rootCA.DeepCopy()
		fixed.Data = want.Data
		if fixed.Annotations == nil {
			fixed.Annotations = map[string]string{}
		}
		fixed.Annotations["kubernetes.io/description"] = rootCADescription
		p.RootCA, p.UpdateRootCACM = fixed, true
	}
	return p
}

func (ctl *Controller) sync(ctx context.Context, name string) (framework.Result, error) {
	ns, _ := ctl.inf.Namespaces.Store().Get("", name)
	sa, _ := ctl.inf.ServiceAccounts.Store().Get(name, "default")
	cm, _ := ctl.inf.ConfigMaps.Store().Get(name, RootCAConfigMap)
	p := Plan(ns, sa, cm, ctl.rootCA)
	if p.CreateDefault {
		_, err := ctl.c.ServiceAccounts().Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: name}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) && !isTerminating(err) {
			return framework.Result{}, fmt.Errorf("creating the default service account: %w", err)
		}
	}
	switch {
	case p.CreateRootCA:
		_, err := ctl.c.ConfigMaps().Create(ctx, p.RootCA, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) && !isTerminating(err) {
			return framework.Result{}, fmt.Errorf("creating %s: %w", RootCAConfigMap, err)
		}
	case p.UpdateRootCACM:
		if _, err := ctl.c.ConfigMaps().Update(ctx, p.RootCA, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return framework.Result{}, fmt.Errorf("updating %s: %w", RootCAConfigMap, err)
		}
	}
	return framework.Result{}, nil
}

// isTerminating reports the NamespaceLifecycle refusal: the namespace
// began terminating after the cache said Active.
func isTerminating(err error) bool {
	if s, ok := err.(apierrors.APIStatus); ok && s.Status().Details != nil {
		for _, c := range s.Status().Details.Causes {
			if c.Type == "NamespaceTerminating" {
				return true
			}
		}
	}
	return false
}
