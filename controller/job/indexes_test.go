package job

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"minik/controller/internal/testutil"
)

func TestIntervals(t *testing.T) {
	cases := []struct {
		name        string
		status      string
		completions int
		add         []int
		want        string
		wantTotal   int
	}{
		{name: "nothing completed is the empty string", completions: 5, want: ""},
		{name: "a single index", completions: 5, add: []int{3}, want: "3", wantTotal: 1},
		{name: "runs of three or more are ranges, pairs are listed", completions: 10, add: []int{5, 1, 3, 4, 8, 9}, want: "1,3-5,8,9", wantTotal: 6},
		{name: "new indexes merge into the status string", status: "0,2-4", completions: 10, add: []int{1, 5, 7}, want: "0-5,7", wantTotal: 7},
		{name: "indexes from completions on are dropped (completions scaled down)", status: "0-3,6-8", completions: 7, want: "0-3,6", wantTotal: 5},
		{name: "malformed parts are skipped", status: "x,2,3-,5-4,6", completions: 10, want: "2,6", wantTotal: 2},
		{name: "duplicates count once", status: "1", completions: 5, add: []int{1, 1}, want: "1", wantTotal: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			iv := parseIntervals(tc.status, tc.completions).withIndexes(tc.add)
			if iv.String() != tc.want || iv.total() != tc.wantTotal {
				t.Fatalf("got %q (%d), want %q (%d)", iv.String(), iv.total(), tc.want, tc.wantTotal)
			}
		})
	}
}

func TestFirstPendingIndexes(t *testing.T) {
	taken := parseIntervals("0,2-4,7", 10)
	if got := firstPendingIndexes(4, 10, taken); !slices.Equal(got, []int{1, 5, 6, 8}) {
		t.Fatalf("got %v", got)
	}
	if got := firstPendingIndexes(5, 9, taken); !slices.Equal(got, []int{1, 5, 6, 8}) {
		t.Fatalf("indexes from completions on must not be handed out: %v", got)
	}
	if !taken.has(3) || taken.has(5) {
		t.Fatal("has is wrong")
	}
}

func indexedJob(completions, parallelism int32) *batchv1.Job {
	j := makeJob(&completions, &parallelism, corev1.RestartPolicyNever)
	j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
	j.Spec.Template.Spec.Containers = []corev1.Container{{Name: "c", Image: "img"}}
	return j
}

// indexPod builds a pod of index ix.
func indexPod(name string, ix int) *testutil.PodBuilder {
	b := testutil.Pod(name)
	b.Obj().Annotations = map[string]string{batchv1.JobCompletionIndexAnnotation: strconv.Itoa(ix)}
	return b
}

func withIndexFailures(p *corev1.Pod, counted int) *corev1.Pod {
	p.Annotations[batchv1.JobIndexFailureCountAnnotation] = strconv.Itoa(counted)
	return p
}

func createdIndexes(plan decision) []int {
	var out []int
	for _, c := range plan.Create {
		out = append(out, c.Index)
	}
	return out
}

