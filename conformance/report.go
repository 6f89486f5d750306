package main

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Outcome is what became of one in-scope spec.
type Outcome string

const (
	Passed     Outcome = "passed"
	Failed     Outcome = "failed"
	NotRun     Outcome = "not run"      // skipped by the suite itself, or the batch ended first
	OutOfScope Outcome = "out of scope" // this machine cannot run it (scope.txt)
)

// SpecResult is one spec's line in the report.
type SpecResult struct {
	Batch, Area, Name string
	Outcome           Outcome
	Reason            string // one line: why it failed, was not run or is out of scope
	Detail            string // the failure's full text, for the JUnit file
	Seconds           float64
}

// BatchRun is what the driver records about a batch it ran (batch.json).
type BatchRun struct {
	Batch    string    `json:"batch"`
	Start    time.Time `json:"start"`
	Seconds  float64   `json:"seconds"`
	LimitHit bool      `json:"limitHit"`
	Error    string    `json:"error,omitempty"` // the cluster or the suite could not start
}

// junitSuites is the part of a ginkgo JUnit report the report reads.
type junitSuites struct {
	Suites []struct {
		Cases []junitCase `xml:"testcase"`
	} `xml:"testsuite"`
}

type junitCase struct {
	Name    string  `xml:"name,attr"`
	Status  string  `xml:"status,attr"`
	Time    float64 `xml:"time,attr"`
	Skipped *struct {
		Message string `xml:"message,attr"`
	} `xml:"skipped"`
	Failure *junitText `xml:"failure"`
	Error   *junitText `xml:"error"`
}

type junitText struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// readJUnit returns the testcases of a ginkgo JUnit file by spec name
// (without ginkgo's "[It] " leaf prefix).
func readJUnit(path string) (map[string]junitCase, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var suites junitSuites
	if err := xml.Unmarshal(data, &suites); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	cases := map[string]junitCase{}
	for _, s := range suites.Suites {
		for _, c := range s.Cases {
			if name, ok := strings.CutPrefix(c.Name, "[It] "); ok {
				cases[name] = c
			}
		}
	}
	return cases, nil
}

// classify turns a spec's testcase (nil: not in the report) into its
// outcome and one-line reason.
func classify(b *Batch, spec string, c *junitCase, run BatchRun) SpecResult {
	r := SpecResult{Batch: b.Name, Area: b.Area(spec), Name: spec}
	if reason, out := b.OutReason(spec); out {
		r.Outcome, r.Reason = OutOfScope, reason
		return r
	}
	switch {
	case c == nil && run.Error != "":
		r.Outcome, r.Reason = NotRun, "the batch did not run: "+run.Error
	case c == nil:
		r.Outcome, r.Reason = NotRun, "not reached: the batch ended first"
	case c.Status == "passed":
		r.Outcome = Passed
	case c.Status == "skipped" || c.Status == "pending":
		r.Outcome, r.Reason = NotRun, firstLine(skipMessage(c, run))
	default: // failed, panicked, interrupted, timedout, aborted
		r.Outcome = Failed
		text := failureText(c)
		r.Reason, r.Detail = firstLine(text), text
		if c.Status != "failed" {
			r.Reason = c.Status + ": " + r.Reason
		}
	}
	if c != nil {
		r.Seconds = c.Time
	}
	return r
}

func skipMessage(c *junitCase, run BatchRun) string {
	msg := ""
	if c.Skipped != nil {
		msg = c.Skipped.Message
	}
	if run.LimitHit && (msg == "skipped" || strings.Contains(msg, "interrupt")) {
		return fmt.Sprintf("not reached: the batch hit its time limit (%s)", msg)
	}
	return msg
}

func failureText(c *junitCase) string {
	for _, t := range []*junitText{c.Failure, c.Error} {
		if t == nil {
			continue
		}
		if s := strings.TrimSpace(t.Text); s != "" {
			return s
		}
		if s := strings.TrimSpace(t.Message); s != "" {
			return s
		}
	}
	return "(no message)"
}

