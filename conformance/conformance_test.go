package main

import (
	"bytes"
	"encoding/xml"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

const testScope = `# comment
batch node 20m
area [sig-node] Pods
area [sig-node] Pods Extended
area [sig-node] Kubelet
out needs a registry -- no registry is reachable here

batch api 5m
area [sig-api-machinery] Watchers
`

func mustScope(t *testing.T, text string) *Scope {
	t.Helper()
	s, err := ParseScope(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestParseScope(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		wantErr string
	}{
		{"a well-formed scope parses", testScope, ""},
		{"an area before any batch is refused", "area [sig-node] Pods\n", "before the first batch"},
		{"a batch without a limit is refused", "batch node\narea [sig-node] Pods\n", "want `batch NAME LIMIT`"},
		{"a batch with a zero limit is refused", "batch node 0s\narea [sig-node] Pods\n", "positive duration"},
		{"a batch without areas is refused", "batch node 5m\n", "has no area"},
		{"an exclusion without a reason is refused", "batch node 5m\narea [sig-node] Pods\nout x\n", "want `out REGEX -- REASON`"},
		{"an exclusion with a bad regex is refused", "batch node 5m\narea [sig-node] Pods\nout ( -- why\n", "missing closing )"},
		{"an unknown keyword is refused", "batch node 5m\nfocus x\n", "unknown keyword"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseScope(strings.NewReader(tt.text))
			if tt.wantErr == "" && err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
	s := mustScope(t, testScope)
	if len(s.Batches) != 2 || s.Batches[0].Limit != 20*time.Minute || len(s.Batches[0].Areas) != 3 || len(s.Batches[0].Out) != 1 {
		t.Errorf("parsed %+v", s.Batches)
	}
}

func TestBatchSelectsSpecs(t *testing.T) {
	b := mustScope(t, testScope).Batches[0]
	focus := regexp.MustCompile(b.Focus())
	skip := regexp.MustCompile(b.Skip())
	tests := []struct {
		name     string
		spec     string
		wantArea string
		wantRun  bool // selected by focus and not skipped
	}{
		{"a conformance spec of an area runs", "[sig-node] Pods should be updated [NodeConformance] [Conformance]", "[sig-node] Pods", true},
		{"a spec counts for its longest area", "[sig-node] Pods Extended Pods Set QOS Class should be set [Conformance]", "[sig-node] Pods Extended", true},
		{"an area is a whole word: Kubelet is not KubeletManagedEtcHosts", "[sig-node] KubeletManagedEtcHosts should test kubelet managed /etc/hosts file [Conformance]", "", false},
		{"a spec that is not [Conformance] is left out", "[sig-node] Pods should support pod readiness gates [NodeConformance]", "", false},
		{"a spec of another sig is left out", "[sig-apps] Pods should run [Conformance]", "", false},
		{"an out-of-scope spec is skipped", "[sig-node] Kubelet needs a registry to pull [Conformance]", "[sig-node] Kubelet", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := b.Area(tt.spec); got != tt.wantArea {
				t.Errorf("area %q, want %q", got, tt.wantArea)
			}
			if got := focus.MatchString(tt.spec) && !skip.MatchString(tt.spec); got != tt.wantRun {
				t.Errorf("runs = %v, want %v (focus %s, skip %s)", got, tt.wantRun, b.Focus(), b.Skip())
			}
		})
	}
}

func TestParseSpecList(t *testing.T) {
	out := "The following spec names can be used with 'ginkgo run --focus/skip':\n" +
		"    test/e2e/common/node/pods.go:123: [sig-node] Pods should be updated [NodeConformance] [Conformance]\n" +
		"    test/e2e/apps/job.go:9: [sig-apps] Job should run a job to completion [Conformance]\n\n"
	got := parseSpecList(out)
	want := []string{"[sig-node] Pods should be updated [NodeConformance] [Conformance]", "[sig-apps] Job should run a job to completion [Conformance]"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestClassify(t *testing.T) {
	b := mustScope(t, testScope).Batches[0]
	spec := "[sig-node] Pods should be updated [Conformance]"
	skipped := func(msg string) *junitCase {
		return &junitCase{Status: "skipped", Skipped: &struct {
			Message string `xml:"message,attr"`
		}{msg}}
	}
	tests := []struct {
		name        string
		spec        string
		c           *junitCase
		run         BatchRun
		wantOutcome Outcome
		wantReason  string
	}{
		{"a passed spec passes", spec, &junitCase{Status: "passed"}, BatchRun{}, Passed, ""},
		{"a failed spec gives the first line of its failure", spec,
			&junitCase{Status: "failed", Failure: &junitText{Text: "\n  [FAILED] expected 2 got 1\n  at pods.go:10\n"}}, BatchRun{}, Failed, "[FAILED] expected 2 got 1"},
		{"a timed-out spec fails", spec, &junitCase{Status: "timedout", Failure: &junitText{Message: "A suite timeout occurred"}}, BatchRun{}, Failed, "timedout: A suite timeout occurred"},
		{"a spec the suite skips is not run, with the suite's reason", spec, skipped("skipped - Only supported for providers [gce]"), BatchRun{}, NotRun, "skipped - Only supported for providers [gce]"},
		{"a spec skipped after the batch's limit says so", spec, skipped("skipped"), BatchRun{LimitHit: true}, NotRun, "not reached: the batch hit its time limit (skipped)"},
		{"a spec missing from the results was not reached", spec, nil, BatchRun{}, NotRun, "not reached: the batch ended first"},
		{"a spec of a batch that could not start says why", spec, nil, BatchRun{Error: "the nodes were not Ready"}, NotRun, "the batch did not run: the nodes were not Ready"},
		{"an out-of-scope spec is never counted as passed", "[sig-node] Pods needs a registry [Conformance]", &junitCase{Status: "passed"}, BatchRun{}, OutOfScope, "no registry is reachable here"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := classify(b, tt.spec, tt.c, tt.run)
			if r.Outcome != tt.wantOutcome || r.Reason != tt.wantReason {
				t.Errorf("got %s %q, want %s %q", r.Outcome, r.Reason, tt.wantOutcome, tt.wantReason)
			}
			if r.Area != "[sig-node] Pods" {
				t.Errorf("area %q", r.Area)
			}
		})
	}
}

// TestReportFromResults runs the report over a results directory as the
// driver leaves it and checks the counts, the table lines and the JUnit.
func TestReportFromResults(t *testing.T) {
	s := mustScope(t, testScope)
	dir := t.TempDir()
	node := filepath.Join(dir, "node")
	if err := os.MkdirAll(node, 0o755); err != nil {
		t.Fatal(err)
	}
	specs := []string{
		"[sig-node] Pods should pass [Conformance]",
		"[sig-node] Pods should fail [Conformance]",
		"[sig-node] Kubelet should not be reached [Conformance]",
		"[sig-node] Kubelet needs a registry [Conformance]",
	}
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(node, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("specs.txt", strings.Join(specs, "\n")+"\n")
	write("batch.json", `{"batch":"node","seconds":600,"limitHit":false}`)
	write("junit_01.xml", `<?xml version="1.0"?><testsuites><testsuite name="Kubernetes e2e suite">
<testcase name="[SynchronizedBeforeSuite]" status="passed"></testcase>
<testcase name="[It] [sig-node] Pods should pass [Conformance]" status="passed" time="3"></testcase>
<testcase name="[It] [sig-node] Pods should fail [Conformance]" status="failed" time="9"><failure type="failed">[FAILED] the pod | never ran
stack</failure></testcase>
</testsuite></testsuites>`)
	results, run, err := BatchResults(s.Batches[0], node)
	if err != nil {
		t.Fatal(err)
	}
	counts := count(s, results)
	wantCounts := map[string][5]int{ // passed, failed, not run, out of scope, total
		"[sig-node] Pods":    {1, 1, 0, 0, 2},
		"[sig-node] Kubelet": {0, 0, 1, 1, 2},
		"all":                {1, 1, 1, 1, 4},
	}
	if len(counts) != len(wantCounts) {
		t.Errorf("%d rows, want %d: %+v", len(counts), len(wantCounts), counts)
	}
	for _, c := range counts {
		if got := [5]int{c.Passed, c.Failed, c.NotRun, c.OutOfScope, c.Total}; got != wantCounts[c.Area] {
			t.Errorf("%s: %v, want %v", c.Area, got, wantCounts[c.Area])
		}
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, s, ReportHeader{Suite: "k8s.io/kubernetes v1.37.2", Cluster: "a test", Date: time.Unix(0, 0)}, []BatchRun{run}, results); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"| `[sig-node] Pods` | 1 | 1 | 0 | 0 | 2 |",
		"| **all** | 1 | 1 | 1 | 1 | 4 |",
		"| node | 10.0 | 20m0s |",
		"| should fail [Conformance] | failed: [FAILED] the pod \\| never ran |",
		"| needs a registry [Conformance] | out of scope: no registry is reachable here |",
		"| should not be reached [Conformance] | not run: not reached: the batch ended first |",
	} {
		if !strings.Contains(md.String(), line+"\n") {
			t.Errorf("the report lacks the line %q:\n%s", line, md.String())
		}
	}
	var junit bytes.Buffer
	if err := WriteJUnit(&junit, s, results); err != nil {
		t.Fatal(err)
	}
	var parsed junitOutSuites
	if err := xml.Unmarshal(junit.Bytes(), &parsed); err != nil {
		t.Fatal(err)
	}
	if parsed.Tests != 4 || parsed.Failures != 1 || parsed.Skipped != 2 || len(parsed.Suites) != 2 {
		t.Errorf("junit tests=%d failures=%d skipped=%d suites=%d, want 4 1 2 2", parsed.Tests, parsed.Failures, parsed.Skipped, len(parsed.Suites))
	}
}

func TestRefsByRepo(t *testing.T) {
	list := "registry.k8s.io/e2e-test-images/agnhost:2.66.1\nregistry.k8s.io/e2e-test-images/agnhost:2.55\nregistry.k8s.io/pause:3.10.2\nlocalhost:5000/untagged\n"
	got := refsByRepo(list)
	tests := []struct {
		name string
		repo string
		want []string
	}{
		{"every tag of a repository is kept, sorted", "registry.k8s.io/e2e-test-images/agnhost", []string{"registry.k8s.io/e2e-test-images/agnhost:2.55", "registry.k8s.io/e2e-test-images/agnhost:2.66.1"}},
		{"a single reference is its repository's", "registry.k8s.io/pause", []string{"registry.k8s.io/pause:3.10.2"}},
		{"a reference without a tag (a port is not a tag) is dropped", "localhost:5000/untagged", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if strings.Join(got[tt.repo], ",") != strings.Join(tt.want, ",") {
				t.Errorf("%s: %v, want %v", tt.repo, got[tt.repo], tt.want)
			}
		})
	}
}
