// Package statefulset runs the pods of StatefulSets: stable names
// NAME-0..N-1, one claim per volumeClaimTemplate and ordinal, ordered or
// parallel creation and deletion, and rolling updates from the highest
// ordinal down. See README.md for the flow.
package statefulset

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"minik/controller/framework"
	"minik/controller/internal/history"
)

// Labels a StatefulSet puts on its pods besides the template's.
const (
	PodNameLabel  = appsv1.StatefulSetPodNameLabel // statefulset.kubernetes.io/pod-name
	PodIndexLabel = appsv1.PodIndexLabel           // apps.kubernetes.io/pod-index
)

// Revisions are the set's two revisions: pods below the partition keep
// Current, the others get Update. Both hold a pod template.
type Revisions struct {
	// Owned are the set's revisions in the cache, for pruning.
	Owned           []*appsv1.ControllerRevision
	Current, Update *appsv1.ControllerRevision
	CurrentTemplate *corev1.PodTemplateSpec
	UpdateTemplate  *corev1.PodTemplateSpec
}

// Observed is what the plan reads: the set's pods (by the controller
// index) and the claims of its namespace by name.
type Observed struct {
	Pods   []*corev1.Pod
	Claims map[string]*corev1.PersistentVolumeClaim
}

// Event is an event the plan asks for (outcomes of API calls are
// reported by the driver).
type Event struct{ Type, Reason, Message string }

// ActionType says what an Action does.
type ActionType string

const (
	// RecordEvent records Event on the set.
	RecordEvent ActionType = "RecordEvent"
	// CreateClaim creates Claim, before the pod that mounts it.
	CreateClaim ActionType = "CreateClaim"
	// UpdateClaim writes Claim's ownerReferences (the retention policy):
	// the set owns it with whenDeleted=Delete, a condemned pod with
	// whenScaled=Delete.
	UpdateClaim ActionType = "UpdateClaim"
	// ManagePods creates Create (but those whose claim failed) and
	// deletes Delete, all at once: the expectations cover them together.
	ManagePods ActionType = "ManagePods"
	// DeleteRevision deletes Revision, beyond revisionHistoryLimit.
	DeleteRevision ActionType = "DeleteRevision"
	// UpdateStatus writes Status.
	UpdateStatus ActionType = "UpdateStatus"
)

// Action is one write of a sync.
type Action struct {
	Type           ActionType
	Event          Event
	Claim          *corev1.PersistentVolumeClaim
	Create, Delete []*corev1.Pod
	Revision       *appsv1.ControllerRevision
	Status         appsv1.StatefulSetStatus
}

// String names the action by its type and target, for errors and tests.
func (a Action) String() string {
	switch a.Type {
	case RecordEvent:
		return fmt.Sprintf("%s %s", a.Type, a.Event.Reason)
	case CreateClaim, UpdateClaim:
		return fmt.Sprintf("%s %s", a.Type, a.Claim.Name)
	case ManagePods:
		names := func(ps []*corev1.Pod) string {
			out := make([]string, len(ps))
			for i, p := range ps {
				out[i] = p.Name
			}
			return strings.Join(out, ",")
		}
		return fmt.Sprintf("%s create [%s] delete [%s]", a.Type, names(a.Create), names(a.Delete))
	case DeleteRevision:
		return fmt.Sprintf("%s %s", a.Type, a.Revision.Name)
	}
	return fmt.Sprintf("%s replicas=%d ready=%d updated=%d", a.Type, a.Status.Replicas, a.Status.ReadyReplicas, a.Status.UpdatedReplicas)
}

// Output is one sync's writes, in the order the driver performs them:
// events, claims before the pods that mount them, claim owner changes,
// pod creations and deletions, old revisions pruned, the status.
// RequeueAfter is when a pod becomes available (minReadySeconds).
type Output = framework.Output[Action]