// firstLine is the first non-empty line of s, at most 300 characters.
func firstLine(s string) string {
	for _, line := range strings.Split(s, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			if len(line) > 300 {
				line = line[:300] + "…"
			}
			return line
		}
	}
	return ""
}

// BatchResults reads a batch's results directory: specs.txt (the specs
// the batch selects, listed before it ran), batch.json and the suite's
// junit_01.xml.
func BatchResults(b *Batch, dir string) ([]SpecResult, BatchRun, error) {
	run := BatchRun{Batch: b.Name}
	data, err := os.ReadFile(filepath.Join(dir, "batch.json"))
	if err != nil {
		return nil, run, fmt.Errorf("batch %s was not run (%w)", b.Name, err)
	}
	if err := json.Unmarshal(data, &run); err != nil {
		return nil, run, err
	}
	specs, err := readLines(filepath.Join(dir, "specs.txt"))
	if err != nil {
		return nil, run, err
	}
	cases, err := readJUnit(filepath.Join(dir, "junit_01.xml"))
	if err != nil && !os.IsNotExist(err) {
		return nil, run, err
	}
	var out []SpecResult
	for _, spec := range specs {
		var c *junitCase
		if tc, ok := cases[spec]; ok {
			c = &tc
		}
		out = append(out, classify(b, spec, c, run))
	}
	return out, run, nil
}

func readLines(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var lines []string
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return lines, nil
}

// areaCount is one row of the report's summary.
type areaCount struct {
	Area                               string
	Passed, Failed, NotRun, OutOfScope int
	Total                              int
	areaOrder                          int
}

// count tallies results per area, in scope.txt's order, with a total row.
func count(s *Scope, results []SpecResult) []areaCount {
	order := s.areaOrder()
	byArea := map[string]*areaCount{}
	total := areaCount{Area: "all"}
	for _, r := range results {
		c := byArea[r.Area]
		if c == nil {
			c = &areaCount{Area: r.Area, areaOrder: order[r.Area]}
			byArea[r.Area] = c
		}
		for _, t := range []*areaCount{c, &total} {
			t.Total++
			switch r.Outcome {
			case Passed:
				t.Passed++
			case Failed:
				t.Failed++
			case NotRun:
				t.NotRun++
			case OutOfScope:
				t.OutOfScope++
			}
		}
	}
	rows := make([]areaCount, 0, len(byArea)+1)
	for _, c := range byArea {
		rows = append(rows, *c)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].areaOrder < rows[j].areaOrder })
	return append(rows, total)
}

// ReportHeader is what the report says about the run as a whole.
type ReportHeader struct {
	Suite   string // e.g. k8s.io/kubernetes v1.37.2
	Cluster string // how the cluster was started
	Date    time.Time
}

// WriteMarkdown writes REPORT.md: the counts per area, the batches' times,
// then every spec with its outcome, area by area.
func WriteMarkdown(w io.Writer, s *Scope, h ReportHeader, runs []BatchRun, results []SpecResult) error {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("# Conformance report\n\n")
	p("The `[Conformance]` specs of upstream's e2e suite (%s) in the areas of\n", h.Suite)
	p("[scope.txt](scope.txt), run by `make conformance` against %s,\n", h.Cluster)
	p("on %s. A spec out of scope needs what this machine cannot give; it is never\n", h.Date.UTC().Format("2006-01-02"))
	p("counted as passed.\n\n")
	p("| area | passed | failed | not run | out of scope | total |\n| --- | ---: | ---: | ---: | ---: | ---: |\n")
	for _, c := range count(s, results) {
		name := "`" + c.Area + "`"
		if c.Area == "all" {
			name = "**all**"
		}
		p("| %s | %d | %d | %d | %d | %d |\n", name, c.Passed, c.Failed, c.NotRun, c.OutOfScope, c.Total)
	}
	p("\n| batch | minutes | limit |\n| --- | ---: | --- |\n")
	var sum float64
	for _, r := range runs {
		b := s.Batch(r.Batch)
		note := b.Limit.String()
		if r.LimitHit {
			note += ", hit"
		}
		if r.Error != "" {
			note += ", did not run: " + firstLine(r.Error)
		}
		p("| %s | %.1f | %s |\n", r.Batch, r.Seconds/60, note)
		sum += r.Seconds
	}
	p("| **all** | %.1f | |\n", sum/60)
	area := ""
	for _, r := range sortedByArea(s, results) {
		if r.Area != area {
			area = r.Area
			p("\n## %s\n\n| spec | result |\n| --- | --- |\n", area)
		}
		result := string(r.Outcome)
		if r.Reason != "" {
			result += ": " + r.Reason
		}
		p("| %s | %s |\n", mdEscape(strings.TrimSpace(strings.TrimPrefix(r.Name, area))), mdEscape(result))
	}
	return nil
}