func TestReconcileIndexed(t *testing.T) {
	now := testutil.T0
	long := now.Add(-time.Hour)
	cases := []struct {
		name          string
		job           *batchv1.Job
		pods          []*corev1.Pod
		wantCreate    []int
		wantDelete    []string
		wantCompleted string
		wantSucceeded int32
		wantReason    map[batchv1.JobConditionType]string
		wantRequeue   time.Duration
	}{
		{name: "a new Indexed Job starts the lowest indexes, parallelism at a time",
			job: indexedJob(5, 2), wantCreate: []int{0, 1}},
		{name: "a completed index is not run again; the next pending one starts",
			job:        indexedJob(5, 2),
			pods:       []*corev1.Pod{indexPod("a", 0).Exited(corev1.PodSucceeded, 0, long).Obj(), indexPod("b", 1).Ready(long).Obj()},
			wantCreate: []int{2}, wantCompleted: "0", wantSucceeded: 1},
		{name: "completed indexes are kept from the status when their pods are gone",
			job: func() *batchv1.Job {
				j := indexedJob(6, 2)
				j.Status.CompletedIndexes = "0,2-3"
				return j
			}(),
			wantCreate: []int{1, 4}, wantCompleted: "0,2,3", wantSucceeded: 3},
		{name: "two pods of one index: the not ready one goes, nothing is created that sync",
			job:        indexedJob(3, 3),
			pods:       []*corev1.Pod{indexPod("ready", 1).Ready(long).Obj(), indexPod("late", 1).Obj(), indexPod("other", 0).Ready(long).Obj()},
			wantDelete: []string{"late"}},
		{name: "a pod without a valid index is deleted",
			job:        indexedJob(2, 2),
			pods:       []*corev1.Pod{indexPod("out-of-range", 7).Ready(long).Obj(), testutil.Pod("no-index").Ready(long).Obj()},
			wantDelete: []string{"out-of-range", "no-index"}},
		{name: "a second success of one index counts once",
			job:           indexedJob(3, 1),
			pods:          []*corev1.Pod{indexPod("a", 0).Exited(corev1.PodSucceeded, 0, long).Obj(), indexPod("b", 0).Exited(corev1.PodSucceeded, 0, long).Obj()},
			wantCreate:    []int{1},
			wantCompleted: "0", wantSucceeded: 1},
		{name: "every index completed: SuccessCriteriaMet and Complete",
			job: indexedJob(3, 3),
			pods: []*corev1.Pod{indexPod("a", 0).Exited(corev1.PodSucceeded, 0, long).Obj(), indexPod("b", 1).Exited(corev1.PodSucceeded, 0, long).Obj(),
				indexPod("c", 2).Exited(corev1.PodSucceeded, 0, long).Obj()},
			wantCompleted: "0-2", wantSucceeded: 3,
			wantReason: map[batchv1.JobConditionType]string{batchv1.JobSuccessCriteriaMet: ReasonCompletionsReached, batchv1.JobComplete: ReasonCompletionsReached}},
		{name: "a failed index is retried after the Job-wide backoff",
			job:         indexedJob(2, 2),
			pods:        []*corev1.Pod{indexPod("a", 0).Exited(corev1.PodFailed, 1, now.Add(-4*time.Second)).Obj(), indexPod("b", 1).Ready(long).Obj()},
			wantRequeue: 6 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := decided(tc.job, tc.pods, now)
			if got := createdIndexes(plan); !slices.Equal(got, tc.wantCreate) {
				t.Errorf("created indexes %v, want %v", got, tc.wantCreate)
			}
			if got := testutil.Names(plan.Delete); !slices.Equal(got, tc.wantDelete) {
				t.Errorf("deleted %v, want %v", got, tc.wantDelete)
			}
			if plan.Status.CompletedIndexes != tc.wantCompleted || plan.Status.Succeeded != tc.wantSucceeded {
				t.Errorf("completedIndexes %q succeeded %d, want %q %d", plan.Status.CompletedIndexes, plan.Status.Succeeded, tc.wantCompleted, tc.wantSucceeded)
			}
			if plan.RequeueAfter != tc.wantRequeue {
				t.Errorf("requeue %v, want %v", plan.RequeueAfter, tc.wantRequeue)
			}
			for _, typ := range []batchv1.JobConditionType{batchv1.JobComplete, batchv1.JobFailed, batchv1.JobFailureTarget, batchv1.JobSuccessCriteriaMet} {
				if got := cond(plan.Status, typ); got != tc.wantReason[typ] {
					t.Errorf("condition %s reason %q, want %q", typ, got, tc.wantReason[typ])
				}
			}
		})
	}
}

func TestReconcileBackoffLimitPerIndex(t *testing.T) {
	now := testutil.T0
	long := now.Add(-time.Hour)
	perIndex := func(limit int32, maxFailed *int32) *batchv1.Job {
		j := indexedJob(3, 3)
		j.Spec.BackoffLimitPerIndex = ptr.To(limit)
		j.Spec.MaxFailedIndexes = maxFailed
		j.Spec.BackoffLimit = ptr.To[int32](1 << 30)
		return j
	}
	failed := func(name string, ix, prior int, at time.Time) *corev1.Pod {
		return withIndexFailures(indexPod(name, ix).Exited(corev1.PodFailed, 1, at).Obj(), prior)
	}
	succeeded := func(name string, ix int) *corev1.Pod {
		return withIndexFailures(indexPod(name, ix).Exited(corev1.PodSucceeded, 0, long).Obj(), 0)
	}
	running := func(name string, ix int) *corev1.Pod {
		return withIndexFailures(indexPod(name, ix).Ready(long).Obj(), 0)
	}
	cases := []struct {
		name        string
		job         *batchv1.Job
		pods        []*corev1.Pod
		wantCreate  []PodToCreate
		wantFailed  string
		wantRequeue time.Duration
		wantReason  string
	}{
		{name: "a new Job's pods start with a failure count of 0",
			job: perIndex(1, nil), wantCreate: []PodToCreate{{Index: 0}, {Index: 1}, {Index: 2}}},
		{name: "a failed index within its limit is retried with its failure count raised, after its own backoff",
			job:        perIndex(2, nil),
			pods:       []*corev1.Pod{failed("a", 0, 1, now.Add(-25*time.Second)), running("b", 1), running("c", 2)},
			wantCreate: []PodToCreate{{Index: 0, IndexFailures: 2}}},
		{name: "an index still backing off is requeued for it, the others are not held back",
			job:         perIndex(2, nil),
			pods:        []*corev1.Pod{failed("a", 0, 1, now.Add(-5*time.Second)), failed("b", 1, 0, long), running("c", 2)},
			wantCreate:  []PodToCreate{{Index: 1, IndexFailures: 1}},
			wantRequeue: 15 * time.Second},
		{name: "the replaced pod is the index's pod with the most failures",
			job:        perIndex(5, nil),
			pods:       []*corev1.Pod{failed("old", 0, 0, long), failed("newer", 0, 2, long), failed("mid", 0, 1, long), running("b", 1), running("c", 2)},
			wantCreate: []PodToCreate{{Index: 0, IndexFailures: 3}}},
		{name: "an index past backoffLimitPerIndex is failed and not retried",
			job:        perIndex(1, nil),
			pods:       []*corev1.Pod{failed("a", 0, 1, long), running("b", 1), running("c", 2)},
			wantFailed: "0"},
		{name: "once every index finished with some failed, the Job fails with FailedIndexes",
			job:        perIndex(0, nil),
			pods:       []*corev1.Pod{failed("a", 0, 0, long), succeeded("b", 1), failed("c", 2, 0, long)},
			wantFailed: "0,2", wantReason: batchv1.JobReasonFailedIndexes},
		{name: "more failed indexes than maxFailedIndexes fail the Job at once",
			job:        perIndex(0, ptr.To[int32](1)),
			pods:       []*corev1.Pod{failed("a", 0, 0, long), failed("b", 1, 0, long), running("c", 2)},
			wantFailed: "0,1", wantReason: batchv1.JobReasonMaxFailedIndexesExceeded},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := decided(tc.job, tc.pods, now)
			if !slices.Equal(plan.Create, tc.wantCreate) {
				t.Errorf("create %+v, want %+v", plan.Create, tc.wantCreate)
			}
			if got := ptr.Deref(plan.Status.FailedIndexes, "<nil>"); got != tc.wantFailed {
				t.Errorf("failedIndexes %q, want %q", got, tc.wantFailed)
			}
			if plan.RequeueAfter != tc.wantRequeue {
				t.Errorf("requeue %v, want %v", plan.RequeueAfter, tc.wantRequeue)
			}
			if got := cond(plan.Status, batchv1.JobFailureTarget); got != tc.wantReason {
				t.Errorf("FailureTarget reason %q, want %q", got, tc.wantReason)
			}
		})
	}
}

