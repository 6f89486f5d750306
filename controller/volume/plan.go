// Package volume holds the PersistentVolume controllers: the binder (claims
// to volumes, phases, reclaim), the local-path provisioner's control-plane
// half (the PV object; the kubelet makes the directory) and the protection
// controller (the pvc- and pv-protection finalizers). Each is a pure plan
// over the informers' objects; Controller performs the plans' actions
// through a framework.Sink (apiSink; a FakeSink in tests).
package volume

import (
	"fmt"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/controller/framework"
	"minik/internal/volumeutil"
)

// Event reasons and messages, as upstream's PersistentVolume controller
// and provisioners write them.
const (
	ReasonFailedBinding         = "FailedBinding"
	ReasonWaitForFirstConsumer  = "WaitForFirstConsumer"
	ReasonExternalProvisioning  = "ExternalProvisioning"
	ReasonProvisioning          = "Provisioning"
	ReasonProvisioningSucceeded = "ProvisioningSucceeded"
	ReasonProvisioningFailed    = "ProvisioningFailed"
	ReasonClaimLost             = "ClaimLost"
	ReasonClaimMisbound         = "ClaimMisbound"
	ReasonVolumeFailedDelete    = "VolumeFailedDelete"
	ReasonVolumeFailedRecycle   = "VolumeFailedRecycle"

	msgNoClass         = "no persistent volumes available for this claim and no storage class is set"
	msgWaitForConsumer = "waiting for first consumer to be created before binding"
)

// Snapshot is what one binder pass sees.
type Snapshot struct {
	Claims  []*corev1.PersistentVolumeClaim
	Volumes []*corev1.PersistentVolume
	Classes map[string]*storagev1.StorageClass
	Nodes   map[string]*corev1.Node
	// Pods are every pod: the claims they use are protected.
	Pods []*corev1.Pod
}

// ActionType says what an Action does.
type ActionType string

const (
	UpdateClaim        ActionType = "UpdateClaim"        // spec or metadata
	UpdateClaimStatus  ActionType = "UpdateClaimStatus"  // status
	UpdateVolume       ActionType = "UpdateVolume"       // spec or metadata
	UpdateVolumeStatus ActionType = "UpdateVolumeStatus" // status
	CreateVolume       ActionType = "CreateVolume"
	RecordEvent        ActionType = "Event"
)

// Action is one write; Claim or Volume is the new object (a copy). Events
// name their object and carry type, reason and message.
type Action struct {
	Type      ActionType
	Claim     *corev1.PersistentVolumeClaim
	Volume    *corev1.PersistentVolume
	EventType string // Normal or Warning, for events
	Reason    string
	Message   string
}

// String names the action and its object, with what it writes.
func (a Action) String() string {
	switch {
	case a.Type == RecordEvent && a.Claim != nil:
		return fmt.Sprintf("%s %s %s/%s %s: %s", a.Type, a.EventType, a.Claim.Namespace, a.Claim.Name, a.Reason, a.Message)
	case a.Type == RecordEvent:
		return fmt.Sprintf("%s %s %s %s: %s", a.Type, a.EventType, a.Volume.Name, a.Reason, a.Message)
	case a.Claim != nil:
		return fmt.Sprintf("%s %s/%s volume=%q phase=%s", a.Type, a.Claim.Namespace, a.Claim.Name, a.Claim.Spec.VolumeName, a.Claim.Status.Phase)
	default:
		claim := ""
		if r := a.Volume.Spec.ClaimRef; r != nil {
			claim = r.Namespace + "/" + r.Name
		}
		return fmt.Sprintf("%s %s claim=%q phase=%s", a.Type, a.Volume.Name, claim, a.Volume.Status.Phase)
	}
}

func claimEvent(c *corev1.PersistentVolumeClaim, typ, reason, msg string) Action {
	return Action{Type: RecordEvent, Claim: c, EventType: typ, Reason: reason, Message: msg}
}

func volumeEvent(v *corev1.PersistentVolume, typ, reason, msg string) Action {
	return Action{Type: RecordEvent, Volume: v, EventType: typ, Reason: reason, Message: msg}
}

// Output is one pass's writes and events, in order.
type Output = framework.Output[Action]

// Plan is one pass over every claim and volume: the binder's, then the
// protection's (ProtectionPlan). It returns the writes that move each a
// step on; after they land, the informers' events bring the next pass.
func Plan(s Snapshot) Output {
	return Output{Actions: append(bindPlan(s), ProtectionPlan(s.Claims, s.Volumes, s.Pods)...)}
}

