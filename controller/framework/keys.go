package framework

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/client/informer"
)

// KeyOf returns the queue key of obj: "namespace/name", or "name".
func KeyOf(obj metav1.Object) string {
	return informer.Key(obj.GetNamespace(), obj.GetName())
}

// SplitKey splits a key made by KeyOf.
func SplitKey(key string) (namespace, name string) {
	if i := strings.IndexByte(key, '/'); i >= 0 {
		return key[:i], key[i+1:]
	}
	return "", key
}

// Handler returns informer handlers that queue the key of every added,
// updated or deleted object into q.
func Handler[T any](q *Queue) informer.Handler[T] {
	add := func(obj *T) { q.Add(KeyOf(any(obj).(metav1.Object))) }
	return informer.Handler[T]{
		OnAdd:    add,
		OnUpdate: func(_, n *T) { add(n) },
		OnDelete: add,
	}
}