// decisions is what a sync decides about pods and claims, before Plan
// orders it as actions.
type decisions struct {
	CreateClaims []*corev1.PersistentVolumeClaim
	UpdateClaims []*corev1.PersistentVolumeClaim
	CreatePods   []*corev1.Pod
	DeletePods   []*corev1.Pod
	Events       []Event
	Status       appsv1.StatefulSetStatus
	RequeueAfter time.Duration
}

// PodName is NAME-ORDINAL.
func PodName(set *appsv1.StatefulSet, ordinal int) string {
	return set.Name + "-" + strconv.Itoa(ordinal)
}

// ClaimName is TEMPLATE-NAME-ORDINAL, the claim of one template for one pod.
func ClaimName(template *corev1.PersistentVolumeClaim, podName string) string {
	return template.Name + "-" + podName
}

// Ordinal parses the ordinal out of a pod of set; false for a pod whose
// name does not have the set's form.
func Ordinal(set *appsv1.StatefulSet, pod *corev1.Pod) (int, bool) {
	rest, ok := strings.CutPrefix(pod.Name, set.Name+"-")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 || strconv.Itoa(n) != rest {
		return 0, false
	}
	return n, true
}

// NewPod returns the pod of ordinal made from template at revision.
func NewPod(set *appsv1.StatefulSet, template *corev1.PodTemplateSpec, revision string, ordinal int) *corev1.Pod {
	name := PodName(set, ordinal)
	t := template.DeepCopy()
	labels := map[string]string{}
	for k, v := range t.Labels {
		labels[k] = v
	}
	labels[PodNameLabel] = name
	labels[PodIndexLabel] = strconv.Itoa(ordinal)
	labels[history.HashLabel] = revision
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: set.Namespace, Labels: labels, Annotations: t.Annotations,
			OwnerReferences: []metav1.OwnerReference{framework.ControllerRef(set, "apps/v1", "StatefulSet")}},
		Spec: t.Spec,
	}
	pod.Spec.Hostname = name
	if set.Spec.ServiceName != "" {
		pod.Spec.Subdomain = set.Spec.ServiceName
	}
	// One volume per claim template, replacing a template volume of the
	// same name.
	for i := range set.Spec.VolumeClaimTemplates {
		ct := &set.Spec.VolumeClaimTemplates[i]
		v := corev1.Volume{Name: ct.Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: ClaimName(ct, name)}}}
		if j := slices.IndexFunc(pod.Spec.Volumes, func(x corev1.Volume) bool { return x.Name == ct.Name }); j >= 0 {
			pod.Spec.Volumes[j] = v
		} else {
			pod.Spec.Volumes = append(pod.Spec.Volumes, v)
		}
	}
	return pod
}

// NewClaim returns the claim of template for the pod podName: the
// template's labels plus the set's selector labels, owned according to
// the retention policy (owners are set later by ClaimOwners).
func NewClaim(set *appsv1.StatefulSet, template *corev1.PersistentVolumeClaim, podName string) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: ClaimName(template, podName), Namespace: set.Namespace,
			Annotations: template.Annotations, Labels: map[string]string{}},
		Spec: *template.Spec.DeepCopy(),
	}
	for k, v := range template.Labels {
		c.Labels[k] = v
	}
	if set.Spec.Selector != nil {
		for k, v := range set.Spec.Selector.MatchLabels {
			c.Labels[k] = v
		}
	}
	return c
}

