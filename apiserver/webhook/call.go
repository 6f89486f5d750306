package webhook

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// ServiceResolver gives the address (host:port) to dial for a webhook's
// Service reference.
type ServiceResolver func(ctx context.Context, namespace, name string, port int32) (string, error)

// Caller sends AdmissionReviews over HTTPS. One transport per CA bundle
// keeps connections to a webhook open between requests.
type Caller struct {
	resolve ServiceResolver

	mu         sync.Mutex
	transports map[[32]byte]*http.Transport
}

// NewCaller returns a Caller that reaches Service-backed webhooks through
// resolve.
func NewCaller(resolve ServiceResolver) *Caller {
	return &Caller{resolve: resolve, transports: map[[32]byte]*http.Transport{}}
}

// maxResponseBytes bounds a webhook's answer (upstream's limit for a
// webhook response body is the same 3 MiB as a request's object).
const maxResponseBytes = 3 << 20

// callError is a failure to get a usable answer from a webhook: the
// webhook's failurePolicy decides whether the request goes on.
type callError struct {
	hook string
	err  error
}

func (e *callError) Error() string {
	return fmt.Sprintf("failed calling webhook %q: %v", e.hook, e.err)
}
func (e *callError) Unwrap() error { return e.err }

// dialTargetKey carries the address a Service reference resolved to, for
// the transport's dialer; URL webhooks dial their host as usual.
type dialTargetKey struct{}

func (c *Caller) transport(caBundle []byte) (*http.Transport, error) {
	key := sha256.Sum256(caBundle)
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.transports[key]; ok {
		return t, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if len(caBundle) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caBundle) {
			return nil, errors.New("clientConfig.caBundle holds no PEM certificate")
		}
		cfg.RootCAs = pool
	} // else the system roots, as upstream
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	t := &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 16,
		IdleConnTimeout: 90 * time.Second, TLSHandshakeTimeout: 10 * time.Second,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if target, ok := ctx.Value(dialTargetKey{}).(string); ok {
				addr = target
			}
			return dialer.DialContext(ctx, network, addr)
		}}
	c.transports[key] = t
	return t, nil
}

// reviewVersion is the first AdmissionReview version the webhook accepts
// that minik sends (validation made sure there is one).
func reviewVersion(h *Hook) string {
	for _, v := range h.ReviewVersions {
		if v == "v1" || v == "v1beta1" {
			return v
		}
	}
	return "v1"
}

