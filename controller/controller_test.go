package controller

import (
	"context"
	"slices"
	"strings"
	"testing"

	"minik/client"
	"minik/controller/nodelifecycle"
)

func TestRunRejectsBadConfig(t *testing.T) {
	c, err := client.New(client.Config{Host: "https://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"a config without a client is refused", Config{}, "Client is required"},
		{"an unknown controller name is refused, listing the known ones", Config{Client: c, Controllers: []string{"no-such-controller"}}, "unknown controller \"no-such-controller\" (known: garbagecollector"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := Run(context.Background(), tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Run = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestNamesListsEveryControllerOnce(t *testing.T) {
	names := Names()
	for _, want := range []string{"garbagecollector", "namespace", "replicaset", "replicationcontroller", "deployment", "nodeipam",
		"nodelifecycle", "taint-eviction-controller", "disruption", "daemonset", "job", "cronjob", "statefulset"} {
		if !slices.Contains(names, want) {
			t.Errorf("%s missing from %v", want, names)
		}
	}
	if len(slices.Compact(slices.Sorted(slices.Values(names)))) != len(names) {
		t.Errorf("duplicate names in %v", names)
	}
}

func TestEvictionPolicyDefaultsOnlyWhenUnset(t *testing.T) {
	c, err := client.New(client.Config{Host: "https://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	noEviction := nodelifecycle.EvictionConfig{Rate: 0, SecondaryRate: 0, UnhealthyZoneThreshold: 0.55, LargeClusterSizeThreshold: 50}
	cases := []struct {
		name     string
		eviction *nodelifecycle.EvictionConfig
		want     nodelifecycle.EvictionConfig
	}{
		{"a config that leaves the policy out gets Kubernetes' defaults", nil, nodelifecycle.DefaultEvictionConfig()},
		{"rates of 0 (--node-eviction-rate 0) are kept: no node is tainted", &noEviction, noEviction},
		{"an all-zero policy is kept as it is", &nodelifecycle.EvictionConfig{}, nodelifecycle.EvictionConfig{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Client: c, Eviction: tc.eviction}
			if err := cfg.defaults(); err != nil {
				t.Fatal(err)
			}
			if *cfg.Eviction != tc.want {
				t.Fatalf("eviction policy %+v, want %+v", *cfg.Eviction, tc.want)
			}
		})
	}
}
