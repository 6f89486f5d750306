package kubelet

import (
	"context"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik/internal/diskusage"
	"minik/kubelet/eviction"
	"minik/kubelet/runtime"
	"minik/proto/cri"
)

// hostStats is the real eviction.StatsProvider: the node from the host, the pods
// from the runtime's container stats and the kubelet's own directories
// (logs, emptyDir volumes on disk).
type hostStats struct{ k *Kubelet }

func (h hostStats) Summary(ctx context.Context, pods bool) (*eviction.Summary, error) {
	k := h.k
	node, nodeErr := eviction.ReadNodeStats(k.cfg.RootDir)
	if !pods {
		return &eviction.Summary{Node: node}, nodeErr
	}
	cs, err := k.rt.ListContainers(ctx, "")
	if err != nil {
		return nil, err
	}
	usage, err := k.rt.ListContainerStats(ctx)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]*cri.ContainerStats, len(usage))
	for _, u := range usage {
		byID[u.ContainerId] = u
	}
	// Every instance of a container counts: an exited one keeps its
	// writable layer until it is removed.
	containers := map[types.UID]map[string]*eviction.ContainerStats{}
	processes := map[types.UID]int64{}
	for _, c := range cs {
		uid, name := types.UID(c.Labels[runtime.LabelPodUID]), c.Labels[runtime.LabelContainerName]
		if containers[uid] == nil {
			containers[uid] = map[string]*eviction.ContainerStats{}
		}
		st := containers[uid][name]
		if st == nil {
			st = &eviction.ContainerStats{Name: name}
			containers[uid][name] = st
		}
		if u := byID[c.Id]; u != nil {
			st.MemoryWorkingSetBytes += int64(u.MemoryWorkingSetBytes)
			st.RootfsBytes += int64(u.WritableLayerBytes)
			st.RootfsInodes += int64(u.WritableLayerInodes)
			processes[uid] += int64(u.ProcessCount)
		}
	}
	summary := &eviction.Summary{Node: node, Pods: map[types.UID]eviction.PodStats{}}
	for _, pod := range k.knownPods() {
		ps := eviction.PodStats{Processes: processes[pod.UID]}
		for name, st := range containers[pod.UID] {
			st.LogsBytes, st.LogsInodes = diskusage.Of(filepath.Join(k.logDir(pod), name))
			ps.Containers = append(ps.Containers, *st)
		}
		for _, v := range pod.Spec.Volumes {
			if v.EmptyDir != nil && v.EmptyDir.Medium != corev1.StorageMediumMemory {
				b, n := diskusage.Of(filepath.Join(k.podDir(string(pod.UID)), "volumes", v.Name))
				ps.VolumeBytes += b
				ps.VolumeInodes += n
			}
		}
		summary.Pods[pod.UID] = ps
	}
	return summary, nodeErr
}

// knownPods are the pods the kubelet has workers for.
func (k *Kubelet) knownPods() []*corev1.Pod {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make([]*corev1.Pod, 0, len(k.workers))
	for _, w := range k.workers {
		w.mu.Lock()
		if w.pod != nil {
			out = append(out, w.pod)
		}
		w.mu.Unlock()
	}
	return out
}