// wantClaimOwners returns the ownerReferences the retention policy asks
// for on a claim of pod (condemned: its ordinal is being scaled away),
// keeping references to other owners.
func wantClaimOwners(set *appsv1.StatefulSet, claim *corev1.PersistentVolumeClaim, pod *corev1.Pod, condemned bool) []metav1.OwnerReference {
	policy := set.Spec.PersistentVolumeClaimRetentionPolicy
	whenDeleted, whenScaled := appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	if policy != nil {
		whenDeleted, whenScaled = policy.WhenDeleted, policy.WhenScaled
	}
	var out []metav1.OwnerReference
	for _, r := range claim.OwnerReferences {
		if r.UID != set.UID && (pod == nil || r.UID != pod.UID) {
			out = append(out, r)
		}
	}
	if whenDeleted == appsv1.DeletePersistentVolumeClaimRetentionPolicyType && !(condemned && whenScaled == appsv1.DeletePersistentVolumeClaimRetentionPolicyType) {
		out = append(out, metav1.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: set.Name, UID: set.UID,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)})
	}
	if condemned && whenScaled == appsv1.DeletePersistentVolumeClaimRetentionPolicyType && pod != nil {
		out = append(out, metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID})
	}
	return out
}

func sameOwners(a, b []metav1.OwnerReference) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].UID != b[i].UID || ptr.Deref(a[i].Controller, false) != ptr.Deref(b[i].Controller, false) {
			return false
		}
	}
	return true
}

func isRunningAndReady(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodRunning && framework.IsPodReady(p)
}

func isAvailable(p *corev1.Pod, minReady int32, now time.Time) bool {
	return p.Status.Phase == corev1.PodRunning && framework.IsPodAvailable(p, minReady, now)
}

// firstUnhealthyPod is the unhealthy pod of the lowest ordinal among the
// kept pods (ascending) and the condemned ones (sorted descending).
func firstUnhealthyPod(replicas, condemned []*corev1.Pod) *corev1.Pod {
	for _, p := range replicas {
		if p != nil && !isHealthy(p) {
			return p
		}
	}
	for i := len(condemned) - 1; i >= 0; i-- {
		if !isHealthy(condemned[i]) {
			return condemned[i]
		}
	}
	return nil
}

func isHealthy(p *corev1.Pod) bool { return isRunningAndReady(p) && p.DeletionTimestamp == nil }

func revisionOf(p *corev1.Pod) string { return p.Labels[history.HashLabel] }

// Plan plans one sync of set. With unsatisfied expectations it creates
// and deletes nothing (its pods may be stale) but still prunes revisions
// and writes the status (if it changed).
func Plan(set *appsv1.StatefulSet, revs Revisions, obs Observed, expectationsSatisfied bool, now time.Time) Output {
	d := decide(set, revs, obs, now)
	out := Output{RequeueAfter: d.RequeueAfter}
	if expectationsSatisfied {
		for _, ev := range d.Events {
			out.Actions = append(out.Actions, Action{Type: RecordEvent, Event: ev})
		}
		for _, c := range d.CreateClaims {
			out.Actions = append(out.Actions, Action{Type: CreateClaim, Claim: c})
		}
		for _, c := range d.UpdateClaims {
			out.Actions = append(out.Actions, Action{Type: UpdateClaim, Claim: c})
		}
		if len(d.CreatePods)+len(d.DeletePods) > 0 {
			out.Actions = append(out.Actions, Action{Type: ManagePods, Create: d.CreatePods, Delete: d.DeletePods})
		}
	}
	// Revisions neither the status nor a pod refers to go beyond the limit.
	live := map[string]bool{revs.Current.Name: true, revs.Update.Name: true}
	for _, p := range obs.Pods {
		live[revisionOf(p)] = true
	}
	for _, r := range history.Prune(revs.Owned, live, ptr.Deref(set.Spec.RevisionHistoryLimit, 10)) {
		out.Actions = append(out.Actions, Action{Type: DeleteRevision, Revision: r})
	}
	if !apiequality.Semantic.DeepEqual(d.Status, set.Status) {
		out.Actions = append(out.Actions, Action{Type: UpdateStatus, Status: d.Status})
	}
	return out
}