// call sends one AdmissionReview of a (its objects already in inv's
// version) and returns the webhook's response, checked as upstream
// checks it. kind and resource are those the webhook's rule named;
// requestKind and requestResource those of the client's request.
func (c *Caller) call(ctx context.Context, h *Hook, inv *invocation, a *Attributes) (*admissionv1.AdmissionResponse, error) {
	version := reviewVersion(h)
	req := &admissionv1.AdmissionRequest{
		UID:  types.UID(uuid.NewString()),
		Kind: metav1.GroupVersionKind(inv.Kind), Resource: metav1.GroupVersionResource(inv.Resource), SubResource: a.SubResource,
		RequestKind: ptrTo(metav1.GroupVersionKind(a.Kind)), RequestResource: ptrTo(metav1.GroupVersionResource(a.Resource)),
		RequestSubResource: a.SubResource,
		Name:               a.Name, Namespace: a.Namespace, Operation: a.Operation, UserInfo: a.UserInfo, DryRun: ptrTo(a.DryRun),
	}
	var err error
	if req.Object.Raw, err = rawJSON(a.Object); err != nil {
		return nil, err
	}
	if req.OldObject.Raw, err = rawJSON(a.OldObject); err != nil {
		return nil, err
	}
	if req.Options.Raw, err = rawJSON(a.Options); err != nil {
		return nil, err
	}
	body, err := json.Marshal(&admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/" + version, Kind: "AdmissionReview"}, Request: req})
	if err != nil {
		return nil, err
	}
	timeout := time.Duration(h.TimeoutSeconds) * time.Second
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	target, addr, err := c.target(ctx, h)
	if err != nil {
		return nil, &callError{h.Name, err}
	}
	if addr != "" {
		ctx = context.WithValue(ctx, dialTargetKey{}, addr)
	}
	// As client-go's rest client, the timeout goes in the query too.
	q := target.Query()
	q.Set("timeout", strconv.Itoa(int(h.TimeoutSeconds))+"s")
	target.RawQuery = q.Encode()
	tr, err := c.transport(h.ClientConfig.CABundle)
	if err != nil {
		return nil, &callError{h.Name, err}
	}
	httpReq, err := http.NewRequestWithContext(ctx, http.MethodPost, target.String(), bytes.NewReader(body))
	if err != nil {
		return nil, &callError{h.Name, err}
	}
	httpReq.Header.Set("Content-Type", "application/json")
	httpReq.Header.Set("Accept", "application/json")
	resp, err := (&http.Client{Transport: tr}).Do(httpReq)
	if err != nil {
		return nil, &callError{h.Name, fmt.Errorf("failed to call webhook: %w", err)}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return nil, &callError{h.Name, fmt.Errorf("failed to call webhook: %w", err)}
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &callError{h.Name, fmt.Errorf("failed to call webhook: the server responded with the status code %d: %s",
			resp.StatusCode, bytes.TrimSpace(truncate(data, 512)))}
	}
	if len(data) > maxResponseBytes {
		return nil, &callError{h.Name, fmt.Errorf("received invalid webhook response: larger than %d bytes", maxResponseBytes)}
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(data, &review); err != nil {
		return nil, &callError{h.Name, fmt.Errorf("received invalid webhook response: %w", err)}
	}
	if err := checkResponse(&review, req.UID, version); err != nil {
		return nil, &callError{h.Name, fmt.Errorf("received invalid webhook response: %w", err)}
	}
	return review.Response, nil
}

// target is the URL to post to: clientConfig.url, or
// https://NAME.NAMESPACE.svc:PORT/PATH dialed at the Service's resolved
// address (the certificate must name NAME.NAMESPACE.svc, as upstream).
func (c *Caller) target(ctx context.Context, h *Hook) (u *url.URL, addr string, err error) {
	cc := h.ClientConfig
	if cc.URL != nil {
		u, err = url.Parse(*cc.URL)
		return u, "", err
	}
	svc := cc.Service
	port := int32(443)
	if svc.Port != nil {
		port = *svc.Port
	}
	host := net.JoinHostPort(svc.Name+"."+svc.Namespace+".svc", strconv.Itoa(int(port)))
	if addr, err = c.resolve(ctx, svc.Namespace, svc.Name, port); err != nil {
		return nil, "", err
	}
	u = &url.URL{Scheme: "https", Host: host, Path: "/"}
	if svc.Path != nil && *svc.Path != "" {
		u.Path = *svc.Path
	}
	return u, addr, nil
}

func checkResponse(review *admissionv1.AdmissionReview, uid types.UID, version string) error {
	if version == "v1" && (review.APIVersion != "admission.k8s.io/v1" || review.Kind != "AdmissionReview") {
		return fmt.Errorf("expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got %s, Kind=%s", review.APIVersion, review.Kind)
	}
	r := review.Response
	if r == nil {
		return errors.New("webhook response was absent")
	}
	if r.UID != uid {
		return fmt.Errorf("expected response.uid=%q, got %q", uid, r.UID)
	}
	if version != "v1" {
		if len(r.Patch) > 0 && r.PatchType == nil {
			r.PatchType = ptrTo(admissionv1.PatchTypeJSONPatch) // v1beta1 allowed leaving it out
		}
		return nil
	}
	switch {
	case len(r.Patch) > 0 && r.PatchType == nil:
		return errors.New("webhook returned response.patch but not response.patchType")
	case len(r.Patch) == 0 && r.PatchType != nil:
		return errors.New("webhook returned response.patchType but not response.patch")
	case r.PatchType != nil && *r.PatchType != admissionv1.PatchTypeJSONPatch:
		return fmt.Errorf("webhook returned invalid response.patchType of %q", *r.PatchType)
	}
	return nil
}

func rawJSON(obj runtime.Object) ([]byte, error) {
	if obj == nil {
		return nil, nil
	}
	return json.Marshal(obj)
}

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

func ptrTo[T any](v T) *T { return &v }
