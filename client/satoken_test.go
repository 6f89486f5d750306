package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A fake apiserver: the account exists once created; each token request
// issues token-N valid for an hour; /api/v1/pods answers 401 to any token
// but the newest.
type tokenServer struct {
	mu       sync.Mutex
	exists   bool
	issued   int
	now      func() time.Time
	requests []string
}

func (s *tokenServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
	status := func(code int, reason metav1.StatusReason) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: "Failure", Code: int32(code), Reason: reason})
	}
	switch {
	case r.URL.Path == "/api/v1/namespaces/kube-system/serviceaccounts" && r.Method == "POST":
		s.exists = true
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"kind":"ServiceAccount","apiVersion":"v1","metadata":{"name":"job-controller","namespace":"kube-system"}}`))
	case strings.HasSuffix(r.URL.Path, "/serviceaccounts/job-controller/token"):
		if !s.exists {
			status(http.StatusNotFound, metav1.StatusReasonNotFound)
			return
		}
		s.issued++
		secs := int64(3600)
		tr := authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs},
			Status: authenticationv1.TokenRequestStatus{Token: fmt.Sprintf("token-%d", s.issued), ExpirationTimestamp: metav1.NewTime(s.now().Add(time.Hour))}}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(tr)
	case r.URL.Path == "/api/v1/pods":
		if r.Header.Get("Authorization") != fmt.Sprintf("Bearer token-%d", s.issued) {
			status(http.StatusUnauthorized, metav1.StatusReasonUnauthorized)
			return
		}
		_, _ = w.Write([]byte(`{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[]}`))
	default:
		status(http.StatusNotFound, metav1.StatusReasonNotFound)
	}
}

func TestServiceAccountTokensCreateRenewAndRecover(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fake := &tokenServer{now: func() time.Time { return now }}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	issuer, err := New(Config{Host: srv.URL, JSON: true})
	if err != nil {
		t.Fatal(err)
	}
	tokens := NewServiceAccountTokens(issuer, "kube-system", "job-controller")
	tokens.now = func() time.Time { return now }
	c := issuer.WithTokenSource(tokens, "test")
	ctx := context.Background()
	list := func() error { return c.Do(ctx, "GET", "/api/v1/pods", nil, nil, nil) }

	// The account is missing: it is created, then the token comes.
	if err := list(); err != nil {
		t.Fatalf("first request: %v", err)
	}
	if !fake.exists || fake.issued != 1 {
		t.Fatalf("exists %v, issued %d: want the account made and one token", fake.exists, fake.issued)
	}
	// Cached until 80% of its hour.
	now = now.Add(47 * time.Minute)
	if err := list(); err != nil || fake.issued != 1 {
		t.Fatalf("at 47m: %v, issued %d, want the cached token", err, fake.issued)
	}
	now = now.Add(2 * time.Minute)
	if err := list(); err != nil || fake.issued != 2 {
		t.Fatalf("at 49m: %v, issued %d, want a new token", err, fake.issued)
	}
	// A 401 (the account was deleted and made again) drops the token: the
	// request after it gets a new one.
	fake.mu.Lock()
	fake.issued++ // token-2 no longer works
	fake.mu.Unlock()
	if err := list(); err == nil {
		t.Fatal("want the 401 of the refused token")
	}
	if err := list(); err != nil || fake.issued != 4 {
		t.Fatalf("after the 401: %v, issued %d, want a fresh token", err, fake.issued)
	}
}

func TestTokenRefreshAt(t *testing.T) {
	issued := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		lifetime, want time.Duration
	}{{time.Hour, 48 * time.Minute}, {10 * time.Minute, 8 * time.Minute}, {48 * time.Hour, 24 * time.Hour}} {
		if got := TokenRefreshAt(issued, issued.Add(tt.lifetime)).Sub(issued); got != tt.want {
			t.Errorf("lifetime %v: refresh after %v, want %v", tt.lifetime, got, tt.want)
		}
	}
}
