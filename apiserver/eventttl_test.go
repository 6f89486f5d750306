package apiserver

import (
	"context"
	"net/http"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Events expire EventTTL after their last write, as kube-apiserver's
// --event-ttl makes them: etcd deletes them with their lease.
func TestEventsExpire(t *testing.T) {
	ts := startTestServerWith(t, func(c *Config) { c.EventTTL = 10 * time.Minute })
	ctx := context.Background()
	const event = `{"apiVersion":"v1","kind":"Event","metadata":{"name":"e1","namespace":"default"},
		"involvedObject":{"kind":"Pod","namespace":"default","name":"p"},"reason":"Tested","message":"m","type":"Normal","count":1}`
	if code, body := ts.do(t, "POST", "/api/v1/namespaces/default/events", event); code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	etcd := ts.srv.cfg.Etcd
	lease := func() clientv3.LeaseID {
		t.Helper()
		resp, err := etcd.Get(ctx, ts.srv.events.Key("default", "e1"))
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("event's key: %v %v", resp, err)
		}
		return clientv3.LeaseID(resp.Kvs[0].Lease)
	}
	created := lease()
	ttl, err := etcd.TimeToLive(ctx, created)
	if err != nil {
		t.Fatal(err)
	}
	// 10m, and the 5% of it (30s) the lease is handed out for.
	if ttl.GrantedTTL != 630 {
		t.Fatalf("event's lease granted for %ds, want 630", ttl.GrantedTTL)
	}

	// A repeat (kubectl describe's count) keeps it alive: it is attached
	// again, here to the same lease, still handed out.
	if code, body := ts.do(t, "PATCH", "/api/v1/namespaces/default/events/e1", `{"count":2}`,
		"Content-Type", "application/merge-patch+json"); code != http.StatusOK {
		t.Fatalf("patch: %d %s", code, body)
	}
	if l := lease(); l != created {
		t.Fatalf("patched event on lease %x, want %x", l, created)
	}

	if _, err := etcd.Revoke(ctx, created); err != nil { // its expiry, now
		t.Fatal(err)
	}
	for _, path := range []string{"/api/v1/namespaces/default/events/e1", "/apis/events.k8s.io/v1/namespaces/default/events/e1"} {
		if code, _ := ts.do(t, "GET", path, ""); code != http.StatusNotFound {
			t.Fatalf("GET %s after the lease ended: %d, want 404", path, code)
		}
	}
	// Other kinds never expire.
	resp, err := etcd.Get(ctx, "/registry/namespaces/default")
	if err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].Lease != 0 {
		t.Fatalf("namespace default: %v %v", resp, err)
	}
}
