package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"minik/internal/resourcemetrics"
	"minik/kubelet/eviction"
	"minik/kubelet/runtime"
	"minik/proto/cri"
)

// summaryReading is one reading of what /stats/summary reports: the node
// from the host, the containers from the runtime.
type summaryReading struct {
	at         time.Time
	nodeCPU    uint64 // cumulative core-nanoseconds, 0 when unread
	node       eviction.NodeStats
	containers []*cri.Container
	usage      map[string]*cri.ContainerStats // by container ID
}

// statsSummary serves /stats/summary, the kubelet's stats API, which the
// apiserver's metrics.k8s.io reads. The first reading of a container has
// no rate yet; the kubelet then reads once more a moment later, so that
// the first answer already carries usageNanoCores.
func (srv *Server) statsSummary(w http.ResponseWriter, r *http.Request) {
	s, err := srv.summary(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(s)
}

// summary reads the stats summary, twice when a counter was read for the
// first time (see statsSummary).
func (srv *Server) summary(ctx context.Context) (*resourcemetrics.Summary, error) {
	read := func() (*resourcemetrics.Summary, bool, error) {
		rd, err := srv.readSummary(ctx)
		if err != nil {
			return nil, false, err
		}
		s, complete := summarize(srv.cfg.NodeName, srv.startTime, srv.cfg.Pods.All(), rd, &srv.cpuSampler)
		return s, complete, nil
	}
	s, complete, err := read()
	if err == nil && !complete {
		select {
		case <-time.After(summaryResample):
			s, _, err = read()
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return s, err
}

// summaryResample is how long after a first reading the second one is
// taken, for a rate over a short window.
const summaryResample = 250 * time.Millisecond

func (srv *Server) readSummary(ctx context.Context) (*summaryReading, error) {
	rd := &summaryReading{at: srv.cfg.Clock.Now(), usage: map[string]*cri.ContainerStats{}}
	rd.node, _ = eviction.ReadNodeStats(srv.cfg.RootDir) // a signal it cannot read is left out
	rd.nodeCPU, _ = readProcStatCPU("/proc/stat")
	var err error
	if rd.containers, err = srv.cfg.Runtime.ListContainers(ctx, ""); err != nil {
		return nil, err
	}
	usage, err := srv.cfg.Runtime.ListContainerStats(ctx)
	if err != nil {
		return nil, err
	}
	for _, u := range usage {
		rd.usage[u.ContainerId] = u
	}
	return rd, nil
}

// summarize builds the stats summary of one reading: the node, and each
// known pod with its running containers. CPU rates come from sampler
// (keyed by node, and by container ID); complete is false when a rate is
// missing because a counter was read for the first time.
func summarize(nodeName string, start time.Time, pods []*corev1.Pod, rd *summaryReading, sampler *resourcemetrics.Sampler) (s *resourcemetrics.Summary, complete bool) {
	complete = true
	at := metav1.NewTime(rd.at)
	cpu := func(key string, counter uint64, when time.Time) *resourcemetrics.CPUStats {
		c := &resourcemetrics.CPUStats{Time: metav1.NewTime(when), UsageCoreNanoSeconds: ptr.To(counter)}
		if rate, _, ok := sampler.Observe(key, resourcemetrics.Sample{Time: when, CoreNanoSeconds: counter}); ok {
			c.UsageNanoCores = ptr.To(rate)
		} else {
			complete = false
		}
		return c
	}
	s = &resourcemetrics.Summary{Node: resourcemetrics.NodeStats{NodeName: nodeName, StartTime: metav1.NewTime(start)}}
	if rd.nodeCPU > 0 {
		s.Node.CPU = cpu("node", rd.nodeCPU, rd.at)
	}
	if n := rd.node; n.MemoryCapacityBytes > 0 {
		s.Node.Memory = &resourcemetrics.MemoryStats{Time: at, WorkingSetBytes: ptr.To(uint64(n.MemoryWorkingSetBytes)),
			UsageBytes:     ptr.To(uint64(n.MemoryWorkingSetBytes)),
			AvailableBytes: ptr.To(uint64(max(0, n.MemoryCapacityBytes-n.MemoryWorkingSetBytes)))}
	}
	byPod := map[types.UID][]*cri.Container{}
	for _, c := range rd.containers {
		if c.State == cri.ContainerState_CONTAINER_RUNNING {
			uid := types.UID(c.Labels[runtime.LabelPodUID])
			byPod[uid] = append(byPod[uid], c)
		}
	}
	for _, pod := range pods {
		ps := resourcemetrics.PodStats{PodRef: resourcemetrics.PodReference{Name: pod.Name, Namespace: pod.Namespace, UID: string(pod.UID)}}
		if pod.Status.StartTime != nil {
			ps.StartTime = *pod.Status.StartTime
		}
		var podCPU, podWS, podUsage uint64
		var podRate uint64
		rates := true
		for _, c := range byPod[pod.UID] {
			u := rd.usage[c.Id]
			if u == nil {
				continue
			}
			when := rd.at
			if u.Timestamp != 0 {
				when = time.Unix(0, u.Timestamp)
			}
			cs := resourcemetrics.ContainerStats{Name: c.Labels[runtime.LabelContainerName],
				StartTime: metav1.NewTime(time.Unix(0, c.CreatedAt)),
				CPU:       cpu(c.Id, u.CpuUsageCoreNanoSeconds, when),
				Memory: &resourcemetrics.MemoryStats{Time: metav1.NewTime(when),
					WorkingSetBytes: ptr.To(u.MemoryWorkingSetBytes), UsageBytes: ptr.To(u.MemoryUsageBytes)}}
			podCPU += u.CpuUsageCoreNanoSeconds
			podWS += u.MemoryWorkingSetBytes
			podUsage += u.MemoryUsageBytes
			if cs.CPU.UsageNanoCores != nil {
				podRate += *cs.CPU.UsageNanoCores
			} else {
				rates = false
			}
			ps.Containers = append(ps.Containers, cs)
		}
		if len(ps.Containers) > 0 {
			ps.CPU = &resourcemetrics.CPUStats{Time: at, UsageCoreNanoSeconds: ptr.To(podCPU)}
			if rates {
				ps.CPU.UsageNanoCores = ptr.To(podRate)
			}
			ps.Memory = &resourcemetrics.MemoryStats{Time: at, WorkingSetBytes: ptr.To(podWS), UsageBytes: ptr.To(podUsage)}
		}
		s.Pods = append(s.Pods, ps)
	}
	return s, complete
}

// readProcStatCPU reads the host's cumulative CPU time from the "cpu"
// line of /proc/stat: user, nice, system, irq, softirq and steal (not
// idle and iowait; guest time is already in user), in USER_HZ (1/100 s)
// ticks, returned in core-nanoseconds.
func readProcStatCPU(path string) (uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 9 || fields[0] != "cpu" {
			continue
		}
		var ticks uint64
		for _, i := range []int{1, 2, 3, 6, 7, 8} { // user nice system [idle iowait] irq softirq steal
			v, err := strconv.ParseUint(fields[i], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: %w", path, err)
			}
			ticks += v
		}
		return ticks * uint64(time.Second/100), nil
	}
	return 0, fmt.Errorf("%s: no cpu line", path)
}
