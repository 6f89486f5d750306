package printers

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// now is the fixed clock all tests print against.
var now = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }

func agoPtr(d time.Duration) *metav1.Time { t := ago(d); return &t }

func ptr[T any](v T) *T { return &v }

// printOne prints a single object of kind and returns its row.
func printOne(t *testing.T, kind string, obj runtime.Object) metav1.TableRow {
	t.Helper()
	table, err := ToTable(kind, []runtime.Object{obj}, IncludeNone, now)
	if err != nil {
		t.Fatalf("ToTable(%s): %v", kind, err)
	}
	if len(table.Rows) != 1 {
		t.Fatalf("ToTable(%s) gave %d rows, want 1", kind, len(table.Rows))
	}
	return table.Rows[0]
}

// cell returns the cell of row under the column named name.
func cell(t *testing.T, kind string, row metav1.TableRow, name string) any {
	t.Helper()
	for i, c := range Columns(kind) {
		if c.Name == name {
			return row.Cells[i]
		}
	}
	t.Fatalf("%s has no column %q", kind, name)
	return nil
}

// render lays a table out the way `kubectl get -o wide` does: upper-case
// headers, columns aligned. A last line lists the Go type of each cell,
// since the wire carries integers and booleans as JSON numbers and bools.
func render(t *testing.T, table *metav1.Table) string {
	t.Helper()
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 8, 3, ' ', 0)
	headers := make([]string, len(table.ColumnDefinitions))
	for i, c := range table.ColumnDefinitions {
		headers[i] = strings.ToUpper(c.Name)
	}
	fmt.Fprintln(w, strings.Join(headers, "\t"))
	var cellTypes []string
	for _, r := range table.Rows {
		if len(r.Cells) != len(table.ColumnDefinitions) {
			t.Fatalf("row %v has %d cells for %d columns", r.Cells, len(r.Cells), len(table.ColumnDefinitions))
		}
		cells := make([]string, len(r.Cells))
		rowTypes := make([]string, len(r.Cells))
		for i, c := range r.Cells {
			cells[i] = fmt.Sprint(c)
			rowTypes[i] = reflect.TypeOf(c).String()
		}
		if cellTypes == nil {
			cellTypes = rowTypes
		} else if !reflect.DeepEqual(cellTypes, rowTypes) {
			t.Fatalf("row %v has cell types %v, earlier rows %v", r.Cells, rowTypes, cellTypes)
		}
		fmt.Fprintln(w, strings.Join(cells, "\t"))
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	// Trailing padding after an empty last cell would not survive editors.
	lines := strings.Split(b.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n") + fmt.Sprintf("\ncell types: %s\n", strings.Join(cellTypes, " "))
}

// goldenTable is objects of one kind and the golden file of their table.
type goldenTable struct {
	name   string
	kind   string
	objs   []runtime.Object
	golden string
}

// assertGoldenTables prints each case's objects as a table and compares
// it with the case's golden file.
func assertGoldenTables(t *testing.T, tests []goldenTable) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			table, err := ToTable(tc.kind, tc.objs, IncludeNone, now)
			if err != nil {
				t.Fatal(err)
			}
			assertGolden(t, tc.golden, render(t, table))
		})
	}
}

// assertGolden compares got with testdata/name; -update rewrites the file.
func assertGolden(t *testing.T, name, got string) {
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
		t.Fatalf("reading golden file (go test -update writes it): %v", err)
	}
	if diff := cmp.Diff(strings.Split(string(want), "\n"), strings.Split(got, "\n")); diff != "" {
		t.Errorf("%s differs (-want +got); go test -update accepts the new output:\n%s", path, diff)
	}
}

// podBuilder builds test pods: makePod("web").Containers("app").Obj().
type podBuilder struct{ pod corev1.Pod }

func makePod(name string) *podBuilder {
	return &podBuilder{corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: "default", UID: types.UID("uid-" + name), CreationTimestamp: ago(10 * time.Minute),
	}}}
}

func (b *podBuilder) Containers(names ...string) *podBuilder {
	for _, n := range names {
		b.pod.Spec.Containers = append(b.pod.Spec.Containers, corev1.Container{Name: n, Image: "busybox"})
	}
	return b
}

