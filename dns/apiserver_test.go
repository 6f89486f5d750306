package dns

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	miekg "github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/client"
	"minik/internal/hostip"
	"minik/internal/testcluster"
)

// TestDNSAgainstAPIServer runs the DNS against a real `minik up`: the
// kube-dns Service gets 10.96.0.10 from the real allocator, the DNS's
// slice is accepted, records follow Services and slices written through
// the API, and the slice is gone after shutdown.
func TestDNSAgainstAPIServer(t *testing.T) {
	cl := testcluster.StartAPIOnly(t)
	c := cl.Client()
	resolvConf := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(resolvConf, []byte("nameserver 127.0.0.1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Not loopback: the API refuses loopback endpoints, as Kubernetes does.
	ip := hostip.PrimaryIPv4()
	d, err := New(Config{Client: c, Listen: net.JoinHostPort(ip, "0"), ResolvConf: resolvConf, Register: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	services := client.For[corev1.Service](c, ServicesResource)
	slices := client.For[discoveryv1.EndpointSlice](c, EndpointSlicesResource)
	_, port, _ := net.SplitHostPort(d.Addr())
	sliceName := "kube-dns-" + strings.ReplaceAll(ip, ".", "-") + "-" + port

	eventually(t, "the kube-dns Service has 10.96.0.10", func() error {
		svc, err := services.Get(ctx, ServiceNamespace, ServiceName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if svc.Spec.ClusterIP != "10.96.0.10" {
			return errString("clusterIP " + svc.Spec.ClusterIP)
		}
		return nil
	})
	eventually(t, "the DNS's slice is in the API", func() error {
		_, err := slices.Get(ctx, ServiceNamespace, sliceName, metav1.GetOptions{})
		return err
	})
	answers := func(name string, qtype uint16, want int) func() error {
		return func() error {
			resp, err := miekg.Exchange(new(miekg.Msg).SetQuestion(name, qtype), d.Addr())
			if err != nil {
				return err
			}
			if len(resp.Answer) != want {
				return errString(miekg.RcodeToString[resp.Rcode] + ": " + resp.String())
			}
			return nil
		}
	}
	eventually(t, "kube-dns resolves", answers("kube-dns.kube-system.svc.cluster.local.", miekg.TypeA, 1))

	headless := makeService("default", "db").Headless().Port("pg", 5432, corev1.ProtocolTCP).Obj()
	if _, err := services.Create(ctx, headless, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sl := makeSlice("default", "db-1", "db").Port("pg", 5432, corev1.ProtocolTCP).Ready("db-0", "10.244.0.5").Ready("db-1", "10.244.0.6").Obj()
	if _, err := slices.Create(ctx, sl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a headless Service answers its two endpoints", answers("db.default.svc.cluster.local.", miekg.TypeA, 2))
	eventually(t, "SRV lists both", answers("_pg._tcp.db.default.svc.cluster.local.", miekg.TypeSRV, 2))
	if err := services.Delete(ctx, "default", "db", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a deleted Service is gone", answers("db.default.svc.cluster.local.", miekg.TypeA, 0))

	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	done <- nil
	if _, err := slices.Get(context.Background(), ServiceNamespace, sliceName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("slice after shutdown: %v, want NotFound", err)
	}
}
