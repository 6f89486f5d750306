package leaderelection

import (
	"context"
	"sync"
	"testing"
	"time"

	"minik/client"
	"minik/client/kubeconfig"
	"minik/internal/testcluster"
)

func TestOneLeaderAtATimeAndFastTakeover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts minik up; skipped with -short")
	}
	c := testcluster.StartAPIOnly(t)
	kc, err := kubeconfig.Load(c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.NewFromKubeconfig(kc)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	leading := map[string]bool{}
	maxConcurrent := 0
	candidate := func(ctx context.Context, id string) {
		cfg := Config{Client: cl, Namespace: "kube-system", Name: "test-lock", Identity: id,
			LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 300 * time.Millisecond}
		_ = Run(ctx, cfg, func(ctx context.Context) {
			mu.Lock()
			leading[id] = true
			n := 0
			for _, v := range leading {
				if v {
					n++
				}
			}
			if n > maxConcurrent {
				maxConcurrent = n
			}
			mu.Unlock()
			<-ctx.Done()
			mu.Lock()
			leading[id] = false
			mu.Unlock()
		})
	}
	leader := func() string {
		mu.Lock()
		defer mu.Unlock()
		for id, v := range leading {
			if v {
				return id
			}
		}
		return ""
	}
	waitLeader := func(notID string, within time.Duration) (string, time.Duration) {
		start := time.Now()
		for time.Since(start) < within {
			if l := leader(); l != "" && l != notID {
				return l, time.Since(start)
			}
			time.Sleep(20 * time.Millisecond)
		}
		return "", within
	}

	ctxA, stopA := context.WithCancel(context.Background())
	ctxB, stopB := context.WithCancel(context.Background())
	defer stopB()
	go candidate(ctxA, "a")
	first, _ := waitLeader("", 10*time.Second)
	if first != "a" {
		t.Fatalf("first leader = %q, want a", first)
	}
	go candidate(ctxB, "b")
	time.Sleep(time.Second)
	if l := leader(); l != "a" {
		t.Fatalf("the standby took over a live lease: leader %q", l)
	}
	stopA() // a clean stop releases the lease
	next, took := waitLeader("a", 10*time.Second)
	if next != "b" {
		t.Fatalf("standby never took over")
	}
	if took > 2*time.Second {
		t.Errorf("takeover after a release took %v, want about one retry period", took)
	}
	mu.Lock()
	defer mu.Unlock()
	if maxConcurrent != 1 {
		t.Errorf("%d leaders at once", maxConcurrent)
	}
}
