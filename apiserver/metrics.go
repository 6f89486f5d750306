package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"minik/apiserver/storage"
	"minik/internal/resourcemetrics"
)

// metricsWindow is the shortest window over which the apiserver computes
// a CPU rate from two cumulative readings of a kubelet, as metrics-server
// does with its scrape interval; sooner requests get the last rate.
const metricsWindow = 10 * time.Second

// kubeletSummaryTimeout bounds one kubelet's /stats/summary answer: a
// node that does not answer in time is left out, as metrics-server does.
const kubeletSummaryTimeout = 5 * time.Second

// serveMetrics answers get and list of metrics.k8s.io/v1beta1 NodeMetrics
// and PodMetrics. Nothing is stored: each request lists the nodes or pods
// it selects, asks their kubelets for /stats/summary (in parallel, over
// the connection logs and exec use) and turns the readings into usage:
//
//	kubectl top pods → apiserver /apis/metrics.k8s.io/v1beta1/namespaces/NS/pods
//	                 → https://NODE:10250/stats/summary (each node running a selected pod)
//	                 → cpu: rate of usageCoreNanoSeconds (Sampler), memory: working set
func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request, ri *requestInfo) {
	h := ri.handler
	if ri.verb != "get" && ri.verb != "list" {
		writeError(w, r, methodNotAllowed(r))
		return
	}
	q := r.URL.Query()
	pred, err := newPredicate(h.res, ri.namespace, q.Get("labelSelector"), q.Get("fieldSelector"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	name := ri.name
	match := func(o runtime.Object) bool {
		if name != "" {
			m := o.(metav1.Object)
			return m.GetName() == name && (ri.namespace == "" || m.GetNamespace() == ri.namespace)
		}
		return pred.Matches(o)
	}
	var items []runtime.Object
	if h.res.Resource == "nodes" {
		items, err = s.nodeMetrics(r.Context(), match)
	} else {
		items, err = s.podMetrics(r.Context(), ri.namespace, match)
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	if name != "" {
		if len(items) == 0 {
			// In metrics-server's words: podmetrics.metrics.k8s.io "NS/NAME" not found.
			gr, what := schema.GroupResource{Group: h.res.Group, Resource: strings.ToLower(h.res.Kind)}, name
			if ri.namespace != "" {
				what = ri.namespace + "/" + name
			}
			writeError(w, r, apierrors.NewNotFound(gr, what))
			return
		}
		s.writeMaybeTable(w, r, h, http.StatusOK, items[0])
		return
	}
	if tableRequested(r) {
		s.writeTable(w, r, h, metav1.ListMeta{}, items)
		return
	}
	if h.res.Resource == "nodes" {
		list := &resourcemetrics.NodeMetricsList{TypeMeta: metav1.TypeMeta{Kind: "NodeMetricsList", APIVersion: resourcemetrics.GroupVersion},
			Items: []resourcemetrics.NodeMetrics{}}
		for _, o := range items {
			list.Items = append(list.Items, *o.(*resourcemetrics.NodeMetrics))
		}
		writeObject(w, r, http.StatusOK, list)
		return
	}
	list := &resourcemetrics.PodMetricsList{TypeMeta: metav1.TypeMeta{Kind: "PodMetricsList", APIVersion: resourcemetrics.GroupVersion},
		Items: []resourcemetrics.PodMetrics{}}
	for _, o := range items {
		list.Items = append(list.Items, *o.(*resourcemetrics.PodMetrics))
	}
	writeObject(w, r, http.StatusOK, list)
}

func (s *Server) nodeMetrics(ctx context.Context, match func(runtime.Object) bool) ([]runtime.Object, error) {
	res, err := s.nodes.List(ctx, storage.ListOptions{Match: match})
	if err != nil {
		return nil, err
	}
	var nodes []*corev1.Node
	for _, o := range res.Items {
		nodes = append(nodes, o.(*corev1.Node))
	}
	summaries := s.kubeletSummaries(ctx, nodes)
	var out []runtime.Object
	for _, n := range nodes {
		if sum := summaries[n.Name]; sum != nil {
			if m := nodeUsage(n, &sum.Node, &s.metricsSampler); m != nil {
				out = append(out, m)
			}
		}
	}
	return out, nil
}

func (s *Server) podMetrics(ctx context.Context, namespace string, match func(runtime.Object) bool) ([]runtime.Object, error) {
	res, err := s.pods.List(ctx, storage.ListOptions{Namespace: namespace, Match: match})
	if err != nil {
		return nil, err
	}
	var pods []*corev1.Pod
	nodeNames := map[string]bool{}
	for _, o := range res.Items {
		p := o.(*corev1.Pod)
		if p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning {
			pods = append(pods, p)
			nodeNames[p.Spec.NodeName] = true
		}
	}
	var nodes []*corev1.Node
	for name := range nodeNames {
		if o, err := s.nodes.Get(ctx, "", name); err == nil {
			nodes = append(nodes, o.(*corev1.Node))
		}
	}
	summaries := s.kubeletSummaries(ctx, nodes)
	byUID := map[string]*resourcemetrics.PodStats{}
	for _, sum := range summaries {
		for i := range sum.Pods {
			byUID[sum.Pods[i].PodRef.UID] = &sum.Pods[i]
		}
	}
	var out []runtime.Object
	for _, p := range pods {
		if ps := byUID[string(p.UID)]; ps != nil {
			if m := podUsage(p, ps, &s.metricsSampler); m != nil {
				out = append(out, m)
			}
		}
	}
	return out, nil
}

// kubeletSummaries asks each node's kubelet for /stats/summary at once;
// a node that fails is logged and left out.
func (s *Server) kubeletSummaries(ctx context.Context, nodes []*corev1.Node) map[string]*resourcemetrics.Summary {
	var mu sync.Mutex
	var wg sync.WaitGroup
	out := map[string]*resourcemetrics.Summary{}
	for _, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sum, err := s.kubeletSummary(ctx, n)
			if err != nil {
				slog.Warn("reading a kubelet's stats summary", "node", n.Name, "err", err)
				return
			}
			mu.Lock()
			out[n.Name] = sum
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

func (s *Server) kubeletSummary(ctx context.Context, node *corev1.Node) (*resourcemetrics.Summary, error) {
	ctx, cancel := context.WithTimeout(ctx, kubeletSummaryTimeout)
	defer cancel()
	client, req, err := s.kubeletGet(ctx, node, "/stats/summary", nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("kubelet answered %d: %s", resp.StatusCode, strings.TrimSpace(string(msg)))
	}
	var sum resourcemetrics.Summary
	if err := json.NewDecoder(resp.Body).Decode(&sum); err != nil {
		return nil, fmt.Errorf("decoding the stats summary: %w", err)
	}
	return &sum, nil
}

// cpuUsage is the CPU rate of one cumulative reading: the apiserver's own
// over its window when it has an earlier reading of key, otherwise the
// kubelet's (usageNanoCores over the kubelet's window). ok is false when
// there is neither.
func cpuUsage(key string, c *resourcemetrics.CPUStats, sampler *resourcemetrics.Sampler) (nanoCores uint64, window time.Duration, ok bool) {
	if c == nil {
		return 0, 0, false
	}
	if c.UsageCoreNanoSeconds != nil {
		if r, w, ok := sampler.Observe(key, resourcemetrics.Sample{Time: c.Time.Time, CoreNanoSeconds: *c.UsageCoreNanoSeconds}); ok {
			return r, w, true
		}
	}
	if c.UsageNanoCores != nil {
		return *c.UsageNanoCores, 0, true
	}
	return 0, 0, false
}

func cpuQuantity(nanoCores uint64) resource.Quantity {
	return *resource.NewScaledQuantity(int64(nanoCores), resource.Nano)
}

func memoryQuantity(m *resourcemetrics.MemoryStats) (resource.Quantity, bool) {
	if m == nil || m.WorkingSetBytes == nil {
		return resource.Quantity{}, false
	}
	return *resource.NewQuantity(int64(*m.WorkingSetBytes), resource.BinarySI), true
}

// nodeUsage is a node's NodeMetrics, nil while its CPU or memory is unknown.
func nodeUsage(node *corev1.Node, st *resourcemetrics.NodeStats, sampler *resourcemetrics.Sampler) *resourcemetrics.NodeMetrics {
	cpu, window, ok := cpuUsage("node/"+node.Name, st.CPU, sampler)
	mem, memOK := memoryQuantity(st.Memory)
	if !ok || !memOK {
		return nil
	}
	return &resourcemetrics.NodeMetrics{
		TypeMeta:   metav1.TypeMeta{Kind: "NodeMetrics", APIVersion: resourcemetrics.GroupVersion},
		ObjectMeta: metav1.ObjectMeta{Name: node.Name, Labels: node.Labels, CreationTimestamp: metav1.Now()},
		Timestamp:  st.CPU.Time, Window: metav1.Duration{Duration: window},
		Usage: corev1.ResourceList{corev1.ResourceCPU: cpuQuantity(cpu), corev1.ResourceMemory: mem},
	}
}

// podUsage is a pod's PodMetrics with each running container's usage;
// nil when a container's is unknown (metrics-server leaves such a pod
// out rather than report part of it).
func podUsage(pod *corev1.Pod, st *resourcemetrics.PodStats, sampler *resourcemetrics.Sampler) *resourcemetrics.PodMetrics {
	if len(st.Containers) == 0 {
		return nil
	}
	m := &resourcemetrics.PodMetrics{
		TypeMeta:   metav1.TypeMeta{Kind: "PodMetrics", APIVersion: resourcemetrics.GroupVersion},
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, Labels: pod.Labels, CreationTimestamp: metav1.Now()},
	}
	for _, c := range st.Containers {
		cpu, window, ok := cpuUsage("pod/"+string(pod.UID)+"/"+c.Name, c.CPU, sampler)
		mem, memOK := memoryQuantity(c.Memory)
		if !ok || !memOK {
			return nil
		}
		if c.CPU.Time.After(m.Timestamp.Time) {
			m.Timestamp = c.CPU.Time
		}
		m.Window = metav1.Duration{Duration: max(m.Window.Duration, window)}
		m.Containers = append(m.Containers, resourcemetrics.ContainerMetrics{Name: c.Name,
			Usage: corev1.ResourceList{corev1.ResourceCPU: cpuQuantity(cpu), corev1.ResourceMemory: mem}})
	}
	sort.Slice(m.Containers, func(i, j int) bool { return m.Containers[i].Name < m.Containers[j].Name })
	return m
}