func decide(set *appsv1.StatefulSet, revs Revisions, obs Observed, now time.Time) decisions {
	var plan decisions
	replicaCount := int(ptr.Deref(set.Spec.Replicas, 1))
	start := 0
	if set.Spec.Ordinals != nil {
		start = int(set.Spec.Ordinals.Start)
	}
	minReady := set.Spec.MinReadySeconds
	monotonic := set.Spec.PodManagementPolicy != appsv1.ParallelPodManagement

	replicas := make([]*corev1.Pod, replicaCount)
	var condemned []*corev1.Pod
	for _, p := range obs.Pods {
		ord, ok := Ordinal(set, p)
		if !ok {
			continue
		}
		if ord >= start && ord < start+replicaCount {
			replicas[ord-start] = p
		} else {
			condemned = append(condemned, p)
		}
	}
	// Highest ordinal first: that is the order of scale-down.
	slices.SortFunc(condemned, func(a, b *corev1.Pod) int {
		oa, _ := Ordinal(set, a)
		ob, _ := Ordinal(set, b)
		return ob - oa
	})

	partition := 0
	rolling := set.Spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType
	if rolling && set.Spec.UpdateStrategy.RollingUpdate != nil {
		partition = int(ptr.Deref(set.Spec.UpdateStrategy.RollingUpdate.Partition, 0))
	}
	newPod := func(ord int) *corev1.Pod {
		if rolling && ord-start < partition {
			return NewPod(set, revs.CurrentTemplate, revs.Current.Name, ord)
		}
		return NewPod(set, revs.UpdateTemplate, revs.Update.Name, ord)
	}

	plan.Status = status(set, revs, obs.Pods, minReady, now)

	// ensureClaims plans the missing claims of pod and the owner changes
	// of its existing ones.
	ensureClaims := func(pod *corev1.Pod, exists bool, condemned bool) {
		for i := range set.Spec.VolumeClaimTemplates {
			ct := &set.Spec.VolumeClaimTemplates[i]
			name := ClaimName(ct, pod.Name)
			var owner *corev1.Pod
			if exists {
				owner = pod
			}
			c, ok := obs.Claims[name]
			if !ok {
				if condemned {
					continue // a pod being removed gets no new claim
				}
				nc := NewClaim(set, ct, pod.Name)
				nc.OwnerReferences = wantClaimOwners(set, nc, nil, false)
				plan.CreateClaims = append(plan.CreateClaims, nc)
				continue
			}
			if c.DeletionTimestamp != nil {
				continue
			}
			if want := wantClaimOwners(set, c, owner, condemned); !sameOwners(c.OwnerReferences, want) {
				cp := c.DeepCopy()
				cp.OwnerReferences = want
				plan.UpdateClaims = append(plan.UpdateClaims, cp)
			}
		}
	}

	if set.DeletionTimestamp != nil {
		return plan
	}

	unhealthy := 0
	var waitFor time.Duration
	blocked := false
	for i := range replicas {
		ord := start + i
		pod := replicas[i]
		if pod == nil {
			if blocked {
				continue
			}
			pod = newPod(ord)
			ensureClaims(pod, false, false)
			plan.CreatePods = append(plan.CreatePods, pod)
			unhealthy++
			if monotonic {
				blocked = true
			}
			continue
		}
		// A failed or finished pod is deleted; the next sync makes it
		// again under the same name.
		if framework.IsPodTerminal(pod) {
			if pod.DeletionTimestamp == nil && !blocked {
				reason, what := "RecreatingFailedPod", "failed"
				if pod.Status.Phase == corev1.PodSucceeded {
					reason, what = "RecreatingTerminatedPod", "terminated"
				}
				plan.Events = append(plan.Events, Event{corev1.EventTypeWarning, reason,
					fmt.Sprintf("StatefulSet %s/%s is recreating %s Pod %s", set.Namespace, set.Name, what, pod.Name)})
				plan.DeletePods = append(plan.DeletePods, pod)
			}
			unhealthy++
			blocked = blocked || monotonic
			continue
		}
		if !blocked {
			ensureClaims(pod, true, false)
		}
		if !isHealthy(pod) || !isAvailable(pod, minReady, now) {
			unhealthy++
			if monotonic {
				blocked = true
			}
			if d := framework.NextAvailableIn([]*corev1.Pod{pod}, minReady, now); d > 0 && (waitFor == 0 || d < waitFor) {
				waitFor = d
			}
		}
	}
	plan.RequeueAfter = waitFor

	// Scale down: the highest ordinal first; OrderedReady waits for every
	// kept pod to be healthy and for each deletion to finish, and deletes
	// an unhealthy pod only when it is the lowest unhealthy one of all, as
	// upstream's controller halts scale down with an unhealthy pod.
	firstUnhealthy := firstUnhealthyPod(replicas, condemned)
	for _, pod := range condemned {
		if monotonic && (blocked || unhealthy > 0) {
			break
		}
		if pod.DeletionTimestamp != nil {
			if monotonic {
				break
			}
			continue
		}
		if monotonic && !isHealthy(pod) && pod != firstUnhealthy {
			break
		}
		ensureClaims(pod, true, true)
		plan.DeletePods = append(plan.DeletePods, pod)
		if monotonic {
			break
		}
	}

	if !rolling || blocked && monotonic || len(condemned) > 0 && monotonic {
		return plan
	}
	// Rolling update from the highest ordinal down to the partition, at
	// most maxUnavailable pods of that range unavailable at once.
	maxUnavailable := 1
	if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.MaxUnavailable != nil {
		n, err := intstr.GetScaledValueFromIntOrPercent(ru.MaxUnavailable, replicaCount, false)
		if err == nil {
			maxUnavailable = max(n, 1)
		}
	}
	unavailable := 0
	for i := partition; i < len(replicas); i++ {
		if p := replicas[i]; p == nil || !isHealthy(p) || !isAvailable(p, minReady, now) || slices.Contains(plan.DeletePods, p) {
			unavailable++
		}
	}
	for i := len(replicas) - 1; i >= partition && i >= 0; i-- {
		p := replicas[i]
		if p == nil || p.DeletionTimestamp != nil || revisionOf(p) == revs.Update.Name || slices.Contains(plan.DeletePods, p) {
			continue
		}
		healthy := isHealthy(p) && isAvailable(p, minReady, now)
		if healthy && unavailable >= maxUnavailable {
			break
		}
		plan.DeletePods = append(plan.DeletePods, p)
		if healthy {
			unavailable++
		}
	}
	return plan
}

