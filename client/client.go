// Package client is the small REST client that minik's scheduler, controller
// and kubelet use to talk to the apiserver. It speaks the Kubernetes API over
// HTTP/2, in protobuf as Kubernetes' own components do (or JSON, if asked),
// works with the typed objects of k8s.io/api, and returns
// server errors as *apierrors.StatusError so that apierrors.IsNotFound,
// IsConflict and IsGone work as with client-go.
//
// The list-watch informer built on it lives in client/informer.
package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	sigsjson "sigs.k8s.io/json"

	"golang.org/x/time/rate"

	"minik/client/kubeconfig"
)

// Config says where the apiserver is and how to authenticate to it.
type Config struct {
	// Host is the apiserver's base URL, e.g. https://127.0.0.1:6443.
	Host string
	// TLS is the client TLS configuration: CA pool and client certificate.
	// Nil uses the system roots and no client certificate.
	TLS *tls.Config
	// BearerToken, if set, is sent as "Authorization: Bearer TOKEN".
	BearerToken string
	// TokenSource, if set, gives the bearer token of each request instead
	// (a token that expires and is renewed, as a service account's).
	TokenSource TokenSource
	// UserAgent identifies the component in the apiserver's logs.
	// Default "minik".
	UserAgent string
	// QPS limits requests per second, with bursts of Burst requests.
	// Default 0: unlimited, since minik's components are few and trusted.
	QPS   float64
	Burst int
	// Timeout bounds each non-watch request. Default 0: only the caller's
	// context bounds it.
	Timeout time.Duration
	// Transport replaces the default HTTP/2 transport; tests use it.
	Transport http.RoundTripper
	// JSON makes typed requests, answers and watches use JSON instead of
	// protobuf: slower, but readable on the wire.
	JSON bool
	// MaxRetries is how many times a request the apiserver asks to retry
	// later (429 or 5xx with Retry-After) is sent again. Default 0: 10,
	// as client-go; negative: never (tests of the refusal itself).
	MaxRetries int
}

// ConfigFromKubeconfig returns the Config of kc's current context.
func ConfigFromKubeconfig(kc *kubeconfig.Config) (Config, error) {
	r, err := kc.Current()
	if err != nil {
		return Config{}, err
	}
	tlsCfg, err := r.TLSConfig()
	if err != nil {
		return Config{}, err
	}
	return Config{Host: r.Server, TLS: tlsCfg, BearerToken: r.Token}, nil
}

// TokenSource gives the bearer token to send. It is called before every
// request, so it returns a cached token until that needs renewing. If it
// also has a method Invalidate(token string), that is called when the
// apiserver answers 401 to a request made with token.
type TokenSource interface {
	Token(ctx context.Context) (string, error)
}

// Client makes requests to one apiserver. It is safe for concurrent use, and
// all its requests share one pool of connections.
type Client struct {
	base       *url.URL
	http       *http.Client
	token      string
	tokens     TokenSource // nil: token (if any) is fixed
	userAgent  string
	timeout    time.Duration
	limiter    *rate.Limiter // nil: unlimited
	qps        float64       // the limiter's settings, for the clients made from this one
	burst      int
	protobuf   bool // typed calls speak protobuf
	maxRetries int  // sends again of a request refused with Retry-After

	tokenHTTPOnce sync.Once
	tokenHTTP     *http.Client // WithTokenSource's clients' connections
}

// New returns a Client for cfg.
func New(cfg Config) (*Client, error) {
	base, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, fmt.Errorf("client: host %q: %w", cfg.Host, err)
	}
	if base.Scheme != "https" && base.Scheme != "http" || base.Host == "" {
		return nil, fmt.Errorf("client: host %q must be an http(s) URL", cfg.Host)
	}
	base.Path = strings.TrimSuffix(base.Path, "/")
	tr := cfg.Transport
	if tr == nil {
		tr = NewTransport(cfg.TLS)
	}
	c := &Client{
		base:      base,
		http:      &http.Client{Transport: tr},
		token:     cfg.BearerToken,
		tokens:    cfg.TokenSource,
		userAgent: cfg.UserAgent,
		timeout:   cfg.Timeout,
		protobuf:  !cfg.JSON,
	}
	switch {
	case cfg.MaxRetries == 0:
		c.maxRetries = defaultMaxRetries
	case cfg.MaxRetries > 0:
		c.maxRetries = cfg.MaxRetries
	}
	if c.userAgent == "" {
		c.userAgent = "minik"
	}
	c.qps, c.burst = cfg.QPS, cfg.Burst
	c.limiter = newLimiter(c.qps, c.burst)
	return c, nil
}

// newLimiter returns a token bucket of qps with bursts of burst, or nil
// (unlimited) when qps is 0.
func newLimiter(qps float64, burst int) *rate.Limiter {
	if qps <= 0 {
		return nil
	}
	return rate.NewLimiter(rate.Limit(qps), max(burst, 1))
}