// bindPlan is the binder's pass. Claims are handled first (a bind
// changes both sides), then volumes whose claim is gone or that are new.
func bindPlan(s Snapshot) []Action {
	var out []Action
	touched := map[string]bool{} // volumes a claim's actions already write
	byName := map[string]*corev1.PersistentVolume{}
	for _, v := range s.Volumes {
		byName[v.Name] = v
	}
	claims := map[string]*corev1.PersistentVolumeClaim{}
	for _, c := range s.Claims {
		claims[c.Namespace+"/"+c.Name] = c
	}
	for _, c := range sortedClaims(s.Claims) {
		acts := planClaim(c, s, byName, touched)
		for _, a := range acts {
			if a.Volume != nil && a.Type != RecordEvent {
				touched[a.Volume.Name] = true
				byName[a.Volume.Name] = a.Volume // a later claim must not take it
			}
		}
		out = append(out, acts...)
	}
	for _, v := range s.Volumes {
		if !touched[v.Name] {
			out = append(out, planVolume(v, claims[claimKey(v)], s.Classes)...)
		}
	}
	return out
}

// sortedClaims orders claims oldest first, as upstream's queue roughly
// does, so that an older claim gets the volume two claims could take.
func sortedClaims(cs []*corev1.PersistentVolumeClaim) []*corev1.PersistentVolumeClaim {
	out := slices.Clone(cs)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	return out
}

func claimKey(v *corev1.PersistentVolume) string {
	if v.Spec.ClaimRef == nil {
		return ""
	}
	return v.Spec.ClaimRef.Namespace + "/" + v.Spec.ClaimRef.Name
}

// boundTo reports whether v's claimRef names c (the uid too, once set).
func boundTo(v *corev1.PersistentVolume, c *corev1.PersistentVolumeClaim) bool {
	r := v.Spec.ClaimRef
	return r != nil && r.Namespace == c.Namespace && r.Name == c.Name && (r.UID == "" || r.UID == c.UID)
}

func planClaim(c *corev1.PersistentVolumeClaim, s Snapshot, vols map[string]*corev1.PersistentVolume, touched map[string]bool) []Action {
	if c.Spec.VolumeName != "" {
		return planBoundClaim(c, vols[c.Spec.VolumeName])
	}
	if c.DeletionTimestamp != nil {
		return nil // going: do not bind it now
	}
	// A volume made for (or pre-bound to) this claim comes first.
	for _, v := range sortedVolumes(vols) {
		if boundTo(v, c) && v.DeletionTimestamp == nil && v.Status.Phase != corev1.VolumeReleased && v.Status.Phase != corev1.VolumeFailed {
			if !volumeutil.Matches(v, c) {
				return []Action{claimEvent(c, corev1.EventTypeWarning, ReasonFailedBinding,
					fmt.Sprintf("volume %q is pre-bound to this claim but does not match it", v.Name))}
			}
			return bind(c, v)
		}
	}
	className := volumeutil.ClaimClass(c)
	class := s.Classes[className]
	wffc := class != nil && volumeutil.BindingMode(class) == storagev1.VolumeBindingWaitForFirstConsumer
	selected := c.Annotations[volumeutil.AnnSelectedNode]
	if wffc && selected == "" {
		if c.Status.Phase != corev1.ClaimPending {
			return []Action{setClaimPhase(c, corev1.ClaimPending), claimEvent(c, corev1.EventTypeNormal, ReasonWaitForFirstConsumer, msgWaitForConsumer)}
		}
		return []Action{claimEvent(c, corev1.EventTypeNormal, ReasonWaitForFirstConsumer, msgWaitForConsumer)}
	}
	var node *corev1.Node
	if wffc {
		node = s.Nodes[selected]
	}
	if v := volumeutil.FindVolume(c, sortedVolumes(vols), touched, node); v != nil {
		return bind(c, v)
	}
	// No volume: hand the claim to its class's provisioner.
	switch {
	case className == "":
		return []Action{claimEvent(c, corev1.EventTypeNormal, ReasonFailedBinding, msgNoClass)}
	case class == nil:
		return []Action{claimEvent(c, corev1.EventTypeWarning, ReasonProvisioningFailed,
			fmt.Sprintf("storageclass.storage.k8s.io %q not found", className))}
	}
	var out []Action
	if c.Annotations[volumeutil.AnnStorageProvisioner] != class.Provisioner {
		nc := c.DeepCopy()
		metav1.SetMetaDataAnnotation(&nc.ObjectMeta, volumeutil.AnnStorageProvisioner, class.Provisioner)
		metav1.SetMetaDataAnnotation(&nc.ObjectMeta, volumeutil.AnnBetaStorageProvisioner, class.Provisioner)
		out = append(out, Action{Type: UpdateClaim, Claim: nc})
		c = nc
	}
	if class.Provisioner != volumeutil.LocalPathProvisioner {
		return append(out, claimEvent(c, corev1.EventTypeNormal, ReasonExternalProvisioning,
			fmt.Sprintf("Waiting for a volume to be created either by the external provisioner '%s' or manually by the system administrator. If volume creation is delayed, please verify that the provisioner is running and correctly registered.", class.Provisioner)))
	}
	pv, err := ProvisionLocalPath(c, class, s.Nodes[selected], selected)
	if err != nil {
		return append(out, claimEvent(c, corev1.EventTypeWarning, ReasonProvisioningFailed, err.Error()))
	}
	if _, exists := vols[pv.Name]; exists {
		return out // made by an earlier pass; its informer event will bind it
	}
	return append(out, Action{Type: CreateVolume, Volume: pv},
		claimEvent(c, corev1.EventTypeNormal, ReasonProvisioningSucceeded, fmt.Sprintf("Successfully provisioned volume %s", pv.Name)))
}

