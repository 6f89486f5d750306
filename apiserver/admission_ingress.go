package apiserver

import (
	"context"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"minik/apiserver/validation"
)

// admitDefaultIngressClass is upstream's DefaultIngressClass plugin. It
// acts on creates only, as upstream's: an Ingress that names no class,
// neither in spec.ingressClassName nor in the kubernetes.io/ingress.class
// annotation (set to anything, even ""), gets the default IngressClass
// when there is one; classes reads the IngressClasses only then. An
// update that removes the class is left without one.
func admitDefaultIngressClass(ctx context.Context, ing *networkingv1.Ingress, classes func(context.Context) ([]runtime.Object, error)) error {
	if _, annotated := ing.Annotations[validation.IngressClassAnnotation]; annotated || ing.Spec.IngressClassName != nil {
		return nil
	}
	items, err := classes(ctx)
	if err != nil {
		return err
	}
	if ic := defaultIngressClass(items); ic != nil {
		name := ic.Name
		ing.Spec.IngressClassName = &name
	}
	return nil
}

// defaultIngressClass picks the class marked default; with several, the
// newest (newestDefault). nil when no class is marked.
func defaultIngressClass(items []runtime.Object) *networkingv1.IngressClass {
	return newestDefault(items, validation.IsDefaultIngressClass)
}

// ingressClasses reads every IngressClass from etcd, as DefaultStorageClass
// reads the storage classes: Ingress creates are few, the classes fewer.
func (s *Server) ingressClasses(ctx context.Context) ([]runtime.Object, error) {
	list, err := s.handlers["networking.k8s.io/v1/ingressclasses"].store.List(ctx, storageListAll())
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}
