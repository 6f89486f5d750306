package job

import (
	"sort"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// NoIndex marks a pod without a completion index (a NonIndexed Job's, or
// an Indexed Job's pod whose annotation is missing or invalid).
const NoIndex = -1

// CompletionIndexEnv is the variable through which an Indexed Job's
// containers read their index.
const CompletionIndexEnv = "JOB_COMPLETION_INDEX"

// maxGeneratedNamePrefix is how long a generateName may be: the apiserver
// appends 5 random characters and a name must fit in 63.
const maxGeneratedNamePrefix = 63 - 5

func isIndexed(job *batchv1.Job) bool {
	return job.Spec.CompletionMode != nil && *job.Spec.CompletionMode == batchv1.IndexedCompletion
}

func hasBackoffLimitPerIndex(job *batchv1.Job) bool {
	return isIndexed(job) && job.Spec.BackoffLimitPerIndex != nil
}

// CompletionIndex returns the index in p's batch.kubernetes.io/job-completion-index
// annotation, or NoIndex.
func CompletionIndex(p *corev1.Pod) int {
	v, ok := p.Annotations[batchv1.JobCompletionIndexAnnotation]
	if !ok {
		return NoIndex
	}
	i, err := strconv.Atoi(v)
	if err != nil || i < 0 {
		return NoIndex
	}
	return i
}

// interval is the indexes First..Last, both included.
type interval struct{ First, Last int }

// intervals is a sorted set of indexes, stored as disjoint, non-adjacent
// intervals: the form of status.completedIndexes ("1,3-5").
type intervals []interval

// parseIntervals reads s ("1,3-5,7") as Kubernetes does: it skips
// malformed parts and drops indexes from completions on.
func parseIntervals(s string, completions int) intervals {
	var out intervals
	if s == "" {
		return out
	}
	for _, part := range strings.Split(s, ",") {
		first, last, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(first)
		if err != nil || a < 0 || a >= completions {
			continue
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(last); err != nil || b < a {
				continue
			}
			b = min(b, completions-1)
		}
		out = out.merge(intervals{{a, b}})
	}
	return out
}

// withIndexes returns iv with the indexes added (in any order).
func (iv intervals) withIndexes(indexes []int) intervals {
	sorted := append([]int(nil), indexes...)
	sort.Ints(sorted)
	add := make(intervals, 0, len(sorted))
	for _, ix := range sorted {
		add = append(add, interval{ix, ix})
	}
	return iv.merge(add)
}

// merge returns the union of two interval sets.
func (iv intervals) merge(other intervals) intervals {
	all := append(append(intervals(nil), iv...), other...)
	sort.Slice(all, func(i, j int) bool { return all[i].First < all[j].First })
	var out intervals
	for _, x := range all {
		if n := len(out); n > 0 && x.First <= out[n-1].Last+1 {
			out[n-1].Last = max(out[n-1].Last, x.Last)
			continue
		}
		out = append(out, x)
	}
	return out
}

// intersect returns the indexes in both sets.
func (iv intervals) intersect(other intervals) intervals {
	var out intervals
	for i, j := 0, 0; i < len(iv) && j < len(other); {
		first, last := max(iv[i].First, other[j].First), min(iv[i].Last, other[j].Last)
		if first <= last {
			out = append(out, interval{first, last})
		}
		// Move past whichever interval ends first.
		if iv[i].Last < other[j].Last {
			i++
		} else {
			j++
		}
	}
	return out
}

// has reports whether ix is in the set.
func (iv intervals) has(ix int) bool {
	i := sort.Search(len(iv), func(i int) bool { return iv[i].Last >= ix })
	return i < len(iv) && iv[i].First <= ix
}

// total is the number of indexes in the set.
func (iv intervals) total() int {
	n := 0
	for _, x := range iv {
		n += x.Last - x.First + 1
	}
	return n
}

// String writes the set as Kubernetes does: "1,3-5"; two neighbours are
// written "3,4", not "3-4".
func (iv intervals) String() string {
	var b strings.Builder
	for _, x := range iv {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(x.First))
		switch {
		case x.Last == x.First+1:
			b.WriteByte(',')
			b.WriteString(strconv.Itoa(x.Last))
		case x.Last > x.First:
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(x.Last))
		}
	}
	return b.String()
}

// firstPendingIndexes returns up to count of the lowest indexes below
// completions that are not in taken.
func firstPendingIndexes(count, completions int, taken intervals) []int {
	var out []int
	for ix := 0; ix < completions && len(out) < count; ix++ {
		if taken.has(ix) {
			// Skip the whole interval at once.
			i := sort.Search(len(taken), func(i int) bool { return taken[i].Last >= ix })
			ix = taken[i].Last
			continue
		}
		out = append(out, ix)
	}
	return out
}

// indexedGenerateName is the name prefix of index's pod, "<job>-<index>-",
// with the job's name cut so that the random suffix still fits.
func indexedGenerateName(jobName string, index int) string {
	suffix := "-" + strconv.Itoa(index) + "-"
	prefix := jobName + suffix
	if len(prefix) > maxGeneratedNamePrefix {
		prefix = jobName[:maxGeneratedNamePrefix-len(suffix)] + suffix
	}
	return prefix
}

// indexFailures returns the failures of p's index before p, from its
// batch.kubernetes.io/job-index-failure-count annotation (0 if missing or
// invalid), and those a pod failure policy ignored, from
// job-index-ignored-failure-count.
func indexFailures(p *corev1.Pod) (counted, ignored int32) {
	return annotationCount(p, batchv1.JobIndexFailureCountAnnotation), annotationCount(p, batchv1.JobIndexIgnoredFailureCountAnnotation)
}

func annotationCount(p *corev1.Pod, key string) int32 {
	v, err := strconv.ParseInt(p.Annotations[key], 10, 32)
	if err != nil || v < 0 {
		return 0
	}
	return int32(v)
}
