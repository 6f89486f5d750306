package volumes

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik/client"
	"minik/kubelet/podstep"
)

// Service-account tokens for projected volumes, as the kubelet's token
// manager gets them: through the TokenRequest API, with the node's own
// credential, bound to the pod (its name and uid). A token is kept per
// (pod, account, audience, lifetime) and replaced once 80% of its lifetime
// has passed or it is 24 hours old; if the apiserver cannot give a new
// one, the old one is used as long as it is valid.
//
//	projected volume ─▶ tokenManager.get ─▶ cached and fresh? ─▶ token
//	                                      └▶ POST serviceaccounts/NAME/token {boundObjectRef: Pod} ─▶ cache
//	pod worker ◀── wake at the earliest refresh time (podstep.State.volumesRefreshAt) ──┘

// TokenRetry is how soon a failed refresh is tried again.
const TokenRetry = 10 * time.Second

// tokenKey names one cached token.
type tokenKey struct {
	pod      types.UID
	account  string
	audience string
	seconds  int64
}

// podToken is a token the apiserver issued and the span it is valid for.
type podToken struct {
	token           string
	issued, expires time.Time
}

// tokenRefreshAt is when a token must be replaced (client.TokenRefreshAt).
func tokenRefreshAt(t podToken) time.Time { return client.TokenRefreshAt(t.issued, t.expires) }

// tokenManager caches the pods' tokens. request asks the apiserver.
type tokenManager struct {
	request func(ctx context.Context, namespace, account string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error)

	mu    sync.Mutex
	cache map[tokenKey]podToken
}

func newTokenManager(request func(ctx context.Context, namespace, account string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error)) *tokenManager {
	return &tokenManager{request: request, cache: map[tokenKey]podToken{}}
}

// requestTokenFrom is tokenManager's request through the apiserver.
func requestTokenFrom(do func(ctx context.Context, method, path string, body, out any) error) func(context.Context, string, string, *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	return func(ctx context.Context, namespace, account string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
		out := &authenticationv1.TokenRequest{}
		err := do(ctx, http.MethodPost, "/api/v1/namespaces/"+namespace+"/serviceaccounts/"+account+"/token", req, out)
		return out, err
	}
}

// get returns the pod's token for audience ("" for the apiserver's own)
// and lifetime, and when to come back for a fresh one.
func (m *tokenManager) get(ctx context.Context, pod *corev1.Pod, audience string, seconds int64, now time.Time) (string, time.Time, error) {
	account := pod.Spec.ServiceAccountName
	if account == "" {
		return "", time.Time{}, podstep.ConfigErrorf("cannot get a service account token for a pod without a service account")
	}
	key := tokenKey{pod: pod.UID, account: account, audience: audience, seconds: seconds}
	m.mu.Lock()
	cached, ok := m.cache[key]
	m.mu.Unlock()
	if ok && now.Before(tokenRefreshAt(cached)) {
		return cached.token, tokenRefreshAt(cached), nil
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: &seconds,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}}}
	if audience != "" {
		req.Spec.Audiences = []string{audience}
	}
	tr, err := m.request(ctx, pod.Namespace, account, req)
	if err != nil {
		if ok && now.Before(cached.expires) {
			// The old token still works: use it, and try again soon.
			return cached.token, now.Add(TokenRetry), nil
		}
		return "", time.Time{}, fmt.Errorf("requesting a token for service account %s/%s: %w", pod.Namespace, account, err)
	}
	t := podToken{token: tr.Status.Token, expires: tr.Status.ExpirationTimestamp.Time}
	granted := seconds
	if tr.Spec.ExpirationSeconds != nil {
		granted = *tr.Spec.ExpirationSeconds // the apiserver may shorten it
	}
	t.issued = t.expires.Add(-time.Duration(granted) * time.Second)
	m.mu.Lock()
	m.cache[key] = t
	m.mu.Unlock()
	return t.token, tokenRefreshAt(t), nil
}

// forgetPod drops the pod's tokens, once it is gone.
func (m *tokenManager) forgetPod(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.cache {
		if k.pod == uid {
			delete(m.cache, k)
		}
	}
}
