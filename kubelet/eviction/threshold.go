// Package eviction is the kubelet's node-pressure eviction policy, as
// Kubernetes defines it: the eviction signals, hard thresholds in the
// kubelet's flag syntax, the node conditions they raise, admission under
// pressure, and the order in which pods are evicted. Everything here is
// pure except host.go, which reads the node's signals from the host,
// and loop.go, the driver that runs it every monitoring interval.
package eviction

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Signal is an eviction signal: a resource's availability on the node.
type Signal string

// The signals minik observes (Kubernetes' names). imagefs.* is not
// observed: minik has no separate image filesystem of its own.
const (
	// SignalMemoryAvailable is the node's memory capacity minus its
	// working set (usage without inactive file pages).
	SignalMemoryAvailable Signal = "memory.available"
	// SignalNodeFsAvailable is the free space of the kubelet's root dir
	// filesystem.
	SignalNodeFsAvailable Signal = "nodefs.available"
	// SignalNodeFsInodesFree is the free inodes of that filesystem.
	SignalNodeFsInodesFree Signal = "nodefs.inodesFree"
	// SignalPIDAvailable is the task limit (min of kernel.pid_max and
	// kernel.threads-max) minus the tasks running.
	SignalPIDAvailable Signal = "pid.available"
)

// Resources that the kubelet reclaims but that are not API resources.
const (
	resourceInodes corev1.ResourceName = "inodes"
	resourcePIDs   corev1.ResourceName = "pids"
)

// signalResource is the resource a signal measures; the eviction message
// names it ("The node was low on resource: memory.").
var signalResource = map[Signal]corev1.ResourceName{
	SignalMemoryAvailable:  corev1.ResourceMemory,
	SignalNodeFsAvailable:  corev1.ResourceEphemeralStorage,
	SignalNodeFsInodesFree: resourceInodes,
	SignalPIDAvailable:     resourcePIDs,
}

// signalCondition is the node condition a met threshold sets.
var signalCondition = map[Signal]corev1.NodeConditionType{
	SignalMemoryAvailable:  corev1.NodeMemoryPressure,
	SignalNodeFsAvailable:  corev1.NodeDiskPressure,
	SignalNodeFsInodesFree: corev1.NodeDiskPressure,
	SignalPIDAvailable:     corev1.NodePIDPressure,
}

// Threshold is one hard eviction threshold: the signal's available
// amount must not fall below Quantity, or below Percentage of capacity.
type Threshold struct {
	Signal Signal
	// Quantity is an absolute amount (bytes, inodes or PIDs); nil when
	// Percentage is used.
	Quantity *resource.Quantity
	// Percentage is a fraction of capacity in (0, 1).
	Percentage float32
}

// Amount is the threshold for a signal whose capacity is capacity.
func (t Threshold) Amount(capacity resource.Quantity) *resource.Quantity {
	if t.Quantity != nil {
		return t.Quantity
	}
	return resource.NewQuantity(int64(float64(capacity.Value())*float64(t.Percentage)), resource.BinarySI)
}

// String is the threshold in flag syntax.
func (t Threshold) String() string {
	if t.Quantity != nil {
		return string(t.Signal) + "<" + t.Quantity.String()
	}
	return string(t.Signal) + "<" + strconv.FormatFloat(float64(t.Percentage)*100, 'f', -1, 32) + "%"
}

// DefaultHard is the kubelet's default --eviction-hard on Linux, less
// imagefs.available<15% (minik observes no separate image filesystem).
const DefaultHard = "memory.available<100Mi,nodefs.available<10%,nodefs.inodesFree<5%"

// ParseThresholds parses --eviction-hard: comma-separated SIGNAL<VALUE,
// where VALUE is a quantity (100Mi, 1000) or a percentage of capacity
// (10%). As in the kubelet, 0% and 100% set no threshold, and a signal
// given twice is an error. The result is never nil: "" means no
// thresholds at all.
func ParseThresholds(s string) ([]Threshold, error) {
	out := []Threshold{}
	seen := map[Signal]bool{}
	for _, stmt := range strings.Split(s, ",") {
		stmt = strings.TrimSpace(stmt)
		if stmt == "" {
			continue
		}
		name, val, ok := strings.Cut(stmt, "<")
		if !ok {
			return nil, fmt.Errorf("eviction threshold %q: want SIGNAL<VALUE", stmt)
		}
		sig := Signal(strings.TrimSpace(name))
		if _, known := signalResource[sig]; !known {
			return nil, fmt.Errorf("unsupported eviction signal %v", sig)
		}
		if seen[sig] {
			return nil, fmt.Errorf("found duplicate eviction threshold for signal %v", sig)
		}
		seen[sig] = true
		t, err := parseValue(sig, strings.TrimSpace(val))
		if err != nil {
			return nil, err
		}
		if t != nil {
			out = append(out, *t)
		}
	}
	return out, nil
}

func parseValue(sig Signal, val string) (*Threshold, error) {
	if pct, ok := strings.CutSuffix(val, "%"); ok {
		if val == "0%" || val == "100%" {
			return nil, nil
		}
		f, err := strconv.ParseFloat(pct, 32)
		if err != nil {
			return nil, fmt.Errorf("eviction threshold %v: invalid percentage %q", sig, val)
		}
		if f < 0 || f > 100 {
			return nil, fmt.Errorf("eviction percentage threshold %v must be between 0%% and 100%%: %s", sig, val)
		}
		return &Threshold{Signal: sig, Percentage: float32(f / 100)}, nil
	}
	q, err := resource.ParseQuantity(val)
	if err != nil {
		return nil, fmt.Errorf("eviction threshold %v: %w", sig, err)
	}
	if q.Sign() <= 0 {
		return nil, fmt.Errorf("eviction threshold %v must be positive: %s", sig, &q)
	}
	return &Threshold{Signal: sig, Quantity: &q}, nil
}

// FormatThresholds is ParseThresholds' inverse, sorted by signal.
func FormatThresholds(ts []Threshold) string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.String()
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}
