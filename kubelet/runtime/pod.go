package runtime

import (
	"context"
	"sort"

	"k8s.io/apimachinery/pkg/types"

	"minik/proto/cri"
)

// Pod is what the runtime holds for one pod: its sandboxes and the
// containers in them, each newest first (upstream's kubecontainer.PodStatus).
type Pod struct {
	Sandboxes  []*cri.PodSandbox
	Containers []*cri.ContainerStatus
}

// ObservePod reads what the runtime holds for the pod with that UID.
func ObservePod(ctx context.Context, rt Runtime, uid types.UID) (*Pod, error) {
	sbs, err := rt.ListPodSandbox(ctx, string(uid))
	if err != nil {
		return nil, err
	}
	p := &Pod{}
	for _, sb := range sbs {
		p.Sandboxes = append(p.Sandboxes, sb)
		sts, err := ContainerStatuses(ctx, rt, sb.Id)
		if err != nil {
			return nil, err
		}
		p.Containers = append(p.Containers, sts...)
	}
	p.Sort()
	return p, nil
}

// Latest returns the newest container named name and the one before it.
func (p *Pod) Latest(name string) (cur, prev *cri.ContainerStatus) {
	for _, c := range p.Containers {
		if c.Metadata.GetName() != name {
			continue
		}
		if cur == nil {
			cur = c
		} else if prev == nil {
			prev = c
		}
	}
	return cur, prev
}

// AnyRunning reports whether a container of the pod still runs.
func (p *Pod) AnyRunning() bool {
	for _, c := range p.Containers {
		if c.State == cri.ContainerState_CONTAINER_RUNNING {
			return true
		}
	}
	return false
}

// ReadySandbox returns the newest ready sandbox, if any.
func (p *Pod) ReadySandbox() *cri.PodSandbox {
	for _, sb := range p.Sandboxes {
		if sb.State == cri.PodSandboxState_SANDBOX_READY {
			return sb
		}
	}
	return nil
}

// Sort orders the sandboxes and containers newest first.
func (p *Pod) Sort() {
	sort.SliceStable(p.Sandboxes, func(i, j int) bool { return p.Sandboxes[i].CreatedAt > p.Sandboxes[j].CreatedAt })
	sort.SliceStable(p.Containers, func(i, j int) bool { return p.Containers[i].CreatedAt > p.Containers[j].CreatedAt })
}
