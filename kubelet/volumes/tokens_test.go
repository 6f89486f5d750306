package volumes

import (
	"context"
	"errors"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestTokenRefreshAt(t *testing.T) {
	issued := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		lifetime time.Duration
		want     time.Duration // after issue
	}{
		{name: "an hour's token is replaced after 48 minutes (80%)", lifetime: time.Hour, want: 48 * time.Minute},
		{name: "the admission plugin's 3607s token after 80% of it", lifetime: 3607 * time.Second, want: 3607 * time.Second * 4 / 5},
		{name: "a 10-minute token after 8 minutes", lifetime: 10 * time.Minute, want: 8 * time.Minute},
		{name: "a 48-hour token after 24 hours, not 38.4", lifetime: 48 * time.Hour, want: 24 * time.Hour},
		{name: "a 30-hour token after 24 hours (80% would be 24h)", lifetime: 30 * time.Hour, want: 24 * time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tokenRefreshAt(podToken{issued: issued, expires: issued.Add(tt.lifetime)})
			if got.Sub(issued) != tt.want {
				t.Errorf("refresh after %v, want %v", got.Sub(issued), tt.want)
			}
		})
	}
}

// fakeTokenAPI issues numbered tokens valid for what was asked, from a
// fake clock, or fails.
type fakeTokenAPI struct {
	now   time.Time
	fail  bool
	calls []*authenticationv1.TokenRequest
}

func (f *fakeTokenAPI) request(_ context.Context, namespace, account string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	f.calls = append(f.calls, req)
	if f.fail {
		return nil, errors.New("apiserver unreachable")
	}
	out := req.DeepCopy()
	out.Status.Token = namespace + "/" + account + "#" + string(rune('0'+len(f.calls)))
	out.Status.ExpirationTimestamp = metav1.NewTime(f.now.Add(time.Duration(*req.Spec.ExpirationSeconds) * time.Second))
	return out, nil
}

func TestTokenManager(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	api := &fakeTokenAPI{now: start}
	m := newTokenManager(api.request)
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "ns", UID: "u1"}, Spec: corev1.PodSpec{ServiceAccountName: "sa"}}

	tok, at, err := m.get(ctx, pod, "", 3600, start)
	if err != nil || tok != "ns/sa#1" || !at.Equal(start.Add(48*time.Minute)) {
		t.Fatalf("first get: %q %v %v", tok, at, err)
	}
	req := api.calls[0]
	if ref := req.Spec.BoundObjectRef; ref == nil || ref.Kind != "Pod" || ref.Name != "app" || ref.UID != "u1" || len(req.Spec.Audiences) != 0 {
		t.Errorf("request = %+v, want bound to the pod with the apiserver's audience", req.Spec)
	}
	if tok, _, _ := m.get(ctx, pod, "", 3600, start.Add(47*time.Minute)); tok != "ns/sa#1" || len(api.calls) != 1 {
		t.Errorf("before 80%%: %q after %d requests, want the cached token", tok, len(api.calls))
	}
	if tok, _, _ := m.get(ctx, pod, "vault", 3600, start); tok != "ns/sa#2" || api.calls[1].Spec.Audiences[0] != "vault" {
		t.Errorf("another audience: %q, want its own token", tok)
	}
	api.now = start.Add(48 * time.Minute)
	if tok, at, _ := m.get(ctx, pod, "", 3600, api.now); tok != "ns/sa#3" || !at.Equal(api.now.Add(48*time.Minute)) {
		t.Errorf("at 80%%: %q due %v, want a new token", tok, at)
	}
	api.fail = true
	now := api.now.Add(50 * time.Minute)
	if tok, at, err := m.get(ctx, pod, "", 3600, now); err != nil || tok != "ns/sa#3" || !at.Equal(now.Add(TokenRetry)) {
		t.Errorf("refresh failing while the old token is valid: %q %v %v, want it and a retry", tok, at, err)
	}
	if _, _, err := m.get(ctx, pod, "", 3600, api.now.Add(time.Hour)); err == nil {
		t.Errorf("refresh failing once the old token expired: no error")
	}
	m.forgetPod("u1")
	if len(m.cache) != 0 {
		t.Errorf("after the pod went: %d tokens cached", len(m.cache))
	}
	if _, _, err := m.get(ctx, &corev1.Pod{}, "", 3600, start); err == nil {
		t.Errorf("a pod without an account: no error")
	}
}
