// Package volumebinding places pods that use PersistentVolumeClaims:
// a claim bound to a volume with node affinity (a local-path volume)
// takes the pod to that node; an unbound WaitForFirstConsumer claim only
// to nodes where a free volume matches it or its class can provision.
// Once a node is chosen, PreBind records it on those claims
// (volume.kubernetes.io/selected-node), which tells the PersistentVolume
// binder (controller/volume) where to bind or provision.
//
//	PreFilter: the pod's claims ─▶ missing/deleting claim, unbound Immediate claim: reject everywhere
//	                            └▶ bound volumes + unbound WFFC claims into the cycle state
//	Filter(node): every bound volume's node affinity matches? every WFFC claim bindable or provisionable here?
//	PreBind(node): annotate the WFFC claims with the node
package volumebinding

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"minik/internal/volumeutil"
	"minik/scheduler/framework"
)

const (
	// Name is the plugin's name in the registry.
	Name = "VolumeBinding"

	// The rejection reasons, as upstream words them.
	ErrReasonNodeConflict     = "node(s) had volume node affinity conflict"
	ErrReasonBindConflict     = "node(s) didn't find available persistent volumes to bind"
	ErrReasonUnboundImmediate = "pod has unbound immediate PersistentVolumeClaims"
	ErrReasonPVNotExist       = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"

	// noProvisioner is the provisioner of classes whose volumes are made
	// by hand (upstream's kubernetes.io/no-provisioner).
	noProvisioner = "kubernetes.io/no-provisioner"
)

// ClaimPatcher writes the selected node onto a claim (the API client).
type ClaimPatcher interface {
	PatchClaim(ctx context.Context, namespace, name string, patch []byte) error
}

// VolumeBinding is a PreFilter, Filter and PreBind plugin.
type VolumeBinding struct {
	patcher ClaimPatcher
}

var (
	_ framework.PreFilterPlugin = &VolumeBinding{}
	_ framework.FilterPlugin    = &VolumeBinding{}
	_ framework.PreBindPlugin   = &VolumeBinding{}
)

// New returns the plugin; patcher may be nil for a profile that only
// evaluates (`minik explain`): PreBind then refuses.
func New(patcher ClaimPatcher) *VolumeBinding { return &VolumeBinding{patcher: patcher} }

// Name implements framework.Plugin.
func (*VolumeBinding) Name() string { return Name }

var stateKey = framework.NewStateKey(Name)

// state is what PreFilter found for the pod.
type state struct {
	bound   []*corev1.PersistentVolume      // volumes of the pod's bound claims
	unbound []*corev1.PersistentVolumeClaim // WaitForFirstConsumer claims without a volume
	classes map[string]*storagev1.StorageClass
	volumes []*corev1.PersistentVolume // every volume, for matching
	// missingVolume: a bound claim's volume does not exist. Every node
	// says so in Filter, as upstream counts it per node.
	missingVolume bool
}

// claimNames lists the claims a pod uses, each once.
func claimNames(pod *corev1.Pod) []string {
	var out []string
	seen := map[string]bool{}
	for i := range pod.Spec.Volumes {
		if n := volumeutil.ClaimVolumeName(pod, &pod.Spec.Volumes[i]); n != "" && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// PreFilter implements framework.PreFilterPlugin.
func (pl *VolumeBinding) PreFilter(cs *framework.CycleState, pod *corev1.Pod, snap framework.SharedLister) *framework.Status {
	names := claimNames(pod)
	if len(names) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	st := snap.Storage()
	s := &state{classes: map[string]*storagev1.StorageClass{}, volumes: st.Volumes()}
	immediate := false
	for _, n := range names {
		c := st.Claim(pod.Namespace, n)
		switch {
		case c == nil:
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("persistentvolumeclaim %q not found", n))
		case c.DeletionTimestamp != nil:
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("persistentvolumeclaim %q is being deleted", n))
		case c.Spec.VolumeName != "":
			if v := st.Volume(c.Spec.VolumeName); v != nil {
				s.bound = append(s.bound, v)
			} else {
				s.missingVolume = true
			}
			continue
		}
		className := volumeutil.ClaimClass(c)
		class := st.Class(className)
		if class == nil || volumeutil.BindingMode(class) != storagev1.VolumeBindingWaitForFirstConsumer {
			immediate = true // the binder binds these without waiting for the pod
			continue
		}
		s.classes[className] = class
		s.unbound = append(s.unbound, c)
	}
	if immediate {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonUnboundImmediate)
	}
	cs.Write(stateKey, s)
	return nil
}

// Filter implements framework.FilterPlugin.
func (pl *VolumeBinding) Filter(cs *framework.CycleState, _ *corev1.Pod, ni *framework.NodeInfo) *framework.Status {
	v, err := cs.Read(stateKey)
	if err != nil {
		return framework.AsStatus(err)
	}
	s := v.(*state)
	node := ni.Node()
	// Every reason that holds, in upstream's order.
	var reasons []string
	for _, pv := range s.bound {
		if !volumeutil.NodeAffinityMatches(pv, node) {
			reasons = append(reasons, ErrReasonNodeConflict)
			break
		}
	}
	taken := map[string]bool{}
	for _, c := range s.unbound {
		if !canBind(c, s, node, taken) {
			reasons = append(reasons, ErrReasonBindConflict)
			break
		}
	}
	if s.missingVolume {
		reasons = append(reasons, ErrReasonPVNotExist)
	}
	if len(reasons) > 0 {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, reasons...)
	}
	return nil
}

// canBind reports whether claim c can be served on node: a free matching
// volume reachable from the node (marked taken for the pod's other
// claims), or a class that provisions there. A claim already given to a
// node (selected-node) is served only there.
func canBind(c *corev1.PersistentVolumeClaim, s *state, node *corev1.Node, taken map[string]bool) bool {
	if sel := c.Annotations[volumeutil.AnnSelectedNode]; sel != "" && sel != node.Name {
		return false
	}
	if v := volumeutil.FindVolume(c, s.volumes, taken, node); v != nil {
		taken[v.Name] = true
		return true
	}
	class := s.classes[volumeutil.ClaimClass(c)]
	switch class.Provisioner {
	case noProvisioner, "":
		return false
	case volumeutil.LocalPathProvisioner:
		// Only a node whose kubelet publishes its local-path directory
		// can hold the volume.
		return node.Annotations[volumeutil.AnnLocalPathDir] != ""
	}
	return true // another provisioner: assume it serves every node
}

// PreBind implements framework.PreBindPlugin: each unbound
// WaitForFirstConsumer claim of the pod gets the chosen node, for the
// binder to bind or provision there. The pod is bound at once; its
// kubelet waits for the claims to be bound before it mounts them.
func (pl *VolumeBinding) PreBind(ctx context.Context, cs *framework.CycleState, _ *corev1.Pod, nodeName string) *framework.Status {
	v, err := cs.Read(stateKey)
	if err != nil {
		return nil // no claims: PreFilter skipped
	}
	if pl.patcher == nil {
		return framework.NewStatus(framework.Error, "no API client to record the selected node")
	}
	for _, c := range v.(*state).unbound {
		if c.Annotations[volumeutil.AnnSelectedNode] == nodeName {
			continue
		}
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
			"annotations": map[string]string{volumeutil.AnnSelectedNode: nodeName}}})
		if err := pl.patcher.PatchClaim(ctx, c.Namespace, c.Name, patch); err != nil && !apierrors.IsNotFound(err) {
			return framework.AsStatus(fmt.Errorf("recording the selected node on claim %s/%s: %w", c.Namespace, c.Name, err))
		}
	}
	return nil
}
