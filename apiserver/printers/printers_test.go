package printers

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestColumnsMatchGolden(t *testing.T) {
	kinds := make([]string, 0, len(byKind)+1)
	for k := range byKind {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	kinds = append(kinds, "SomethingUnknown")

	var b strings.Builder
	for _, kind := range kinds {
		fmt.Fprintf(&b, "%s:\n", kind)
		w := tabwriter.NewWriter(&b, 0, 8, 2, ' ', 0)
		for _, c := range Columns(kind) {
			wide := ""
			if c.Priority == 1 {
				wide = "wide"
			}
			fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%q\n", c.Name, c.Type, c.Format, wide, c.Description)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	assertGolden(t, "columns.golden", b.String())
}

func TestColumnsReturnsACopy(t *testing.T) {
	cols := Columns("Pod")
	cols[0].Name = "Changed"
	if got := Columns("Pod")[0].Name; got != "Name" {
		t.Errorf("Columns(Pod)[0].Name = %q after changing an earlier result, want Name", got)
	}
}

func TestEmptyListStillHasColumnsAndEmptyRows(t *testing.T) {
	table, err := ToTable("Pod", nil, "", now)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Columns("Pod"), table.ColumnDefinitions); diff != "" {
		t.Errorf("columns (-want +got):\n%s", diff)
	}
	raw, err := json.Marshal(table)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"rows":[]`) {
		t.Errorf("JSON %s lacks \"rows\":[]; kubectl expects an empty array", raw)
	}
}

func TestTableIsTypedAsMetaV1Table(t *testing.T) {
	table, err := ToTable("Node", []runtime.Object{makeNode("n").Obj()}, "", now)
	if err != nil {
		t.Fatal(err)
	}
	want := metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "Table"}
	if table.TypeMeta != want {
		t.Errorf("TypeMeta = %+v, want %+v", table.TypeMeta, want)
	}
}

// objectOf decodes a row's embedded object into a generic map.
func objectOf(t *testing.T, r metav1.TableRow) map[string]any {
	t.Helper()
	if r.Object.Raw == nil {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(r.Object.Raw, &m); err != nil {
		t.Fatalf("row object is not JSON: %v", err)
	}
	return m
}

func TestIncludeObjectDecidesWhatRowsCarry(t *testing.T) {
	pod := makePod("web-1").Containers("app").Phase(corev1.PodRunning).Node("node-1").Obj()
	pod.Labels = map[string]string{"app": "web"}

	tests := []struct {
		name          string
		includeObject string
		want          map[string]any
	}{
		{
			name:          "None carries no object",
			includeObject: IncludeNone,
			want:          nil,
		},
		{
			name:          "Metadata carries a PartialObjectMetadata",
			includeObject: IncludeMetadata,
			want: map[string]any{
				"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
				"metadata": map[string]any{
					"name": "web-1", "namespace": "default", "uid": "uid-web-1",
					"creationTimestamp": "2025-03-01T11:50:00Z", "labels": map[string]any{"app": "web"},
				},
			},
		},
		{
			name:          "an empty includeObject means Metadata",
			includeObject: "",
			want: map[string]any{
				"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
				"metadata": map[string]any{
					"name": "web-1", "namespace": "default", "uid": "uid-web-1",
					"creationTimestamp": "2025-03-01T11:50:00Z", "labels": map[string]any{"app": "web"},
				},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			table, err := ToTable("Pod", []runtime.Object{pod}, tc.includeObject, now)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, objectOf(t, table.Rows[0])); diff != "" {
				t.Errorf("row object (-want +got):\n%s", diff)
			}
		})
	}
}

func TestIncludeObjectCarriesTheWholeObjectWithItsKind(t *testing.T) {
	pod := makePod("web-1").Containers("app").Node("node-1").Obj()
	table, err := ToTable("Pod", []runtime.Object{pod}, IncludeObject, now)
	if err != nil {
		t.Fatal(err)
	}
	got := objectOf(t, table.Rows[0])
	for field, want := range map[string]any{"apiVersion": "v1", "kind": "Pod"} {
		if got[field] != want {
			t.Errorf("object %s = %v, want %v", field, got[field], want)
		}
	}
	if spec, _ := got["spec"].(map[string]any); spec["nodeName"] != "node-1" {
		t.Errorf("object spec = %v, want the pod's spec with nodeName node-1", got["spec"])
	}
	if !pod.GetObjectKind().GroupVersionKind().Empty() {
		t.Errorf("ToTable set the caller's TypeMeta to %v; it must work on a copy", pod.GetObjectKind().GroupVersionKind())
	}
}

func TestIncludeObjectTellsTheTwoEventAPIsApart(t *testing.T) {
	objs := eventObjects()
	table, err := ToTable("Event", objs, IncludeObject, now)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range table.Rows {
		o := objectOf(t, r)
		got = append(got, fmt.Sprintf("%v %v", o["apiVersion"], o["kind"]))
	}
	want := []string{"v1 Event", "v1 Event", "v1 Event", "events.k8s.io/v1 Event", "events.k8s.io/v1 Event"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("row object kinds (-want +got):\n%s", diff)
	}
}

func TestUnknownIncludeObjectIsABadRequest(t *testing.T) {
	_, err := ToTable("Pod", nil, "Everything", now)
	if !errors.Is(err, ErrUnknownIncludeObject) {
		t.Errorf("ToTable(includeObject=Everything) error = %v, want ErrUnknownIncludeObject", err)
	}
}

func TestListsAreExpandedIntoTheirItems(t *testing.T) {
	list := &corev1.PodList{Items: []corev1.Pod{*makePod("a").Obj(), *makePod("b").Obj()}}
	table, err := ToTable("Pod", []runtime.Object{list, makePod("c").Obj()}, IncludeNone, now)
	if err != nil {
		t.Fatal(err)
	}
	var names []any
	for _, r := range table.Rows {
		names = append(names, r.Cells[0])
	}
	if diff := cmp.Diff([]any{"a", "b", "c"}, names); diff != "" {
		t.Errorf("row names (-want +got):\n%s", diff)
	}
}

func TestObjectsOfTheWrongTypeAreAnError(t *testing.T) {
	tests := []struct {
		name string
		kind string
		obj  runtime.Object
	}{
		{"a node printed as a pod", "Pod", makeNode("n").Obj()},
		{"a pod printed as an event", "Event", makePod("p").Obj()},
		{"an object without metadata printed by the default printer", "Status", &metav1.Status{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ToTable(tc.kind, []runtime.Object{tc.obj}, IncludeNone, now); err == nil {
				t.Errorf("ToTable(%s, %T) succeeded, want an error", tc.kind, tc.obj)
			}
		})
	}
}

func TestAgesAreShortHumanDurations(t *testing.T) {
	tests := []struct {
		name string
		age  time.Duration
		want string
	}{
		{"seconds below two minutes", 119 * time.Second, "119s"},
		{"minutes and seconds below ten minutes", 7*time.Minute + 5*time.Second, "7m5s"},
		{"hours and minutes below eight hours", 3*time.Hour + 20*time.Minute, "3h20m"},
		{"days and hours below eight days", 50 * time.Hour, "2d2h"},
		{"years and days beyond two years", (3*365 + 10) * 24 * time.Hour, "3y10d"},
		{"a timestamp slightly in the future", -time.Second, "0s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", CreationTimestamp: ago(tc.age)}}
			if got := cell(t, "Namespace", printOne(t, "Namespace", ns), "Age"); got != tc.want {
				t.Errorf("AGE = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestWireFormatMatchesGolden locks the JSON kubectl receives.
func TestWireFormatMatchesGolden(t *testing.T) {
	pods := []runtime.Object{
		makePod("web-1").Containers("app").Phase(corev1.PodRunning).Node("node-1").IPs(true, "10.0.0.5").
			Statuses(status("app").Running().Ready().Restarts(1, 5*time.Minute)).Obj(),
		makePod("job-1").Containers("work").Phase(corev1.PodSucceeded).
			Statuses(status("work").Terminated("Completed", 0)).Obj(),
	}
	table, err := ToTable("Pod", pods, IncludeMetadata, now)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // keep "<none>" readable in the golden file
	enc.SetIndent("", "  ")
	if err := enc.Encode(table); err != nil {
		t.Fatal(err)
	}
	assertGolden(t, "pod-table.json", b.String())
}
