package main

import (
	"slices"
	"testing"
)

func TestExpand(t *testing.T) {
	b := bench{"dns", []string{"-minik", "{bin}", "-plot", "{out}/x.png", "-coredns", "{coredns}"}, []string{"-services", "500"}}
	for _, tc := range []struct {
		name  string
		bench bench
		quick bool
		want  []string
	}{
		{"a quick run fills {bin} and {out}, leaves out what needs a build ({coredns} and its flag), and adds the quick arguments",
			b, true, []string{"-minik", "/b/minik", "-plot", "/o/x.png", "-services", "500"}},
		{"a full run without placeholders passes its arguments as they are",
			bench{"hollow", []string{"-nodes", "5000"}, []string{"-nodes", "200"}}, false, []string{"-nodes", "5000"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := expand(".", "/o", "/b/minik", tc.bench, tc.quick)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("expand = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestValueFindsTheFigureInItsBenchsLines(t *testing.T) {
	results := map[string]*result{"apiserver": {lines: []map[string]any{
		{"measurement": "etcd_put", "clients": 1.0, "ops_per_s": 900.0},
		{"measurement": "etcd_put", "clients": 16.0, "ops_per_s": 5000.0},
		{"measurement": "pod_create", "clients": 16.0, "objects_per_s": 3000.0},
	}}}
	for _, tc := range []struct {
		name   string
		figure figure
		want   any
		found  bool
	}{
		{"an integer to match equals the line's JSON number", figure{bench: "apiserver", match: map[string]any{"measurement": "etcd_put", "clients": 16}, field: "ops_per_s"}, 5000.0, true},
		{"a string to match must be equal", figure{bench: "apiserver", match: map[string]any{"measurement": "pod_create"}, field: "objects_per_s"}, 3000.0, true},
		{"a line without the field is not found", figure{bench: "apiserver", match: map[string]any{"measurement": "pod_create"}, field: "p99_ms"}, nil, false},
		{"a bench that did not run has no figures", figure{bench: "density", match: map[string]any{}, field: "p99_ms"}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := value(results, &tc.figure)
			if ok != tc.found || got != tc.want {
				t.Errorf("value = %v, %v; want %v, %v", got, ok, tc.want, tc.found)
			}
		})
	}
}

func TestEveryFigureComesFromABenchTheRunnerRuns(t *testing.T) {
	run := map[string]bool{}
	for _, b := range benches {
		run[b.name] = true
	}
	for _, f := range figures {
		if !run[f.bench] {
			t.Errorf("figure %q comes from bench %q, which is not run", f.name, f.bench)
		}
		if f.baseline != nil && f.baseline.bench != f.bench {
			t.Errorf("figure %q has a baseline from %q: a baseline is measured in the same run", f.name, f.baseline.bench)
		}
	}
}
