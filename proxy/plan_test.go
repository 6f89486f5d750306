package proxy

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"sigs.k8s.io/knftables"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// dumpRuleset programs rs from scratch into a fake nftables and returns
// the table as `nft` commands, without the fixed part (testdata/base.nft)
// unless withBase.
func dumpRuleset(t *testing.T, cfg Config, rs *Ruleset, withBase bool) string {
	t.Helper()
	fake := knftables.NewFake(knftables.IPv4Family, TableName)
	tx := fake.NewTransaction()
	writeFull(tx, cfg, rs)
	if err := fake.Run(context.Background(), tx); err != nil {
		t.Fatalf("full transaction: %v\n%s", err, tx)
	}
	dump := fake.Dump()
	if withBase {
		return dump
	}
	base := map[string]bool{}
	for _, l := range strings.Split(dumpRuleset(t, cfg, &Ruleset{}, true), "\n") {
		base[l] = true
	}
	var out []string
	for _, l := range strings.Split(dump, "\n") {
		if !base[l] {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./proxy -run %s -update to create it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("ruleset differs from %s (go test ./proxy -update rewrites it)\n--- got:\n%s\n--- want:\n%s", path, got, want)
	}
}

func TestBaseRuleset(t *testing.T) {
	golden(t, "base.nft", dumpRuleset(t, testConfig, &Ruleset{}, true))
}

func TestPlan(t *testing.T) {
	web := func() *svcBuilder {
		return makeService("default", "web", "10.96.0.10").Port("http", tcp, 80, num(8080))
	}
	webSlice := func() *sliceBuilder { return makeSlice("default", "web-abc", "web").Port("http", tcp, 8080) }
	tests := []struct {
		name     string // sentence; the golden file is testdata/NAME.nft with spaces as dashes
		services []*corev1.Service
		slices   []*discoveryv1.EndpointSlice
	}{{
		name:     "a ClusterIP Service balances randomly across its two ready endpoints",
		services: []*corev1.Service{web().Obj()},
		slices:   []*discoveryv1.EndpointSlice{webSlice().Endpoint("10.244.0.5", "node-a", ready).Endpoint("10.244.1.7", "node-b", ready).Obj()},
	}, {
		name:     "a named targetPort resolves to the port the slice gives that name",
		services: []*corev1.Service{makeService("shop", "api", "10.96.3.3").Port("grpc", tcp, 9000, named("grpc-port")).Obj()},
		slices:   []*discoveryv1.EndpointSlice{makeSlice("shop", "api-1", "api").Port("grpc", tcp, 50051).Endpoint("10.244.2.2", "node-b", ready).Obj()},
	}, {
		name: "a Service with two ports gets a chain per port",
		services: []*corev1.Service{makeService("default", "db", "10.96.0.20").
			Port("sql", tcp, 5432, num(5432)).Port("metrics", tcp, 9187, num(9187)).Obj()},
		slices: []*discoveryv1.EndpointSlice{makeSlice("default", "db-1", "db").Port("sql", tcp, 5432).Port("metrics", tcp, 9187).
			Endpoint("10.244.0.9", "node-a", ready).Obj()},
	}, {
		name:     "a UDP Service is matched on udp",
		services: []*corev1.Service{makeService("kube-system", "kube-dns", "10.96.0.10").Port("dns", udp, 53, num(53)).Port("dns-tcp", tcp, 53, num(53)).Obj()},
		slices: []*discoveryv1.EndpointSlice{makeSlice("kube-system", "kube-dns-1", "kube-dns").Port("dns", udp, 53).Port("dns-tcp", tcp, 53).
			Endpoint("10.244.0.3", "node-a", ready).Obj()},
	}, {
		name:     "a NodePort Service is reached on every local address and masqueraded",
		services: []*corev1.Service{web().NodePort(30080).Obj()},
		slices:   []*discoveryv1.EndpointSlice{webSlice().Endpoint("10.244.1.7", "node-b", ready).Obj()},
	}, {
		name:     "a LoadBalancer Service is a NodePort Service",
		services: []*corev1.Service{web().NodePort(30080).Type(corev1.ServiceTypeLoadBalancer).Obj()},
		slices:   []*discoveryv1.EndpointSlice{webSlice().Endpoint("10.244.1.7", "node-b", ready).Obj()},
	}, {
		name:     "loadBalancerSourceRanges drop other sources before DNAT",
		services: []*corev1.Service{web().NodePort(30080).LoadBalancer([]string{"203.0.113.10"}, " 192.168.0.0/24", "198.51.100.7/32").Obj()},
		slices:   []*discoveryv1.EndpointSlice{webSlice().Endpoint("10.244.1.7", "node-b", ready).Obj()},
	}, {
		name:     "a Service without ready endpoints rejects its ClusterIP and NodePort",
		services: []*corev1.Service{web().NodePort(30080).Obj()},
		slices:   []*discoveryv1.EndpointSlice{webSlice().Endpoint("10.244.1.7", "node-b", notReady).Endpoint("10.244.1.8", "node-b", notServingTerm).Obj()},
	}, {
		name:     "a Service with no slice at all rejects",
		services: []*corev1.Service{web().Obj()},
	}, {
		name:     "session affinity sends a known client back to its endpoint",
		services: []*corev1.Service{web().Affinity(600).Obj()},
		slices:   []*discoveryv1.EndpointSlice{webSlice().Endpoint("10.244.0.5", "node-a", ready).Endpoint("10.244.1.7", "node-b", ready).Obj()},
	}, {
		name:     "externalTrafficPolicy Local sends external traffic to local endpoints only",
		services: []*corev1.Service{web().NodePort(30080).ExternalLocal().Obj()},
		slices:   []*discoveryv1.EndpointSlice{webSlice().Endpoint("10.244.0.5", "node-a", ready).Endpoint("10.244.1.7", "node-b", ready).Obj()},
	}, {
		name:     "externalTrafficPolicy Local without a local endpoint drops external traffic",
		services: []*corev1.Service{web().NodePort(30080).ExternalLocal().Obj()},
		slices:   []*discoveryv1.EndpointSlice{webSlice().Endpoint("10.244.1.7", "node-b", ready).Obj()},
	}, {
		name:     "internalTrafficPolicy Local uses local endpoints only",
		services: []*corev1.Service{web().InternalLocal().Obj()},
		slices:   []*discoveryv1.EndpointSlice{webSlice().Endpoint("10.244.0.5", "node-a", ready).Endpoint("10.244.1.7", "node-b", ready).Obj()},
	}, {
		name:     "internalTrafficPolicy Local without a local endpoint drops",
		services: []*corev1.Service{web().InternalLocal().Obj()},
		slices:   []*discoveryv1.EndpointSlice{webSlice().Endpoint("10.244.1.7", "node-b", ready).Obj()},
	}, {
		name:     "serving terminating endpoints are used when no endpoint is ready",
		services: []*corev1.Service{web().Obj()},
		slices: []*discoveryv1.EndpointSlice{webSlice().Endpoint("10.244.0.5", "node-a", servingTerm).
			Endpoint("10.244.1.7", "node-b", notServingTerm).Endpoint("10.244.1.8", "node-b", notReady).Obj()},
	}, {
		name:     "serving terminating endpoints are left out while one is ready",
		services: []*corev1.Service{web().Obj()},
		slices:   []*discoveryv1.EndpointSlice{webSlice().Endpoint("10.244.0.5", "node-a", servingTerm).Endpoint("10.244.1.7", "node-b", ready).Obj()},
	}, {
		name: "headless and ExternalName Services get no rules",
		services: []*corev1.Service{
			makeService("default", "headless", corev1.ClusterIPNone).Port("http", tcp, 80, num(8080)).Obj(),
			makeService("default", "external", "").Port("http", tcp, 80, num(80)).ExternalName("example.com").Obj(),
		},
		slices: []*discoveryv1.EndpointSlice{makeSlice("default", "headless-1", "headless").Port("http", tcp, 8080).Endpoint("10.244.0.5", "node-a", ready).Obj()},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rs := Plan(testConfig, tc.services, tc.slices)
			got := dumpRuleset(t, testConfig, rs, false)
			golden(t, strings.ReplaceAll(tc.name, " ", "-")+".nft", got)
		})
	}
}
