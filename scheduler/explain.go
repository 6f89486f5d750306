package scheduler

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"strings"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"minik/client"
	"minik/scheduler/cache"
	"minik/scheduler/framework"
	"minik/scheduler/plugins"
)

// Explanation is how the scheduler decides for one pod, over every node:
// each filter's verdict, each score plugin's raw and weighted score, and
// the node it chooses. `minik explain pod` prints it.
type Explanation struct {
	Pod *corev1.Pod
	// PreFilter is set when a PreFilter plugin rejected the pod everywhere.
	PreFilter *framework.Status
	Nodes     []NodeExplanation // sorted by name
	Scores    []framework.PluginScores
	Scored    []string // node names, in the order of Scores' slices
	Totals    []framework.NodeScore
	// Chosen is the node the scheduler would choose now; empty if none fits.
	Chosen string
	// BoundTo is the pod's node if it is already bound.
	BoundTo string
	// Message is the FailedScheduling message when no node fits, with the
	// preemption outcome.
	Message string
}

// NodeExplanation is every filter's verdict on one node.
type NodeExplanation struct {
	Node     string
	Filters  []framework.PluginVerdict
	Feasible bool
}

// Explain evaluates pod against snap with fwk, without sampling: every
// filter on every node, every score on every feasible node.
func Explain(fwk *framework.Framework, snap *cache.Snapshot, pod *corev1.Pod, seed uint64) *Explanation {
	e := &Explanation{Pod: pod}
	fwk.KeepScores = true
	state := framework.NewCycleState()
	all := snap.List()
	if st := fwk.RunPreFilter(state, pod, snap); !st.IsSuccess() {
		e.PreFilter = st
		statuses := framework.NodeToStatus{}
		for _, ni := range all {
			statuses[ni.Node().Name] = st
		}
		e.Message = (&framework.FitError{NumAllNodes: len(all), Statuses: statuses, PreFilterMsg: st.Message()}).Error()
		return e
	}
	var feasible []*framework.NodeInfo
	statuses := framework.NodeToStatus{}
	for _, ni := range all {
		verdicts := fwk.RunFilterAll(state, pod, ni)
		ne := NodeExplanation{Node: ni.Node().Name, Filters: verdicts, Feasible: true}
		for _, v := range verdicts {
			if !v.Status.IsSuccess() {
				if ne.Feasible {
					statuses[ne.Node] = v.Status // the first rejection, as the scheduler stops there
				}
				ne.Feasible = false
			}
		}
		if ne.Feasible {
			feasible = append(feasible, ni)
		}
		e.Nodes = append(e.Nodes, ne)
	}
	if len(all) == 0 {
		e.Message = ErrNoNodesAvailable.Error()
		return e
	}
	if len(feasible) == 0 {
		fitErr := &framework.FitError{NumAllNodes: len(all), Statuses: statuses}
		if _, st := fwk.RunPostFilter(state, pod, snap, statuses); !st.IsSuccess() {
			fitErr.PostFilterMsg = st.Message()
		} else {
			fitErr.PostFilterMsg = "preemption: possible (lower-priority pods would be deleted)"
		}
		e.Message = fitErr.Error()
		return e
	}
	if st := fwk.RunPreScore(state, pod, feasible, snap); !st.IsSuccess() {
		e.Message = st.Message()
		return e
	}
	totals, per, st := fwk.RunScore(context.Background(), state, pod, feasible)
	if !st.IsSuccess() {
		e.Message = st.Message()
		return e
	}
	e.Scores = per
	for i, ni := range feasible {
		e.Scored = append(e.Scored, ni.Node().Name)
		e.Totals = append(e.Totals, framework.NodeScore{Name: ni.Node().Name, Score: totals[i]})
	}
	e.Chosen = selectHost(feasible, totals, rand.New(rand.NewPCG(seed, seed>>1|1)))
	return e
}

