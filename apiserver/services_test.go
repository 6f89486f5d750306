package apiserver

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/client"
)

const servicesPath = "/api/v1/namespaces/default/services"

func createService(ctx context.Context, c *client.Client, name, clusterIP string) (*corev1.Service, error) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{ClusterIP: clusterIP, Ports: []corev1.ServicePort{{Port: 80}}}}
	var out corev1.Service
	err := c.Do(ctx, "POST", servicesPath, nil, svc, &out)
	return &out, err
}

// TestConcurrentServiceCreates races creates in a range of 14 addresses:
// the kubernetes service holds one, and every other address goes to
// exactly one service; the rest find the range full. Creates that ask for
// the same address race too: one wins, the others get 422.
func TestConcurrentServiceCreates(t *testing.T) {
	ts := startTestServerWith(t, func(cfg *Config) { cfg.ServiceClusterIPRange = "10.0.0.0/28" })
	c := ts.client(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	var mu sync.Mutex
	var ips []string
	var holder string // the name of one service that got an IP
	var full, invalid int
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			svc, err := createService(ctx, c, fmt.Sprintf("auto-%d", i), "")
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ips = append(ips, svc.Spec.ClusterIP)
				holder = svc.Name
			case apierrors.IsInternalError(err) && strings.Contains(err.Error(), "failed to allocate a serviceIP: range is full"):
				full++
			default:
				t.Errorf("create auto-%d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	slices.Sort(ips)
	if len(ips) != 13 || len(slices.Compact(slices.Clone(ips))) != 13 || full != 7 {
		t.Fatalf("got %d services with IPs %v and %d full-range errors; want 13 distinct IPs and 7 errors", len(ips), ips, full)
	}

	// Free one address and race ten creates asking for it.
	var freed corev1.Service
	if err := c.Do(ctx, "GET", servicesPath+"/"+holder, nil, nil, &freed); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(ctx, "DELETE", servicesPath+"/"+holder, nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	wanted := freed.Spec.ClusterIP
	var won int
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := createService(ctx, c, fmt.Sprintf("want-%d", i), wanted)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won++
			case apierrors.IsInvalid(err) && strings.Contains(err.Error(), "provided IP is already allocated"):
				invalid++
			default:
				t.Errorf("create want-%d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	if won != 1 || invalid != 9 {
		t.Fatalf("%d creates got %s and %d were refused; want 1 and 9", won, wanted, invalid)
	}
}

// TestKubernetesEndpointsFollowTheLeases runs a second apiserver on the
// same etcd and adds the lease of a third that never renews it: the
// endpoints list every live apiserver, the silent one drops out after its
// TTL, and one that stops cleanly leaves at once.
func TestKubernetesEndpointsFollowTheLeases(t *testing.T) {
	ttl := time.Second
	ts := startTestServerWith(t, func(cfg *Config) { cfg.AdvertiseAddress, cfg.EndpointLeaseTTL = "192.0.2.1", ttl })
	c := ts.client(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	second := ts.srv.cfg
	second.AdvertiseAddress = "192.0.2.2"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	second.Listener = ln
	srv2, err := New(second)
	if err != nil {
		t.Fatal(err)
	}
	ctx2, stop2 := context.WithCancel(ctx)
	done2 := make(chan error, 1)
	go func() { done2 <- srv2.Run(ctx2) }()
	defer func() { stop2(); <-done2 }()

	etcd := ts.srv.cfg.Etcd
	lease, err := etcd.Grant(ctx, 6) // long enough to be seen on a loaded machine, short enough to expire
	if err != nil {
		t.Fatal(err)
	}
	if _, err := etcd.Put(ctx, masterLeasesPrefix+"192.0.2.3", "6443", clientv3.WithLease(lease.ID)); err != nil {
		t.Fatal(err)
	}

	waitEndpoints := func(want ...string) {
		t.Helper()
		var ep corev1.Endpoints
		var slice discoveryv1.EndpointSlice
		deadline := time.Now().Add(20 * time.Second)
		for {
			var got, gotSlice []string
			if c.Do(ctx, "GET", "/api/v1/namespaces/default/endpoints/kubernetes", nil, nil, &ep) == nil && len(ep.Subsets) == 1 {
				for _, a := range ep.Subsets[0].Addresses {
					got = append(got, a.IP)
				}
			}
			if c.Do(ctx, "GET", "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes", nil, nil, &slice) == nil {
				for _, e := range slice.Endpoints {
					gotSlice = append(gotSlice, e.Addresses...)
				}
			}
			if slices.Equal(got, want) && slices.Equal(gotSlice, want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("endpoints %v, slice %v; want %v", got, gotSlice, want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitEndpoints("192.0.2.1", "192.0.2.2", "192.0.2.3")
	waitEndpoints("192.0.2.1", "192.0.2.2") // 192.0.2.3 never renewed
	stop2()
	<-done2
	done2 <- nil // for the deferred stop
	waitEndpoints("192.0.2.1")
}

// TestTheMasterLeaseIsRenewedInPlace: each reconcile renews this
// apiserver's lease instead of granting another (a raft write less every
// few seconds, as kube-apiserver reuses its leases); a key deleted behind
// its back is written again under the same lease, a lease etcd lost is
// granted anew, and leaving removes the key.
func TestTheMasterLeaseIsRenewedInPlace(t *testing.T) {
	ts := startTestServer(t)
	ctx := t.Context()
	etcd := ts.srv.cfg.Etcd
	r := &endpointReconciler{srv: ts.srv, ip: "192.0.2.9", port: 6443}
	key := masterLeasesPrefix + r.ip
	reconcile := func(leaving bool) {
		t.Helper()
		if err := r.reconcile(ctx, leaving); err != nil {
			t.Fatal(err)
		}
	}
	leaseOfKey := func() clientv3.LeaseID {
		t.Helper()
		resp, err := etcd.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) == 0 {
			return 0
		}
		return clientv3.LeaseID(resp.Kvs[0].Lease)
	}

	reconcile(false)
	first := leaseOfKey()
	if first == 0 || first != r.lease {
		t.Fatalf("the key is under lease %x, the reconciler holds %x", first, r.lease)
	}
	reconcile(false)
	if got := leaseOfKey(); got != first || r.lease != first {
		t.Fatalf("a renewal moved the key to lease %x (reconciler: %x), want %x", got, r.lease, first)
	}
	if _, err := etcd.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	reconcile(false)
	if got := leaseOfKey(); got != first {
		t.Fatalf("the deleted key came back under lease %x, want %x", got, first)
	}
	if _, err := etcd.Revoke(ctx, first); err != nil {
		t.Fatal(err)
	}
	reconcile(false)
	if got := leaseOfKey(); got == 0 || got == first || got != r.lease {
		t.Fatalf("after its lease was lost the key is under %x (reconciler: %x), want a new lease", got, r.lease)
	}
	reconcile(true)
	if got := leaseOfKey(); got != 0 {
		t.Fatal("leaving left the key")
	}
}