func sortedVolumes(vols map[string]*corev1.PersistentVolume) []*corev1.PersistentVolume {
	out := make([]*corev1.PersistentVolume, 0, len(vols))
	for _, v := range vols {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// bind writes both sides in upstream's order: the volume's claimRef, its
// phase, the claim's volumeName, then the claim's status.
func bind(c *corev1.PersistentVolumeClaim, v *corev1.PersistentVolume) []Action {
	var out []Action
	nv := v.DeepCopy()
	if r := nv.Spec.ClaimRef; r == nil || r.UID != c.UID {
		if r == nil {
			metav1.SetMetaDataAnnotation(&nv.ObjectMeta, volumeutil.AnnBoundByController, "yes")
		}
		nv.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
			Namespace: c.Namespace, Name: c.Name, UID: c.UID, ResourceVersion: c.ResourceVersion}
		out = append(out, Action{Type: UpdateVolume, Volume: nv})
	}
	if nv.Status.Phase != corev1.VolumeBound {
		nv = nv.DeepCopy()
		nv.Status.Phase, nv.Status.Reason, nv.Status.Message = corev1.VolumeBound, "", ""
		out = append(out, Action{Type: UpdateVolumeStatus, Volume: nv})
	}
	nc := c.DeepCopy()
	nc.Spec.VolumeName = v.Name
	metav1.SetMetaDataAnnotation(&nc.ObjectMeta, volumeutil.AnnBindCompleted, "yes")
	metav1.SetMetaDataAnnotation(&nc.ObjectMeta, volumeutil.AnnBoundByController, "yes")
	out = append(out, Action{Type: UpdateClaim, Claim: nc})
	return append(out, claimStatusBound(nc, v)...)
}

func claimStatusBound(c *corev1.PersistentVolumeClaim, v *corev1.PersistentVolume) []Action {
	cap := volumeutil.Capacity(v)
	have := c.Status.Capacity[corev1.ResourceStorage]
	if c.Status.Phase == corev1.ClaimBound && have.Cmp(cap) == 0 && slices.Equal(c.Status.AccessModes, v.Spec.AccessModes) {
		return nil
	}
	nc := c.DeepCopy()
	nc.Status.Phase = corev1.ClaimBound
	nc.Status.AccessModes = slices.Clone(v.Spec.AccessModes)
	nc.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: cap}
	return []Action{{Type: UpdateClaimStatus, Claim: nc}}
}

func setClaimPhase(c *corev1.PersistentVolumeClaim, p corev1.PersistentVolumeClaimPhase) Action {
	nc := c.DeepCopy()
	nc.Status.Phase = p
	return Action{Type: UpdateClaimStatus, Claim: nc}
}