func (b *podBuilder) InitContainers(names ...string) *podBuilder {
	for _, n := range names {
		b.pod.Spec.InitContainers = append(b.pod.Spec.InitContainers, corev1.Container{Name: n, Image: "busybox"})
	}
	return b
}

// Sidecars adds restartable init containers.
func (b *podBuilder) Sidecars(names ...string) *podBuilder {
	for _, n := range names {
		b.pod.Spec.InitContainers = append(b.pod.Spec.InitContainers, corev1.Container{
			Name: n, Image: "busybox", RestartPolicy: ptr(corev1.ContainerRestartPolicyAlways),
		})
	}
	return b
}

func (b *podBuilder) Phase(p corev1.PodPhase) *podBuilder { b.pod.Status.Phase = p; return b }
func (b *podBuilder) Reason(r string) *podBuilder         { b.pod.Status.Reason = r; return b }

func (b *podBuilder) Condition(t corev1.PodConditionType, s corev1.ConditionStatus, reason string) *podBuilder {
	b.pod.Status.Conditions = append(b.pod.Status.Conditions, corev1.PodCondition{Type: t, Status: s, Reason: reason})
	return b
}

func (b *podBuilder) Statuses(s ...*statusBuilder) *podBuilder {
	for _, x := range s {
		b.pod.Status.ContainerStatuses = append(b.pod.Status.ContainerStatuses, x.cs)
	}
	return b
}

func (b *podBuilder) InitStatuses(s ...*statusBuilder) *podBuilder {
	for _, x := range s {
		b.pod.Status.InitContainerStatuses = append(b.pod.Status.InitContainerStatuses, x.cs)
	}
	return b
}

func (b *podBuilder) Deleting() *podBuilder     { b.pod.DeletionTimestamp = agoPtr(time.Minute); return b }
func (b *podBuilder) Node(n string) *podBuilder { b.pod.Spec.NodeName = n; return b }
func (b *podBuilder) Nominated(n string) *podBuilder {
	b.pod.Status.NominatedNodeName = n
	return b
}

// IPs sets status.podIPs and, if primary, status.podIP to the first.
func (b *podBuilder) IPs(primary bool, ips ...string) *podBuilder {
	for _, ip := range ips {
		b.pod.Status.PodIPs = append(b.pod.Status.PodIPs, corev1.PodIP{IP: ip})
	}
	if primary {
		b.pod.Status.PodIP = ips[0]
	}
	return b
}

func (b *podBuilder) ReadinessGates(conditions ...corev1.PodConditionType) *podBuilder {
	for _, t := range conditions {
		b.pod.Spec.ReadinessGates = append(b.pod.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: t})
	}
	return b
}

func (b *podBuilder) Obj() *corev1.Pod { return b.pod.DeepCopy() }

// statusBuilder builds container statuses: status("app").Running().Ready().
type statusBuilder struct{ cs corev1.ContainerStatus }

func status(name string) *statusBuilder {
	return &statusBuilder{corev1.ContainerStatus{Name: name}}
}

func (s *statusBuilder) Running() *statusBuilder {
	s.cs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: ago(time.Minute)}}
	return s
}

func (s *statusBuilder) Ready() *statusBuilder   { s.cs.Ready = true; return s }
func (s *statusBuilder) Started() *statusBuilder { s.cs.Started = ptr(true); return s }
func (s *statusBuilder) NotStarted() *statusBuilder {
	s.cs.Started = ptr(false)
	return s
}

func (s *statusBuilder) Waiting(reason string) *statusBuilder {
	s.cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}
	return s
}

func (s *statusBuilder) Terminated(reason string, exitCode int32) *statusBuilder {
	s.cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: reason, ExitCode: exitCode, FinishedAt: ago(time.Minute)}}
	return s
}

func (s *statusBuilder) Signaled(signal, exitCode int32) *statusBuilder {
	s.cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Signal: signal, ExitCode: exitCode}}
	return s
}

// Restarts sets the restart count; lastFinished > 0 also records when the
// previous run ended, lastFinished before now.
func (s *statusBuilder) Restarts(n int32, lastFinished time.Duration) *statusBuilder {
	s.cs.RestartCount = n
	if lastFinished > 0 {
		s.cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, FinishedAt: ago(lastFinished)}}
	}
	return s
}