// NewFromKubeconfig returns a Client for kc's current context.
func NewFromKubeconfig(kc *kubeconfig.Config) (*Client, error) {
	cfg, err := ConfigFromKubeconfig(kc)
	if err != nil {
		return nil, err
	}
	return New(cfg)
}

// WithTokenSource returns a Client to the same apiserver that
// authenticates with ts's tokens instead of this client's certificate or
// token, with its own user agent and its own rate limit of the same QPS
// and burst (as each of kube-controller-manager's controllers has its own
// client and token bucket). Every Client made from
// c this way shares one connection pool (HTTP/2: one connection), which
// presents no client certificate: an apiserver that sees one believes it
// before a bearer token.
func (c *Client) WithTokenSource(ts TokenSource, userAgent string) *Client {
	c.tokenHTTPOnce.Do(func() {
		tr := c.http.Transport
		if t, ok := tr.(*http.Transport); ok && t.TLSClientConfig != nil {
			t = t.Clone()
			t.TLSClientConfig.Certificates, t.TLSClientConfig.GetClientCertificate = nil, nil
			tr = t
		}
		c.tokenHTTP = &http.Client{Transport: tr}
	})
	return &Client{base: c.base, http: c.tokenHTTP, tokens: ts, userAgent: userAgent, timeout: c.timeout, protobuf: c.protobuf,
		maxRetries: c.maxRetries, limiter: newLimiter(c.qps, c.burst), qps: c.qps, burst: c.burst}
}

// NewTransport returns the HTTP transport Clients use by default. HTTP/2
// multiplexes every request and watch of a component over one connection;
// pings detect a dead connection, so a watch on a vanished server fails
// within about 45s instead of hanging until TCP gives up.
func NewTransport(tlsCfg *tls.Config) *http.Transport {
	if tlsCfg != nil {
		tlsCfg = tlsCfg.Clone()
	}
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:       tlsCfg,
		TLSHandshakeTimeout:   10 * time.Second,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   25,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
		HTTP2: &http.HTTP2Config{
			SendPingTimeout: 30 * time.Second,
			PingTimeout:     15 * time.Second,
		},
	}
}

// Host returns the apiserver's base URL.
func (c *Client) Host() string { return c.base.String() }

// Do sends a request to path (e.g. "/api/v1/namespaces/default/pods") and
// decodes the JSON answer into out, unless out is nil; a *[]byte gets the
// raw body. body is sent as is if it is a []byte and as JSON otherwise; nil
// sends no body. A non-2xx answer is returned as *apierrors.StatusError.
func (c *Client) Do(ctx context.Context, method, path string, query url.Values, body, out any) error {
	return c.do(ctx, call{method: method, path: path, query: query, body: body, contentType: "application/json"}, out)
}

// GetAs reads path asking for the media types in accept, and returns the
// body and the Content-Type the server chose among them (a client that
// asks for aggregated discovery learns from it which form it got). path
// may end in a query ("/debug/pprof/profile?seconds=10").
func (c *Client) GetAs(ctx context.Context, path, accept string) (body []byte, contentType string, err error) {
	path, rawQuery, _ := strings.Cut(path, "?")
	query, err := url.ParseQuery(rawQuery)
	if err != nil {
		return nil, "", fmt.Errorf("client: GET %s: %w", path, err)
	}
	data, resp, err := c.exchange(ctx, call{method: http.MethodGet, path: path, query: query, accept: accept})
	if err != nil {
		return nil, "", err
	}
	return data, resp.Header.Get("Content-Type"), nil
}

// call is one request; gr and name only improve error messages.
type call struct {
	method      string
	path        string
	query       url.Values
	body        any
	contentType string
	gr          schema.GroupResource
	name        string
	// typed calls carry k8s.io/api objects, so they may go as protobuf.
	typed bool
	// accept, if set, is the Accept header (a conversion such as
	// aggregated discovery); otherwise JSON, or protobuf for typed calls.
	accept string
}

func (c *Client) do(ctx context.Context, cl call, out any) error {
	data, resp, err := c.exchange(ctx, cl)
	if err != nil {
		return err
	}
	if out == nil || len(data) == 0 {
		return nil
	}
	if raw, ok := out.(*[]byte); ok {
		*raw = data
		return nil
	}
	if isProtobuf(resp) {
		err = decodeProtobuf(data, out)
	} else {
		err = sigsjson.UnmarshalCaseSensitivePreserveInts(data, out)
	}
	if err != nil {
		return fmt.Errorf("client: %s %s: decode response: %w", cl.method, cl.path, err)
	}
	return nil
}

// exchange sends cl and returns the whole answer: its body, read, and
// the response for its headers; a non-2xx answer is a *StatusError.
func (c *Client) exchange(ctx context.Context, cl call) ([]byte, *http.Response, error) {
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	resp, err := c.send(ctx, cl)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, fmt.Errorf("client: %s %s: read response: %w", cl.method, cl.path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, nil, decodeError(resp, data, cl)
	}
	return data, resp, nil
}

func isProtobuf(resp *http.Response) bool {
	return strings.HasPrefix(resp.Header.Get("Content-Type"), protobufMediaType)
}

