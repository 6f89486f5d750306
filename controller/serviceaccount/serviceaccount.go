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
	// sink performs the writes (apiSink; a FakeSink in tests).
	sink framework.Sink[Action]
}

// New registers the controller on the shared informers.
func New(c *client.Client, inf *framework.Informers, rootCA []byte, log *slog.Logger) *Controller {
	ctl := &Controller{c: c, inf: inf, rootCA: string(rootCA), queue: framework.NewQueue(framework.QueueConfig{Name: Name}),
		log: log.With("controller", Name), sink: apiSink{c}}
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

// ActionType says what an Action does.
type ActionType string

// The writes of a sync.
const (
	// CreateDefaultServiceAccount creates the namespace's "default" account.
	CreateDefaultServiceAccount ActionType = "CreateDefaultServiceAccount"
	// CreateRootCA creates the kube-root-ca.crt ConfigMap.
	CreateRootCA ActionType = "CreateRootCA"
	// UpdateRootCA puts the CA bundle back into kube-root-ca.crt.
	UpdateRootCA ActionType = "UpdateRootCA"
)

// Action is one write in a namespace.
type Action struct {
	Type      ActionType
	Namespace string
	// ConfigMap is the kube-root-ca.crt to create or write.
	ConfigMap *corev1.ConfigMap
}

func (a Action) String() string { return string(a.Type) + " " + a.Namespace }

// Output is what one namespace lacks.
type Output = framework.Output[Action]

// Plan decides, from the cached state of one namespace, what to
// create or fix. A namespace being deleted gets nothing new.
func Plan(ns *corev1.Namespace, defaultSA *corev1.ServiceAccount, rootCA *corev1.ConfigMap, caPEM string) Output {
	var p Output
	if ns == nil || ns.Status.Phase != corev1.NamespaceActive || ns.DeletionTimestamp != nil {
		return p
	}
	if defaultSA == nil {
		p.Actions = append(p.Actions, Action{Type: CreateDefaultServiceAccount, Namespace: ns.Name})
	}
	if caPEM == "" {
		return p
	}
	want := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: RootCAConfigMap, Namespace: ns.Name,
		Annotations: map[string]string{"kubernetes.io/description": rootCADescription}},
		Data: map[string]string{"ca.crt": caPEM}}
	switch {
	case rootCA == nil:
		p.Actions = append(p.Actions, Action{Type: CreateRootCA, Namespace: ns.Name, ConfigMap: want})
	case rootCA.Data["ca.crt"] != caPEM || len(rootCA.Data) != 1 || rootCA.Annotations["kubernetes.io/description"] != rootCADescription:
		fixed := rootCA.DeepCopy()
		fixed.Data = want.Data
		if fixed.Annotations == nil {
			fixed.Annotations = map[string]string{}
		}
		fixed.Annotations["kubernetes.io/description"] = rootCADescription
		p.Actions = append(p.Actions, Action{Type: UpdateRootCA, Namespace: ns.Name, ConfigMap: fixed})
	}
	return p
}

func (ctl *Controller) sync(ctx context.Context, name string) (framework.Result, error) {
	ns, _ := ctl.inf.Namespaces.Store().Get("", name)
	sa, _ := ctl.inf.ServiceAccounts.Store().Get(name, "default")
	cm, _ := ctl.inf.ConfigMaps.Store().Get(name, RootCAConfigMap)
	return framework.Result{}, framework.Execute(ctx, ctl.sink, Plan(ns, sa, cm, ctl.rootCA).Actions)
}

// apiSink performs the actions through the apiserver. A namespace that
// began terminating after the cache said Active refuses creates: nothing
// is left to do then.
type apiSink struct{ c *client.Client }

func (s apiSink) Do(ctx context.Context, a Action) error {
	var err error
	switch a.Type {
	case CreateDefaultServiceAccount:
		_, err = s.c.ServiceAccounts().Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: a.Namespace}}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) || isTerminating(err) {
			err = nil
		}
	case CreateRootCA:
		_, err = s.c.ConfigMaps().Create(ctx, a.ConfigMap, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) || isTerminating(err) {
			err = nil
		}
	case UpdateRootCA:
		_, err = s.c.ConfigMaps().Update(ctx, a.ConfigMap, metav1.UpdateOptions{})
		if apierrors.IsNotFound(err) {
			err = nil
		}
	}
	return err
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
