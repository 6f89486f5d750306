package resourcequota

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/internal/quota"
)

// podQuota is quota q in namespace ns at resourceVersion 5, allowing 10
// pods, whose status says used pods (nil: no status yet).
func podQuota(used corev1.ResourceList) *corev1.ResourceQuota {
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "ns", ResourceVersion: "5"},
		Spec: corev1.ResourceQuotaSpec{Hard: list("pods", "10")}}
	if used != nil {
		q.Status = corev1.ResourceQuotaStatus{Hard: list("pods", "10"), Used: used}
	}
	return q
}

func TestPlan(t *testing.T) {
	now := time.Unix(1000, 0)
	one := Objects{{"pods", ""}: {pod("a", corev1.PodRunning, nil)}}
	for _, c := range []struct {
		name     string
		quotas   []*corev1.ResourceQuota
		objs     Objects
		wantUsed []string // the pods used of each status written
	}{
		{"a new quota gets its status", []*corev1.ResourceQuota{podQuota(nil)}, one, []string{"pods=1"}},
		{"a quota whose usage went down is rewritten", []*corev1.ResourceQuota{podQuota(list("pods", "2"))}, one, []string{"pods=1"}},
		{"a current quota is left alone", []*corev1.ResourceQuota{podQuota(list("pods", "1"))}, one, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := Plan(c.quotas, c.objs, now)
			var got []string
			for _, a := range out.Actions {
				if a.Type != UpdateStatus || a.String() != "UpdateStatus ns/q" {
					t.Errorf("action %v", a)
				}
				got = append(got, quota.String(a.Quota.Status.Used))
			}
			if !slices.Equal(got, c.wantUsed) || out.RequeueAfter != ResyncPeriod {
				t.Errorf("statuses written with used %v, requeue %v; want %v, %v", got, out.RequeueAfter, c.wantUsed, ResyncPeriod)
			}
		})
	}
	t.Run("a namespace without quotas needs nothing, not even a resync", func(t *testing.T) {
		if out := Plan(nil, one, now); len(out.Actions) != 0 || out.RequeueAfter != 0 {
			t.Errorf("plan %+v", out)
		}
	})
}

func TestNeedsLiveList(t *testing.T) {
	q := podQuota(list("pods", "2"))
	lower, higher := corev1.ResourceQuotaStatus{Used: list("pods", "1")}, corev1.ResourceQuotaStatus{Used: list("pods", "3")}
	for _, c := range []struct {
		name     string
		want     corev1.ResourceQuotaStatus
		kind     Kind
		cacheRev int64
		out      bool
	}{
		{"a cache older than the quota cannot lower its usage", lower, Kind{"pods", ""}, 4, true},
		{"a cache as new as the quota can", lower, Kind{"pods", ""}, 5, false},
		{"an older cache can raise it", higher, Kind{"pods", ""}, 4, false},
		{"an older cache of a kind the lowering does not concern is fine", lower, Kind{"configmaps", ""}, 4, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := NeedsLiveList(q, c.want, c.kind, c.cacheRev); got != c.out {
				t.Errorf("NeedsLiveList = %v, want %v", got, c.out)
			}
		})
	}
}