// ExplainFromAPI reads the cluster through c and explains pod ns/name. A
// pod already bound is explained as if it were pending (without itself).
func ExplainFromAPI(ctx context.Context, c *client.Client, ns, name string) (*Explanation, error) {
	pod, err := c.Pods().Get(ctx, ns, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	var objs Objects
	nodes, err := listAll(ctx, c.Nodes(), "")
	if err != nil {
		return nil, err
	}
	pods, err := listAll(ctx, c.Pods(), "")
	if err != nil {
		return nil, err
	}
	nss, err := listAll(ctx, c.Namespaces(), "")
	if err != nil {
		return nil, err
	}
	objs.Nodes, objs.Pods, objs.Namespaces = pointers(nodes), pointers(pods), pointers(nss)
	if pdbs, err := listAll(ctx, client.For[policyv1.PodDisruptionBudget](c, client.PodDisruptionBudgets), ""); err == nil {
		objs.PDBs = pointers(pdbs)
	}
	// The Services of the pod's namespace, for the default spreading
	// (none if the apiserver does not serve Services).
	if svcs, err := listAll(ctx, client.For[corev1.Service](c, servicesResource), pod.Namespace); err == nil {
		objs.Services = pointers(svcs)
	}
	objs.Storage = listStorage(ctx, c, pod.Namespace)
	return ExplainObjects(pod, objs), nil
}

// Objects are what an explanation reads of the cluster.
type Objects struct {
	Nodes      []*corev1.Node
	Pods       []*corev1.Pod
	Namespaces []*corev1.Namespace
	PDBs       []*policyv1.PodDisruptionBudget
	Services   []*corev1.Service // of the pod's namespace, or all
	// Storage lists claims, volumes and classes for VolumeBinding (nil:
	// none).
	Storage framework.StorageLister
}

// ExplainObjects explains pod over objs (an informer's caches, say) as
// ExplainFromAPI does.
func ExplainObjects(pod *corev1.Pod, objs Objects) *Explanation {
	ch := cache.New()
	for _, n := range objs.Nodes {
		ch.AddNode(n)
	}
	for _, p := range objs.Pods {
		if p.Spec.NodeName != "" && p.UID != pod.UID {
			ch.AddPod(p)
		}
	}
	for _, ns := range objs.Namespaces {
		ch.SetNamespace(ns.Name, nonNil(ns.Labels))
	}
	for _, pdb := range objs.PDBs {
		ch.SetPDB(pdb)
	}
	for _, svc := range objs.Services {
		if svc.Namespace == pod.Namespace {
			ch.SetService(svc)
		}
	}
	snap := cache.NewEmptySnapshot()
	ch.UpdateSnapshot(snap)
	if objs.Storage != nil {
		snap.SetStorage(objs.Storage)
	}
	pending := pod.DeepCopy()
	pending.Spec.NodeName = ""
	fwk := framework.New(plugins.DefaultProfile(pod.Spec.SchedulerName, nil))
	e := Explain(fwk, snap, pending, 1)
	e.BoundTo = pod.Spec.NodeName
	return e
}

func pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

func listAll[T any](ctx context.Context, t *client.Typed[T], ns string) ([]T, error) {
	var out []T
	opts := metav1.ListOptions{Limit: 500}
	for {
		l, err := t.List(ctx, ns, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, l.Items...)
		if l.Continue == "" {
			return out, nil
		}
		opts.Continue = l.Continue
	}
}

// Write prints the explanation for people.
func (e *Explanation) Write(w io.Writer) error {
	pod := e.Pod
	var b strings.Builder
	fmt.Fprintf(&b, "Pod %s/%s (scheduler %s, priority %d)\n", pod.Namespace, pod.Name, pod.Spec.SchedulerName, corev1helpers.PodPriority(pod))
	if e.PreFilter != nil {
		fmt.Fprintf(&b, "\nRejected before filtering by %s: %s\n", e.PreFilter.Plugin(), e.PreFilter.Message())
	}
	if len(e.Nodes) > 0 {
		b.WriteString("\nFilters (every node):\n")
		tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  NODE\tFILTER\tVERDICT")
		for _, n := range e.Nodes {
			for i, v := range n.Filters {
				node := ""
				if i == 0 {
					node = n.Node
				}
				verdict := "pass"
				switch {
				case v.Skip:
					verdict = "pass (nothing to check)"
				case !v.Status.IsSuccess():
					verdict = "FAIL: " + v.Status.Message()
					if d := v.Status.Detail(); d != "" {
						verdict += " (" + d + ")"
					}
				}
				fmt.Fprintf(tw, "  %s\t%s\t%s\n", node, v.Plugin, verdict)
			}
		}
		tw.Flush()
	}
	if len(e.Scored) > 0 {
		b.WriteString("\nScores (feasible nodes; raw → normalized × weight):\n")
		tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		header := []string{"  NODE"}
		for _, ps := range e.Scores {
			header = append(header, fmt.Sprintf("%s(×%d)", ps.Plugin, ps.Weight))
		}
		header = append(header, "TOTAL")
		fmt.Fprintln(tw, strings.Join(header, "\t"))
		order := make([]int, len(e.Scored))
		for i := range order {
			order[i] = i
		}
		sort.SliceStable(order, func(a, c int) bool { return e.Totals[order[a]].Score > e.Totals[order[c]].Score })
		for _, i := range order {
			row := []string{"  " + e.Scored[i]}
			for _, ps := range e.Scores {
				if ps.Skip {
					row = append(row, "-")
					continue
				}
				row = append(row, fmt.Sprintf("%d→%d=%d", ps.Raw[i], ps.Scores[i], ps.Scores[i]*ps.Weight))
			}
			row = append(row, fmt.Sprint(e.Totals[i].Score))
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
		tw.Flush()
	}
	b.WriteString("\n")
	switch {
	case e.BoundTo != "":
		fmt.Fprintf(&b, "Bound to: %s", e.BoundTo)
		if e.Chosen != "" && e.Chosen != e.BoundTo {
			if bound, ok := e.total(e.BoundTo); ok && bound == e.mustTotal(e.Chosen) {
				fmt.Fprintf(&b, " (tied today with %s at %d; ties are broken at random)", e.Chosen, bound)
			} else {
				fmt.Fprintf(&b, " (today the best node would be %s)", e.Chosen)
			}
		}
		b.WriteString("\n")
	case e.Chosen != "":
		fmt.Fprintf(&b, "Chosen node: %s\n", e.Chosen)
	default:
		fmt.Fprintf(&b, "No node fits: %s\n", e.Message)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// total returns a node's weighted total score, if it was scored.
func (e *Explanation) total(node string) (int64, bool) {
	for _, t := range e.Totals {
		if t.Name == node {
			return t.Score, true
		}
	}
	return 0, false
}

func (e *Explanation) mustTotal(node string) int64 {
	t, _ := e.total(node)
	return t
}

// listStorage reads the claims of the pod's namespace, the volumes and
// the classes for the volume plugins (none if they cannot be read).
func listStorage(ctx context.Context, c *client.Client, ns string) framework.StorageLister {
	var claims []*corev1.PersistentVolumeClaim
	var volumes []*corev1.PersistentVolume
	var classes []*storagev1.StorageClass
	if l, err := listAll(ctx, c.PersistentVolumeClaims(), ns); err == nil {
		for i := range l {
			claims = append(claims, &l[i])
		}
	}
	if l, err := listAll(ctx, c.PersistentVolumes(), ""); err == nil {
		for i := range l {
			volumes = append(volumes, &l[i])
		}
	}
	if l, err := listAll(ctx, c.StorageClasses(), ""); err == nil {
		for i := range l {
			classes = append(classes, &l[i])
		}
	}
	return framework.NewStaticStorage(claims, volumes, classes)
}
