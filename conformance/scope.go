package main

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"
)

// Scope is conformance/scope.txt: the batches of areas minik is measured
// on, and the specs this machine cannot run.
type Scope struct {
	Batches []*Batch
}

// Batch is a set of areas run together, in one cluster and one ginkgo run
// stopped after Limit.
type Batch struct {
	Name  string
	Limit time.Duration
	Areas []string // spec name prefixes, e.g. "[sig-node] Pods"
	Out   []Exclusion
}

// Exclusion is a spec this machine cannot run, with the reason.
type Exclusion struct {
	Pattern *regexp.Regexp
	Reason  string
}

// ParseScope reads scope.txt (its header comment describes the format).
func ParseScope(r io.Reader) (*Scope, error) {
	s := &Scope{}
	var cur *Batch
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		keyword, rest, _ := strings.Cut(line, " ")
		rest = strings.TrimSpace(rest)
		if keyword != "batch" && cur == nil {
			return nil, fmt.Errorf("line %d: %q before the first batch", n, keyword)
		}
		switch keyword {
		case "batch":
			name, limit, ok := strings.Cut(rest, " ")
			d, err := time.ParseDuration(strings.TrimSpace(limit))
			if !ok || err != nil || d <= 0 {
				return nil, fmt.Errorf("line %d: want `batch NAME LIMIT` with a positive duration, got %q", n, line)
			}
			cur = &Batch{Name: name, Limit: d}
			s.Batches = append(s.Batches, cur)
		case "area":
			if rest == "" {
				return nil, fmt.Errorf("line %d: an area needs a spec name prefix", n)
			}
			cur.Areas = append(cur.Areas, rest)
		case "out":
			pattern, reason, ok := strings.Cut(rest, " -- ")
			if !ok || strings.TrimSpace(reason) == "" {
				return nil, fmt.Errorf("line %d: want `out REGEX -- REASON`, got %q", n, line)
			}
			re, err := regexp.Compile(strings.TrimSpace(pattern))
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
			cur.Out = append(cur.Out, Exclusion{Pattern: re, Reason: strings.TrimSpace(reason)})
		default:
			return nil, fmt.Errorf("line %d: unknown keyword %q (batch, area, out)", n, keyword)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for _, b := range s.Batches {
		if len(b.Areas) == 0 {
			return nil, fmt.Errorf("batch %s has no area", b.Name)
		}
	}
	return s, nil
}

// Batch returns the batch named name, or nil.
func (s *Scope) Batch(name string) *Batch {
	for _, b := range s.Batches {
		if b.Name == name {
			return b
		}
	}
	return nil
}

// Focus is the ginkgo --focus regex of the batch's [Conformance] specs.
// It is not anchored: ginkgo matches it against a text that does not
// start with the spec's name.
func (b *Batch) Focus() string {
	quoted := make([]string, len(b.Areas))
	for i, a := range b.Areas {
		quoted[i] = regexp.QuoteMeta(a + " ")
	}
	return `(?:` + strings.Join(quoted, "|") + `).*\[Conformance\]`
}

// Skip is the ginkgo --skip regex of the batch's out-of-scope specs, or
// "" when there is none.
func (b *Batch) Skip() string {
	parts := make([]string, len(b.Out))
	for i, o := range b.Out {
		parts[i] = `(?:` + o.Pattern.String() + `)`
	}
	return strings.Join(parts, "|")
}

// Area returns the longest area of the batch that spec belongs to, or ""
// when it belongs to none or is not a [Conformance] spec.
func (b *Batch) Area(spec string) string {
	if !strings.Contains(spec, "[Conformance]") {
		return ""
	}
	best := ""
	for _, a := range b.Areas {
		if strings.HasPrefix(spec, a+" ") && len(a) > len(best) {
			best = a
		}
	}
	return best
}

// OutReason returns why spec is out of scope, if it is.
func (b *Batch) OutReason(spec string) (string, bool) {
	for _, o := range b.Out {
		if o.Pattern.MatchString(spec) {
			return o.Reason, true
		}
	}
	return "", false
}

// areaOrder numbers the areas in scope.txt's order.
func (s *Scope) areaOrder() map[string]int {
	order := map[string]int{}
	for _, b := range s.Batches {
		for _, a := range b.Areas {
			order[a] = len(order)
		}
	}
	return order
}