// status counts the set's pods as upstream: every pod counts in replicas;
// ready and available pods; pods not terminating by revision. The rollout
// is complete (currentRevision moves to updateRevision) once every pod is
// updated and ready.
func status(set *appsv1.StatefulSet, revs Revisions, pods []*corev1.Pod, minReady int32, now time.Time) appsv1.StatefulSetStatus {
	st := appsv1.StatefulSetStatus{
		ObservedGeneration: set.Generation,
		CurrentRevision:    revs.Current.Name,
		UpdateRevision:     revs.Update.Name,
		CollisionCount:     set.Status.CollisionCount,
		Conditions:         set.Status.Conditions,
	}
	for _, p := range pods {
		if _, ok := Ordinal(set, p); !ok {
			continue
		}
		st.Replicas++
		if isRunningAndReady(p) {
			st.ReadyReplicas++
			if isAvailable(p, minReady, now) {
				st.AvailableReplicas++
			}
		}
		if p.DeletionTimestamp == nil {
			if revisionOf(p) == revs.Current.Name {
				st.CurrentReplicas++
			}
			if revisionOf(p) == revs.Update.Name {
				st.UpdatedReplicas++
			}
		}
	}
	if set.Spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType &&
		st.UpdatedReplicas == st.Replicas && st.ReadyReplicas == st.Replicas {
		st.CurrentReplicas = st.UpdatedReplicas
		st.CurrentRevision = st.UpdateRevision
	}
	return st
}