func sortedByArea(s *Scope, results []SpecResult) []SpecResult {
	order := s.areaOrder()
	out := append([]SpecResult(nil), results...)
	sort.SliceStable(out, func(i, j int) bool {
		if order[out[i].Area] != order[out[j].Area] {
			return order[out[i].Area] < order[out[j].Area]
		}
		return out[i].Name < out[j].Name
	})
	return out
}

func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "<", "&lt;", ">", "&gt;").Replace(s)
}

// junit types of the merged report.
type junitOutSuites struct {
	XMLName  xml.Name        `xml:"testsuites"`
	Tests    int             `xml:"tests,attr"`
	Failures int             `xml:"failures,attr"`
	Skipped  int             `xml:"skipped,attr"`
	Suites   []junitOutSuite `xml:"testsuite"`
}

type junitOutSuite struct {
	Name     string         `xml:"name,attr"`
	Tests    int            `xml:"tests,attr"`
	Failures int            `xml:"failures,attr"`
	Skipped  int            `xml:"skipped,attr"`
	Cases    []junitOutCase `xml:"testcase"`
}

type junitOutCase struct {
	Name      string     `xml:"name,attr"`
	Classname string     `xml:"classname,attr"`
	Status    string     `xml:"status,attr"`
	Time      float64    `xml:"time,attr"`
	Failure   *junitText `xml:"failure,omitempty"`
	Skipped   *struct {
		Message string `xml:"message,attr"`
	} `xml:"skipped,omitempty"`
}

// maxDetail bounds each failure's text in the JUnit file: the first lines
// say what failed; the rest is in the batch's own JUnit and log.
const maxDetail = 4000

// WriteJUnit writes the in-scope specs as JUnit, one testsuite per area.
func WriteJUnit(w io.Writer, s *Scope, results []SpecResult) error {
	out := junitOutSuites{}
	index := map[string]int{}
	for _, r := range sortedByArea(s, results) {
		i, ok := index[r.Area]
		if !ok {
			i = len(out.Suites)
			index[r.Area] = i
			out.Suites = append(out.Suites, junitOutSuite{Name: r.Area})
		}
		suite := &out.Suites[i]
		c := junitOutCase{Name: r.Name, Classname: r.Area, Status: string(r.Outcome), Time: r.Seconds}
		switch r.Outcome {
		case Failed:
			detail := r.Detail
			if len(detail) > maxDetail {
				detail = detail[:maxDetail] + "\n…"
			}
			c.Failure = &junitText{Message: r.Reason, Text: detail}
			suite.Failures++
			out.Failures++
		case NotRun, OutOfScope:
			c.Skipped = &struct {
				Message string `xml:"message,attr"`
			}{Message: string(r.Outcome) + ": " + r.Reason}
			suite.Skipped++
			out.Skipped++
		}
		suite.Tests++
		out.Tests++
		suite.Cases = append(suite.Cases, c)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
