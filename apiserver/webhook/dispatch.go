package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Request is what one dispatch needs beside the webhooks.
type Request struct {
	Attributes
	// Warn receives the webhooks' warnings (Warning headers).
	Warn func(string)
	// Decode turns a patched object (JSON of kind, the request's or an
	// equivalent's) back into that kind's type, defaulted, with its
	// apiVersion and kind set (mutating only).
	Decode func(data []byte, kind schema.GroupVersionKind) (runtime.Object, error)
	// Convert turns an object of the request (in any of its versions)
	// into the version of kind; needed only with Equivalents.
	Convert func(obj runtime.Object, kind schema.GroupVersionKind) (runtime.Object, error)
}

// as returns obj in the version of kind, converting it when it is in
// another (a matchPolicy Equivalent webhook named that version).
func (r *Request) as(obj runtime.Object, kind schema.GroupVersionKind) (runtime.Object, error) {
	if obj == nil || obj.GetObjectKind().GroupVersionKind() == kind {
		return obj, nil
	}
	if r.Convert == nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("no conversion of %s to %s", obj.GetObjectKind().GroupVersionKind(), kind))
	}
	out, err := r.Convert(obj, kind)
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("converting to %s: %w", kind, err))
	}
	return out, nil
}

// Mutate calls the matching webhooks of set one after another, each on
// the object the previous ones patched, and returns the final object.
// A webhook whose reinvocationPolicy is IfNeeded is called once more
// when a webhook after it changed the object (one more pass at most, as
// upstream).
func (c *Caller) Mutate(ctx context.Context, set *Set, req *Request) (runtime.Object, error) {
	if set == nil || len(set.Hooks) == 0 || req.exempt() {
		return req.Object, nil
	}
	obj := req.Object
	invokedReinvocable := map[*Hook]bool{}
	reinvoke := map[*Hook]bool{}
	for pass := 0; pass < 2; pass++ {
		for _, h := range set.Hooks {
			if pass == 1 && !reinvoke[h] {
				continue
			}
			out, called, changed, err := c.mutateOnce(ctx, h, req, obj)
			if err != nil {
				return nil, err
			}
			obj = out
			if pass == 1 || !called {
				continue
			}
			if changed {
				// Everything already called that asked to see later
				// changes is called again.
				for r := range invokedReinvocable {
					reinvoke[r] = true
				}
			}
			if h.Reinvoke {
				invokedReinvocable[h] = true
			}
		}
		if len(reinvoke) == 0 {
			break
		}
	}
	// Patched through an equivalent version: back to the request's.
	return req.as(obj, req.Kind)
}

// mutateOnce calls h if it matches and applies its patch; out is obj
// when h was not called or did not change it.
func (c *Caller) mutateOnce(ctx context.Context, h *Hook, req *Request, obj runtime.Object) (out runtime.Object, called, changed bool, err error) {
	a := req.Attributes
	a.Object = obj
	inv, err := c.shouldCall(h, &a)
	if err != nil || inv == nil {
		return obj, false, false, err
	}
	if a.Object, err = req.as(obj, inv.Kind); err != nil {
		return nil, true, false, err
	}
	if a.OldObject, err = req.as(a.OldObject, inv.Kind); err != nil {
		return nil, true, false, err
	}
	obj = a.Object
	resp, err := c.call(ctx, h, inv, &a)
	if err != nil {
		return obj, true, false, c.failure(h, err)
	}
	warn(req, resp)
	if !resp.Allowed {
		return nil, true, false, denied(h.Name, resp.Result)
	}
	if len(resp.Patch) == 0 || obj == nil {
		return obj, true, false, nil
	}
	before, err := json.Marshal(obj)
	if err != nil {
		return nil, true, false, apierrors.NewInternalError(err)
	}
	patch, err := jsonpatch.DecodePatch(resp.Patch)
	if err != nil {
		return nil, true, false, apierrors.NewInternalError(fmt.Errorf("admission webhook %q returned an invalid JSON patch: %w", h.Name, err))
	}
	after, err := patch.Apply(before)
	if err != nil {
		return nil, true, false, apierrors.NewInternalError(fmt.Errorf("admission webhook %q returned a JSON patch that does not apply: %w", h.Name, err))
	}
	patched, err := req.Decode(after, inv.Kind)
	if err != nil {
		return nil, true, false, apierrors.NewInternalError(fmt.Errorf("admission webhook %q patched the object into one that does not decode: %w", h.Name, err))
	}
	normal, err := json.Marshal(patched)
	if err != nil {
		return nil, true, false, apierrors.NewInternalError(err)
	}
	return patched, true, !bytes.Equal(before, normal), nil
}

