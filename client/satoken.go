package client

import (
	"context"
	"fmt"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A service account's token, as kube-controller-manager gets one for each
// controller with --use-service-account-credentials: the issuer (a client
// allowed to create serviceaccounts and serviceaccounts/token) makes the
// account if it is missing, then asks the TokenRequest API for an unbound
// token, which is kept until TokenRefreshAt.
//
//	Token ─▶ cached and fresh? ─▶ token
//	       └▶ POST serviceaccounts/NAME/token ─▶ 404? POST serviceaccounts, again ─▶ cache
//	401 on a request (the account was deleted) ─▶ Invalidate ─▶ the next Token asks anew

// ServiceAccountTokenSeconds is the lifetime asked for a token.
const ServiceAccountTokenSeconds = 3600

// maxTokenAge is the age at which a token is replaced whatever its
// lifetime (the kubelet's maxTTL).
const maxTokenAge = 24 * time.Hour

// TokenRefreshAt is when a token must be replaced: once 80% of its
// lifetime has passed, or 24 hours after it was issued, whichever comes
// first, as the kubelet's token manager does.
func TokenRefreshAt(issued, expires time.Time) time.Time {
	at := expires.Add(-expires.Sub(issued) / 5)
	if day := issued.Add(maxTokenAge); day.Before(at) {
		at = day
	}
	return at
}

// ServiceAccountTokens is a TokenSource of one service account's tokens.
type ServiceAccountTokens struct {
	issuer          *Client
	namespace, name string
	now             func() time.Time

	mu              sync.Mutex
	token           string
	issued, expires time.Time
}

// NewServiceAccountTokens returns the TokenSource of account ns/name,
// whose tokens issuer requests.
func NewServiceAccountTokens(issuer *Client, namespace, name string) *ServiceAccountTokens {
	return &ServiceAccountTokens{issuer: issuer, namespace: namespace, name: name, now: time.Now}
}

// Token returns a valid token, asking for a new one once the cached one is
// due for renewal. While the apiserver cannot give one, the old token is
// used as long as it is valid.
func (s *ServiceAccountTokens) Token(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if s.token != "" && now.Before(TokenRefreshAt(s.issued, s.expires)) {
		return s.token, nil
	}
	tr, err := s.request(ctx)
	if apierrors.IsNotFound(err) {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: s.name, Namespace: s.namespace}}
		if _, err = s.issuer.ServiceAccounts().Create(ctx, sa, metav1.CreateOptions{}); err == nil || apierrors.IsAlreadyExists(err) {
			tr, err = s.request(ctx)
		}
	}
	if err != nil {
		if s.token != "" && now.Before(s.expires) {
			return s.token, nil
		}
		return "", fmt.Errorf("a token for service account %s/%s: %w", s.namespace, s.name, err)
	}
	granted := int64(ServiceAccountTokenSeconds)
	if tr.Spec.ExpirationSeconds != nil {
		granted = *tr.Spec.ExpirationSeconds // the apiserver may shorten it
	}
	s.token, s.expires = tr.Status.Token, tr.Status.ExpirationTimestamp.Time
	s.issued = s.expires.Add(-time.Duration(granted) * time.Second)
	return s.token, nil
}

// Invalidate drops token if it is the cached one: the apiserver refused it.
func (s *ServiceAccountTokens) Invalidate(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.token == token {
		s.token = ""
	}
}

func (s *ServiceAccountTokens) request(ctx context.Context) (*authenticationv1.TokenRequest, error) {
	secs := int64(ServiceAccountTokenSeconds)
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs}}
	out := &authenticationv1.TokenRequest{}
	err := s.issuer.Do(ctx, "POST", "/api/v1/namespaces/"+s.namespace+"/serviceaccounts/"+s.name+"/token", nil, req, out)
	return out, err
}
