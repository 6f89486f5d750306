package dns

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	miekg "github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// eventually retries check until it passes or 10s went by.
func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type errString string

func (e errString) Error() string { return string(e) }

// TestDNSWatchesAndRegisters runs the whole DNS against a fake apiserver:
// it registers the kube-dns Service and its own slice, answers from
// what it watches, puts its slice back when someone deletes it, and
// removes it on shutdown.
func TestDNSWatchesAndRegisters(t *testing.T) {
	api, c := newFakeAPI(t)
	resolvConf := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(resolvConf, []byte("nameserver 127.0.0.1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// What an earlier server on this node left, and one on another node.
	stale := makeSlice("kube-system", "kube-dns-192-0-2-9", "kube-dns").Ready("", "192.0.2.9").Obj()
	stale.Labels["endpointslice.kubernetes.io/managed-by"] = "minik-dns"
	stale.Endpoints[0].NodeName = ptr.To("n1")
	api.put(t, "endpointslices", stale, true)
	other := stale.DeepCopy()
	other.Name, other.Endpoints[0].NodeName = "kube-dns-192-0-2-10", ptr.To("n2")
	api.put(t, "endpointslices", other, true)

	d, err := New(Config{Client: c, Listen: "127.0.0.1:0", ResolvConf: resolvConf, Register: true, NodeName: "n1",
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	_, port, _ := net.SplitHostPort(d.Addr())
	sliceName := "kube-dns-127-0-0-1-" + port

	var svc *corev1.Service
	eventually(t, "the kube-dns Service is created", func() error {
		if svc = api.service("kube-system", "kube-dns"); svc == nil {
			return errString("no kube-dns Service")
		}
		return nil
	})
	t.Run("the kube-dns Service is kubeadm's, without a selector", func(t *testing.T) {
		if svc.Spec.ClusterIP != "10.96.0.10" || len(svc.Spec.Selector) != 0 || svc.Labels["k8s-app"] != "kube-dns" {
			t.Errorf("clusterIP %q selector %v labels %v, want 10.96.0.10, none, k8s-app=kube-dns", svc.Spec.ClusterIP, svc.Spec.Selector, svc.Labels)
		}
		var ports []string
		for _, p := range svc.Spec.Ports {
			ports = append(ports, p.Name+"/"+string(p.Protocol)+"/"+p.TargetPort.String())
		}
		if want := []string{"dns/UDP/53", "dns-tcp/TCP/53"}; !slices.Equal(ports, want) {
			t.Errorf("ports %v, want %v", ports, want)
		}
	})
	eventually(t, "the DNS's slice is created", func() error {
		if api.slice("kube-system", sliceName) == nil {
			return errString("no slice " + sliceName)
		}
		return nil
	})
	t.Run("the slice names this server, ready, owned by the Service", func(t *testing.T) {
		sl := api.slice("kube-system", sliceName)
		if sl.Labels["kubernetes.io/service-name"] != "kube-dns" || sl.Labels["endpointslice.kubernetes.io/managed-by"] != "minik-dns" {
			t.Errorf("labels %v", sl.Labels)
		}
		if len(sl.Endpoints) != 1 || !slices.Equal(sl.Endpoints[0].Addresses, []string{"127.0.0.1"}) ||
			!*sl.Endpoints[0].Conditions.Ready || *sl.Endpoints[0].NodeName != "n1" {
			t.Errorf("endpoints %+v, want 127.0.0.1 ready on n1", sl.Endpoints)
		}
		if len(sl.Ports) != 2 || *sl.Ports[0].Port != int32(atoi(t, port)) || *sl.Ports[0].Protocol != corev1.ProtocolUDP {
			t.Errorf("ports %+v, want dns UDP and dns-tcp TCP on %s", sl.Ports, port)
		}
		if len(sl.OwnerReferences) != 1 || sl.OwnerReferences[0].UID != svc.UID {
			t.Errorf("owner %+v, want the kube-dns Service %s", sl.OwnerReferences, svc.UID)
		}
	})

	eventually(t, "a stale slice of this node is removed", func() error {
		if api.slice("kube-system", "kube-dns-192-0-2-9") != nil {
			return errString("the stale slice of this node is still there")
		}
		return nil
	})
	t.Run("the slice of another node stays", func(t *testing.T) {
		if api.slice("kube-system", "kube-dns-192-0-2-10") == nil {
			t.Errorf("the slice of another node was removed")
		}
	})

	resolve := func(name string, qtype uint16) func() error {
		return func() error {
			m := new(miekg.Msg).SetQuestion(name, qtype)
			resp, err := miekg.Exchange(m, d.Addr())
			if err != nil {
				return err
			}
			if len(resp.Answer) == 0 {
				return errString("no answer: " + miekg.RcodeToString[resp.Rcode])
			}
			return nil
		}
	}
	eventually(t, "kube-dns resolves from the watch", resolve("kube-dns.kube-system.svc.cluster.local.", miekg.TypeA))
	eventually(t, "its endpoint has a name", resolve("127-0-0-1.kube-dns.kube-system.svc.cluster.local.", miekg.TypeA))

	api.put(t, "services", makeService("default", "web").IPs("10.96.0.20").Obj(), true)
	eventually(t, "a new Service resolves", resolve("web.default.svc.cluster.local.", miekg.TypeA))

	api.delete("endpointslices", "kube-system", sliceName)
	eventually(t, "a deleted slice is put back", func() error {
		if api.slice("kube-system", sliceName) == nil {
			return errString("slice still gone")
		}
		return nil
	})

	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	done <- nil // for the cleanup
	if api.slice("kube-system", sliceName) != nil {
		t.Errorf("slice %s still there after shutdown", sliceName)
	}
	if api.service("kube-system", "kube-dns") == nil {
		t.Errorf("the kube-dns Service went away with the server; other servers may use it")
	}

	// A restart on the same address lists everything again: it answers
	// for what changed while it was down and registers itself again.
	api.put(t, "services", makeService("default", "late").IPs("10.96.0.21").Obj(), true)
	d2, err := New(Config{Client: c, Listen: d.Addr(), ResolvConf: resolvConf, Register: true, NodeName: "n1",
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	done2 := make(chan error, 1)
	go func() { done2 <- d2.Run(ctx2) }()
	defer func() { cancel2(); <-done2 }()
	d = d2
	eventually(t, "after a restart, a Service made while it was down resolves", resolve("late.default.svc.cluster.local.", miekg.TypeA))
	eventually(t, "after a restart, the old ones still resolve", resolve("web.default.svc.cluster.local.", miekg.TypeA))
	eventually(t, "after a restart, its slice is back", func() error {
		if api.slice("kube-system", sliceName) == nil {
			return errString("no slice " + sliceName)
		}
		return nil
	})
}

func atoi(t *testing.T, s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
