package record

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik/client"
)

// eventsServer answers every POST of an Event with it, after delay, and
// counts what it received and the most requests it held at once.
type eventsServer struct {
	delay    time.Duration
	received atomic.Int64
	inFlight atomic.Int64
	mu       sync.Mutex
	maxIn    int64
}

func (s *eventsServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	s.mu.Lock()
	s.maxIn = max(s.maxIn, n)
	s.mu.Unlock()
	body, _ := io.ReadAll(r.Body)
	time.Sleep(s.delay)
	s.received.Add(1)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(body)
}

func newRecorderFor(t *testing.T, s *eventsServer) *Recorder {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	c, err := client.New(client.Config{Host: srv.URL, JSON: true})
	if err != nil {
		t.Fatal(err)
	}
	return NewRecorder(c, "default-scheduler", "host-a")
}

func scheduledEvents(r *Recorder, n int) {
	for i := range n {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("p%d", i), UID: types.UID(fmt.Sprint(i))}}
		r.Eventf(pod, corev1.EventTypeNormal, "Scheduled", "Successfully assigned default/%s to n1", pod.Name)
	}
}

func waitReceived(t *testing.T, s *eventsServer, n int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for s.received.Load() < n && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := s.received.Load(); got != n {
		t.Fatalf("the apiserver received %d events, want %d", got, n)
	}
}

// A scheduler binding a burst of pods records one Scheduled event each;
// they are sent many at a time, as upstream's recorder does, so none
// waits behind a few slow requests or is dropped.
func TestABurstOfEventsIsSentInParallelAndNoneIsLost(t *testing.T) {
	s := &eventsServer{delay: 20 * time.Millisecond}
	r := newRecorderFor(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	scheduledEvents(r, 2000)
	waitReceived(t, s, 2000)
	cancel()
	<-done
	if s.maxIn <= 4 || s.maxIn > lanes {
		t.Errorf("at most %d events were in flight at once, want more than 4 and at most %d", s.maxIn, lanes)
	}
	if d := r.dropped.Load(); d != 0 {
		t.Errorf("%d events dropped", d)
	}
	r.qmu.Lock()
	defer r.qmu.Unlock()
	if len(r.lanes) != 0 || r.queued != 0 {
		t.Errorf("an idle recorder holds %d lanes and %d events", len(r.lanes), r.queued)
	}
}

// Events recorded before Run wait for it, up to maxQueued; the rest are
// dropped and counted.
func TestEventsWaitForRunUpToTheBound(t *testing.T) {
	s := &eventsServer{}
	r := newRecorderFor(t, s)
	scheduledEvents(r, maxQueued+5)
	if d := r.dropped.Load(); d != 5 {
		t.Fatalf("%d events dropped, want 5", d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go r.Run(ctx)
	waitReceived(t, s, maxQueued)
}
