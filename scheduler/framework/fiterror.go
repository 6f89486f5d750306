package framework

import (
	"fmt"
	"sort"
	"strings"
)

// FitError says why a pod fits no node, in the words users see in the
// FailedScheduling event:
//
//	0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu.
type FitError struct {
	NumAllNodes int
	// Statuses holds every rejected node's verdict.
	Statuses NodeToStatus
	// PreFilterMsg, if set, is the reason a PreFilter plugin rejected the
	// pod everywhere.
	PreFilterMsg string
	// PostFilterMsg is the preemption outcome, appended to the message.
	PostFilterMsg string
}

// Error implements error.
func (f *FitError) Error() string {
	var msg string
	if f.PreFilterMsg != "" {
		msg = fmt.Sprintf("0/%d nodes are available: %s.", f.NumAllNodes, f.PreFilterMsg)
	} else {
		msg = NodesAvailableMessage(f.NumAllNodes, f.Statuses)
	}
	if f.PostFilterMsg != "" {
		msg += " " + f.PostFilterMsg
	}
	return msg
}

// NodesAvailableMessage counts how many nodes gave each reason and
// formats "0/N nodes are available: COUNT REASON, ...." with the reasons
// sorted, as Kubernetes does.
func NodesAvailableMessage(numAllNodes int, statuses NodeToStatus) string {
	counts := map[string]int{}
	for _, s := range statuses {
		for _, r := range s.Reasons() {
			counts[r]++
		}
	}
	parts := make([]string, 0, len(counts))
	for r, n := range counts {
		parts = append(parts, fmt.Sprintf("%d %s", n, r))
	}
	sort.Strings(parts)
	return fmt.Sprintf("0/%d nodes are available: %s.", numAllNodes, strings.Join(parts, ", "))
}