func TestNewPodIndexed(t *testing.T) {
	j := indexedJob(3, 1)
	j.Name = "work"
	j.Spec.BackoffLimitPerIndex = ptr.To[int32](2)
	j.Spec.Template.Labels = map[string]string{"app": "work"}
	j.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "img"}}
	j.Spec.Template.Spec.Containers = []corev1.Container{
		{Name: "c", Image: "img"},
		{Name: "own", Image: "img", Env: []corev1.EnvVar{{Name: CompletionIndexEnv, Value: "mine"}}},
	}
	p := NewPod(j, PodToCreate{Index: 2, IndexFailures: 1, IndexIgnoredFailures: 3})
	checks := map[string]bool{
		"named <job>-<index>-":                p.GenerateName == "work-2-",
		"hostname <job>-<index>":              p.Spec.Hostname == "work-2",
		"index annotation":                    p.Annotations[batchv1.JobCompletionIndexAnnotation] == "2",
		"index label, template labels kept":   p.Labels[batchv1.JobCompletionIndexAnnotation] == "2" && p.Labels["app"] == "work",
		"failure count annotations":           p.Annotations[batchv1.JobIndexFailureCountAnnotation] == "1" && p.Annotations[batchv1.JobIndexIgnoredFailureCountAnnotation] == "3",
		"env from the label in init and main": envFrom(p.Spec.InitContainers[0]) && envFrom(p.Spec.Containers[0]),
		"a container's own variable is kept":  len(p.Spec.Containers[1].Env) == 1 && p.Spec.Containers[1].Env[0].Value == "mine",
		"the template is left alone":          j.Spec.Template.Labels[batchv1.JobCompletionIndexAnnotation] == "" && len(j.Spec.Template.Spec.Containers[0].Env) == 0,
		"controlled by the Job":               p.OwnerReferences[0].Kind == "Job" && *p.OwnerReferences[0].Controller,
	}
	for what, ok := range checks {
		if !ok {
			t.Errorf("%s: %+v", what, p)
		}
	}

	j.Name = strings.Repeat("a", 60)
	if got := NewPod(j, PodToCreate{Index: 12}).GenerateName; len(got) != maxGeneratedNamePrefix || !strings.HasSuffix(got, "a-12-") {
		t.Errorf("a long name is cut to fit the random suffix: %q", got)
	}
	j.Spec.CompletionMode = ptr.To(batchv1.NonIndexedCompletion)
	if p := NewPod(j, PodToCreate{Index: NoIndex}); p.Spec.Hostname != "" || p.Annotations[batchv1.JobCompletionIndexAnnotation] != "" {
		t.Errorf("a NonIndexed pod has no index: %+v", p)
	}
}

func envFrom(c corev1.Container) bool {
	for _, e := range c.Env {
		if e.Name == CompletionIndexEnv && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil &&
			e.ValueFrom.FieldRef.FieldPath == "metadata.labels['batch.kubernetes.io/job-completion-index']" {
			return true
		}
	}
	return false
}