// send performs the request and returns the response with its body unread;
// the caller closes it.
func (c *Client) send(ctx context.Context, cl call) (*http.Response, error) {
	if c.limiter != nil {
		if err := c.limiter.Wait(ctx); err != nil {
			return nil, fmt.Errorf("client: rate limiter: %w", err)
		}
	}
	useProtobuf := c.protobuf && cl.typed
	contentType := cl.contentType
	var payload []byte // nil: no body
	switch b := cl.body.(type) {
	case nil:
	case []byte:
		payload = b
	default:
		if useProtobuf && contentType == jsonMediaType {
			data, ok, err := encodeProtobuf(b)
			if err != nil {
				return nil, err
			}
			if ok {
				payload, contentType = data, protobufMediaType
				break
			}
		}
		data, err := json.Marshal(b)
		if err != nil {
			return nil, fmt.Errorf("client: encode request: %w", err)
		}
		payload = data
	}
	for attempt := 1; ; attempt++ {
		resp, err := c.sendOnce(ctx, cl, payload, contentType, useProtobuf)
		if err != nil {
			return nil, err
		}
		wait, retry := retryAfter(resp)
		if !retry || attempt > c.maxRetries {
			return resp, nil
		}
		// As client-go: the apiserver refused the request before handling
		// it (429, or a 5xx that says when to come back), so it is sent
		// again, whatever its verb.
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, fmt.Errorf("client: %s %s: %w", cl.method, cl.path, ctx.Err())
		}
		if c.limiter != nil {
			if err := c.limiter.Wait(ctx); err != nil {
				return nil, fmt.Errorf("client: rate limiter: %w", err)
			}
		}
	}
}

// defaultMaxRetries is how many times a request the apiserver asks to
// retry later is sent again (client-go's default).
const defaultMaxRetries = 10

// retryAfter reports whether resp asks the client to send its request
// again, and after how long: a 429, or a 5xx, with a Retry-After in
// seconds, as client-go reads it.
func retryAfter(resp *http.Response) (time.Duration, bool) {
	if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode < 500 {
		return 0, false
	}
	h := resp.Header.Get("Retry-After")
	if h == "" {
		return 0, false
	}
	secs, err := strconv.Atoi(h)
	if err != nil || secs < 0 {
		return 0, false
	}
	return time.Duration(secs) * time.Second, true
}

// sendOnce sends the request once.
func (c *Client) sendOnce(ctx context.Context, cl call, payload []byte, contentType string, useProtobuf bool) (*http.Response, error) {
	var body io.Reader
	if payload != nil {
		body = bytes.NewReader(payload)
	}
	u := *c.base
	u.Path += cl.path
	u.RawQuery = cl.query.Encode()
	req, err := http.NewRequestWithContext(ctx, cl.method, u.String(), body)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	switch {
	case cl.accept != "":
		req.Header.Set("Accept", cl.accept)
	case useProtobuf:
		req.Header.Set("Accept", acceptProtobuf)
	default:
		req.Header.Set("Accept", jsonMediaType)
	}
	req.Header.Set("User-Agent", c.userAgent)
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	token := c.token
	if c.tokens != nil {
		if token, err = c.tokens.Token(ctx); err != nil {
			return nil, fmt.Errorf("client: %s %s: bearer token: %w", cl.method, cl.path, err)
		}
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("client: %s %s: %w", cl.method, cl.path, err)
	}
	if inv, ok := c.tokens.(interface{ Invalidate(token string) }); ok && resp.StatusCode == http.StatusUnauthorized {
		inv.Invalidate(token) // the next request gets a new token
	}
	return resp, nil
}

// decodeError turns a failed response into *apierrors.StatusError. The
// apiserver answers every error with a metav1.Status; anything else (a proxy,
// a panic page) becomes a generic error for the HTTP code, as in client-go.
func decodeError(resp *http.Response, body []byte, cl call) error {
	var st metav1.Status
	var isStatus bool
	if isProtobuf(resp) {
		st, isStatus = decodeProtobufStatus(body)
	} else {
		isStatus = json.Unmarshal(body, &st) == nil && st.Kind == "Status"
	}
	if isStatus {
		if st.Code == 0 {
			st.Code = int32(resp.StatusCode)
		}
		if st.Status == "" {
			st.Status = metav1.StatusFailure
		}
		return &apierrors.StatusError{ErrStatus: st}
	}
	retryAfter, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	msg := strings.TrimSpace(string(body))
	return apierrors.NewGenericServerResponse(resp.StatusCode, cl.method, cl.gr, cl.name, msg, retryAfter, true)
}

// IsGone reports whether err means the requested resourceVersion is too old
// (HTTP 410), and a watcher must list again. Unlike apierrors.IsGone it also
// matches reason Expired, which is what Kubernetes sends for a watch.
func IsGone(err error) bool {
	var s apierrors.APIStatus
	return errors.As(err, &s) && s.Status().Code == http.StatusGone
}
