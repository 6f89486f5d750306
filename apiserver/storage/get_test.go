package storage

import (
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestServeGet(t *testing.T) {
	s := newPodStore(t, nil, 100)
	rev := s.create(t, makePod("a").Obj())
	s.waitSeen(t, rev)
	get := func(rv string) (string, error) {
		obj, err := s.ServeGet(ctxT(t), "ns", "a", rv)
		if err != nil {
			return "", err
		}
		return metaOf(obj).GetResourceVersion(), nil
	}
	for _, rv := range []string{"", "0", strconv.FormatInt(rev, 10)} {
		before := etcdGets(t)
		if got, err := get(rv); err != nil || got != strconv.FormatInt(rev, 10) {
			t.Errorf("resourceVersion %q: %q %v, want %d", rv, got, err, rev)
		}
		// Only "" reads etcd; the others are the cache's answers.
		if reads, want := etcdGets(t)-before, map[bool]uint64{true: 1, false: 0}[rv == ""]; reads != want {
			t.Errorf("resourceVersion %q: %d etcd reads, want %d", rv, reads, want)
		}
	}

	// After a write, "" reads etcd; "N" waits until the cache has N.
	rev2 := s.relabel(t, "a", "k", "v")
	if got, err := get(""); err != nil || got != strconv.FormatInt(rev2, 10) {
		t.Errorf(`"" after a write: %q %v, want etcd's %d`, got, err, rev2)
	}
	if got, err := get(strconv.FormatInt(rev2, 10)); err != nil || got != strconv.FormatInt(rev2, 10) {
		t.Errorf("not older than %d: %q %v", rev2, got, err)
	}

	start := time.Now()
	if _, err := get(strconv.FormatInt(rev2+1000, 10)); !apierrors.IsTimeout(err) || !apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge) {
		t.Errorf("a future resourceVersion: %v, want 504 Too large resource version", err)
	} else if time.Since(start) < freshTimeout {
		t.Errorf("answered after %v, before waiting %v", time.Since(start), freshTimeout)
	}
	if _, err := get("x"); !apierrors.IsBadRequest(err) {
		t.Errorf("resourceVersion x: %v, want 400", err)
	}
	for _, rv := range []string{"", "0"} {
		if _, err := s.ServeGet(ctxT(t), "ns", "missing", rv); !apierrors.IsNotFound(err) {
			t.Errorf("missing, resourceVersion %q: %v, want 404", rv, err)
		}
	}
}

// etcdGets counts the etcd reads the pod stores made so far.
func etcdGets(t *testing.T) uint64 {
	t.Helper()
	var m dto.Metric
	if err := etcdRequestDuration.WithLabelValues("get", "pods").(prometheus.Histogram).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}
