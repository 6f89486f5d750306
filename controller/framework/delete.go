package framework

import (
	"context"
	"errors"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/client"
	"minik/client/record"
)

// DeletePods deletes owner's pods in parallel, each with its UID as a
// precondition so a replacement of the same name is never hit. A pod that
// is already gone (or replaced) is not an error, but its deletion will
// never be observed, so the expectation for key is lowered at once.
// Successful deletes are recorded as SuccessfulDelete events on owner.
func DeletePods(ctx context.Context, c *client.Client, rec *record.Recorder, owner client.Object, key string, expect *Expectations, pods []*corev1.Pod) error {
	var wg sync.WaitGroup
	errc := make(chan error, len(pods))
	for _, p := range pods {
		wg.Go(func() {
			uid := p.UID
			err := c.Pods().Delete(ctx, p.Namespace, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
			if err != nil {
				expect.DeletionObserved(key, p.UID)
				if !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
					errc <- err
				}
				return
			}
			rec.Eventf(owner, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted pod: %s", p.Name)
		})
	}
	wg.Wait()
	close(errc)
	var errs []error
	for err := range errc {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