// Validate calls the matching webhooks of set at once and waits for them
// all; the first refusal in webhook order is the answer.
func (c *Caller) Validate(ctx context.Context, set *Set, req *Request) error {
	if set == nil || len(set.Hooks) == 0 || req.exempt() {
		return nil
	}
	errs := make([]error, len(set.Hooks))
	var wg sync.WaitGroup
	for i, h := range set.Hooks {
		a := req.Attributes
		inv, err := c.shouldCall(h, &a)
		if err != nil || inv == nil {
			errs[i] = err
			continue
		}
		if a.Object, err = req.as(a.Object, inv.Kind); err == nil {
			a.OldObject, err = req.as(a.OldObject, inv.Kind)
		}
		if err != nil {
			errs[i] = err
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := c.call(ctx, h, inv, &a)
			if err != nil {
				errs[i] = c.failure(h, err)
				return
			}
			warn(req, resp)
			if !resp.Allowed {
				errs[i] = denied(h.Name, resp.Result)
			}
		}()
	}
	wg.Wait()
	return firstNonNil(errs)
}

func firstNonNil(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// shouldCall matches h against the request (nil: not called), and
// refuses a dry run for a webhook that may have side effects (upstream's
// 400).
func (c *Caller) shouldCall(h *Hook, a *Attributes) (*invocation, error) {
	inv, err := h.matches(a)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if inv != nil && a.DryRun && !h.NoSideEffectsOnDryRun {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("admission webhook %q does not support dry run", h.Name))
	}
	return inv, nil
}

// failure applies the failure policy to an error calling h: Ignore goes
// on (logged), Fail refuses the request with 500, as upstream.
func (c *Caller) failure(h *Hook, err error) error {
	var ce *callError
	if !errors.As(err, &ce) {
		return apierrors.NewInternalError(err)
	}
	if h.FailOpen {
		slog.Warn("admission webhook failed, failing open (failurePolicy Ignore)", "webhook", h.Name, "configuration", h.Configuration, "err", err)
		return nil
	}
	return apierrors.NewInternalError(err)
}

func warn(req *Request, resp *admissionv1.AdmissionResponse) {
	if req.Warn == nil {
		return
	}
	for _, w := range resp.Warnings {
		req.Warn(w)
	}
}

// denied words a refusal as upstream's ToStatusErr: `admission webhook
// "NAME" denied the request: MESSAGE`, with the webhook's code (400 when
// it gave none or one below 400) and its reason and details.
func denied(name string, result *metav1.Status) error {
	st := metav1.Status{Status: metav1.StatusFailure}
	if result != nil {
		st = *result.DeepCopy()
	}
	if st.Code < http.StatusBadRequest {
		st.Code = http.StatusBadRequest
	}
	st.Status = metav1.StatusFailure
	prefix := fmt.Sprintf("admission webhook %q denied the request", name)
	switch {
	case st.Message != "":
		st.Message = prefix + ": " + st.Message
	case st.Reason != "":
		st.Message = prefix + ": " + string(st.Reason)
	default:
		st.Message = prefix + " without explanation"
	}
	return &apierrors.StatusError{ErrStatus: st}
}