// planBoundClaim checks a claim that names its volume.
func planBoundClaim(c *corev1.PersistentVolumeClaim, v *corev1.PersistentVolume) []Action {
	switch {
	case v == nil:
		if c.Status.Phase == corev1.ClaimLost {
			return nil
		}
		return []Action{setClaimPhase(c, corev1.ClaimLost),
			claimEvent(c, corev1.EventTypeWarning, ReasonClaimLost, "Bound claim has lost its PersistentVolume. Data on the volume is lost!")}
	case v.Spec.ClaimRef == nil:
		// Pre-bound by the user to a free volume: finish the volume's side.
		if c.DeletionTimestamp != nil {
			return nil
		}
		if !volumeutil.Matches(v, c) {
			return []Action{claimEvent(c, corev1.EventTypeWarning, ReasonFailedBinding, fmt.Sprintf("Cannot bind to requested volume %q: it does not match the claim", v.Name))}
		}
		return bind(c, v)
	case boundTo(v, c):
		out := []Action{}
		if v.Spec.ClaimRef.UID == "" {
			return bind(c, v)
		}
		if c.Annotations[volumeutil.AnnBindCompleted] == "" {
			nc := c.DeepCopy()
			metav1.SetMetaDataAnnotation(&nc.ObjectMeta, volumeutil.AnnBindCompleted, "yes")
			out = append(out, Action{Type: UpdateClaim, Claim: nc})
			c = nc
		}
		if v.Status.Phase != corev1.VolumeBound {
			nv := v.DeepCopy()
			nv.Status.Phase = corev1.VolumeBound
			out = append(out, Action{Type: UpdateVolumeStatus, Volume: nv})
		}
		return append(out, claimStatusBound(c, v)...)
	default:
		if c.Status.Phase == corev1.ClaimLost {
			return nil
		}
		return []Action{setClaimPhase(c, corev1.ClaimLost),
			claimEvent(c, corev1.EventTypeWarning, ReasonClaimMisbound, "Two claims are bound to the same volume, this one is bound incorrectly")}
	}
}

// planVolume checks a volume no claim pass wrote: free volumes become
// Available, volumes whose claim is gone are Released and reclaimed.
func planVolume(v *corev1.PersistentVolume, c *corev1.PersistentVolumeClaim, classes map[string]*storagev1.StorageClass) []Action {
	r := v.Spec.ClaimRef
	switch {
	case r == nil:
		return volumePhase(v, corev1.VolumeAvailable, "", "")
	case r.UID == "" && c == nil:
		return volumePhase(v, corev1.VolumeAvailable, "", "") // pre-bound, waiting for its claim
	case c != nil && (r.UID == "" || r.UID == c.UID):
		if c.Spec.VolumeName == v.Name || c.Spec.VolumeName == "" {
			return nil // the claim's pass binds it
		}
		// The claim went to another volume: undo our half-binding.
		if v.Annotations[volumeutil.AnnBoundByController] != "" {
			nv := v.DeepCopy()
			nv.Spec.ClaimRef = nil
			delete(nv.Annotations, volumeutil.AnnBoundByController)
			return []Action{{Type: UpdateVolume, Volume: nv}}
		}
		return nil
	}
	// The claim is gone (or is a new claim of the same name).
	if v.Status.Phase == corev1.VolumeFailed {
		return nil
	}
	out := volumePhase(v, corev1.VolumeReleased, "", "")
	if len(out) > 0 {
		v = out[len(out)-1].Volume
	}
	switch v.Spec.PersistentVolumeReclaimPolicy {
	case corev1.PersistentVolumeReclaimRetain:
		return out
	case corev1.PersistentVolumeReclaimRecycle:
		msg := "No recycler plugin found for the volume!"
		return append(volumePhase(v, corev1.VolumeFailed, ReasonVolumeFailedRecycle, msg), volumeEvent(v, corev1.EventTypeWarning, ReasonVolumeFailedRecycle, msg))
	}
	// Delete: the provisioner that made the volume deletes it. For
	// local-path that is the kubelet of the volume's node (it removes the
	// directory, then the object); volumes made by hand have no deleter.
	if v.Annotations[volumeutil.AnnProvisionedBy] == "" {
		msg := "error getting deleter volume plugin for volume \"" + v.Name + "\": no deletable volume plugin matched"
		return append(volumePhase(v, corev1.VolumeFailed, ReasonVolumeFailedDelete, msg), volumeEvent(v, corev1.EventTypeWarning, ReasonVolumeFailedDelete, msg))
	}
	return out
}

func volumePhase(v *corev1.PersistentVolume, p corev1.PersistentVolumePhase, reason, msg string) []Action {
	if v.Status.Phase == p && v.Status.Message == msg {
		return nil
	}
	nv := v.DeepCopy()
	nv.Status.Phase, nv.Status.Reason, nv.Status.Message = p, reason, msg
	return []Action{{Type: UpdateVolumeStatus, Volume: nv}}
}
