// Package deployment rolls a Deployment's pod template out through
// ReplicaSets named after the template's hash:
//
//	deploy/rs/pod event ─▶ queue(deployment) ─▶ Plan(d, its ReplicaSets, pods per RS, now)
//	   paused or scaling only ─▶ scale ReplicaSets proportionally
//	   Recreate               ─▶ old to 0 ─▶ wait for their pods to end ─▶ new to replicas
//	   RollingUpdate          ─▶ new up to replicas+maxSurge ─▶ old down keeping replicas-maxUnavailable available
//	   complete               ─▶ delete old ReplicaSets beyond revisionHistoryLimit
//	   ─▶ status + conditions Available / Progressing (ProgressDeadlineExceeded)
//	─▶ driver: create / update / delete ReplicaSets, update status
package deployment

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik/controller/framework"
)

// ActionType says what an Action does.
type ActionType string

const (
	// CreateReplicaSet creates RS.
	CreateReplicaSet ActionType = "CreateReplicaSet"
	// UpdateReplicaSet writes RS (replicas, annotations).
	UpdateReplicaSet ActionType = "UpdateReplicaSet"
	// DeleteReplicaSet deletes RS (history cleanup).
	DeleteReplicaSet ActionType = "DeleteReplicaSet"
	// UpdateStatus writes Deployment's status.
	UpdateStatus ActionType = "UpdateStatus"
	// UpdateRevision writes Deployment's revision annotation (the new
	// ReplicaSet's revision, which kubectl rollout history reads).
	UpdateRevision ActionType = "UpdateRevision"
)

// Action is one write.
type Action struct {
	Type       ActionType
	RS         *appsv1.ReplicaSet
	Deployment *appsv1.Deployment
	// Reason and Message describe it for an event (ScalingReplicaSet).
	Reason, Message string
}

// Input is what one sync looks at.
type Input struct {
	Deployment *appsv1.Deployment
	// ReplicaSets are the ReplicaSets the Deployment owns.
	ReplicaSets []*appsv1.ReplicaSet
	// ActivePods counts the not-yet-finished pods of each ReplicaSet (by
	// UID), for Recreate, which waits for old pods to end.
	ActivePods map[types.UID]int
	Now        time.Time
}

// Output is the plan of one sync; its RequeueAfter is when to look
// again even without events (progress deadline, minReadySeconds).
type Output = framework.Output[Action]

type planner struct {
	in    Input
	d     *appsv1.Deployment
	newRS *appsv1.ReplicaSet
	old   []*appsv1.ReplicaSet
	out   Output
}

// Plan plans one sync of in.Deployment.
func Plan(in Input) Output {
	p := &planner{in: in, d: in.Deployment.DeepCopy()}
	d := p.d
	if d.DeletionTimestamp != nil {
		p.findReplicaSets(false)
		p.syncStatus(false)
		return p.out
	}
	if d.Spec.Selector == nil || len(d.Spec.Selector.MatchLabels)+len(d.Spec.Selector.MatchExpressions) == 0 {
		return p.out // selects everything: refuse, as Kubernetes does
	}
	scaling := p.isScalingEvent()
	if d.Spec.Paused || scaling {
		p.findReplicaSets(false)
		p.scale()
		if d.Spec.Paused {
			p.cleanup()
		}
		p.syncStatus(false)
		return p.out
	}
	switch d.Spec.Strategy.Type {
	case appsv1.RecreateDeploymentStrategyType:
		// Recreate makes the new ReplicaSet only once the old pods are gone.
		p.findReplicaSets(false)
		p.rolloutRecreate()
	default:
		p.findReplicaSets(true)
		p.rolloutRolling()
	}
	return p.out
}

// findReplicaSets splits the ReplicaSets into the new one (whose template
// is the Deployment's) and the old ones, syncs the new one's revision and
// annotations, and with create makes it if it does not exist.
func (p *planner) findReplicaSets(create bool) {
	d := p.d
	var all []*appsv1.ReplicaSet
	for _, rs := range p.in.ReplicaSets {
		all = append(all, rs.DeepCopy())
	}
	byCreation(all)
	for _, rs := range all {
		if p.newRS == nil && EqualIgnoreHash(&rs.Spec.Template, &d.Spec.Template) {
			p.newRS = rs
		} else {
			p.old = append(p.old, rs)
		}
	}
	newRevision := strconv.FormatInt(MaxRevision(p.old)+1, 10)
	if p.newRS != nil {
		rs := p.newRS
		changed := copyAnnotations(d, rs)
		if cur := rs.Annotations[RevisionAnnotation]; cur != newRevision && Revision(rs) < MaxRevision(p.old)+1 {
			if rs.Annotations == nil {
				rs.Annotations = map[string]string{}
			}
			if cur != "" {
				// Rolled back to an old template: remember its old revisions.
				hist := rs.Annotations[RevisionHistoryAnnotation]
				if hist == "" {
					hist = cur
				} else {
					hist += "," + cur
				}
				rs.Annotations[RevisionHistoryAnnotation] = hist
			}
			rs.Annotations[RevisionAnnotation] = newRevision
			changed = true
		}
		if rs.Spec.MinReadySeconds != d.Spec.MinReadySeconds {
			rs.Spec.MinReadySeconds = d.Spec.MinReadySeconds
			changed = true
		}
		if changed {
			p.act(Action{Type: UpdateReplicaSet, RS: rs})
		}
		p.syncRevision()
		if c := getCondition(d.Status, appsv1.DeploymentProgressing); c == nil && hasProgressDeadline(d) {
			setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonFoundNewRS,
				fmt.Sprintf("Found new replica set %q", rs.Name), p.in.Now))
		}
		return
	}
	if create {
		p.createNewRS(newRevision)
		p.syncRevision()
	}
}

// syncRevision gives the Deployment its new ReplicaSet's revision, as
// Kubernetes does.
func (p *planner) syncRevision() {
	rev := p.newRS.Annotations[RevisionAnnotation]
	if rev == "" || p.d.Annotations[RevisionAnnotation] == rev {
		return
	}
	if p.d.Annotations == nil {
		p.d.Annotations = map[string]string{}
	}
	p.d.Annotations[RevisionAnnotation] = rev
	p.act(Action{Type: UpdateRevision, Deployment: p.d.DeepCopy()})
}

// createNewRS plans the new ReplicaSet: named and labelled by the
// template hash, at the size the strategy allows now.
func (p *planner) createNewRS(newRevision string) {
	d := p.d
	hash := ComputeHash(&d.Spec.Template, d.Status.CollisionCount)
	tmpl := d.Spec.Template.DeepCopy()
	if tmpl.Labels == nil {
		tmpl.Labels = map[string]string{}
	}
	tmpl.Labels[PodTemplateHashLabel] = hash
	sel := d.Spec.Selector.DeepCopy()
	if sel.MatchLabels == nil {
		sel.MatchLabels = map[string]string{}
	}
	sel.MatchLabels[PodTemplateHashLabel] = hash
	lbls := map[string]string{}
	for k, v := range tmpl.Labels {
		lbls[k] = v
	}
	initial := p.newReplicaSetReplicas(0)
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:            d.Name + "-" + hash,
			Namespace:       d.Namespace,
			Labels:          lbls,
			OwnerReferences: []metav1.OwnerReference{framework.ControllerRef(d, "apps/v1", "Deployment")},
			Annotations:     map[string]string{RevisionAnnotation: newRevision},
		},
		Spec: appsv1.ReplicaSetSpec{Replicas: &initial, MinReadySeconds: d.Spec.MinReadySeconds, Selector: sel, Template: *tmpl},
	}
	copyAnnotations(d, rs)
	p.setReplicasAnnotations(rs)
	p.newRS = rs
	a := Action{Type: CreateReplicaSet, RS: rs}
	if initial > 0 { // a ReplicaSet made at 0 scaled nothing (Kubernetes says nothing either)
		a.Reason, a.Message = "ScalingReplicaSet", fmt.Sprintf("Scaled up replica set %s from 0 to %d", rs.Name, initial)
	}
	p.act(a)
	if hasProgressDeadline(d) {
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonNewRSCreated,
			fmt.Sprintf("Created new replica set %q", rs.Name), p.in.Now))
	}
}

// CreateFailed returns a copy of d, whose new ReplicaSet rsName could not
// be created, with Progressing False ReplicaSetCreateError if it has a
// progress deadline, and the message of the warning event, as Kubernetes
// reports it.
func CreateFailed(d *appsv1.Deployment, rsName string, err error, now time.Time) (*appsv1.Deployment, string) {
	msg := fmt.Sprintf("Failed to create new replica set %q: %v", rsName, err)
	cp := d.DeepCopy()
	if hasProgressDeadline(d) {
		setCondition(&cp.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, ReasonFailedRSCreate, msg, now))
	}
	return cp, msg
}

// setReplicasAnnotations records desired and max replicas on rs.
func (p *planner) setReplicasAnnotations(rs *appsv1.ReplicaSet) bool {
	desired := strconv.Itoa(int(replicas(p.d)))
	maxR := strconv.Itoa(int(replicas(p.d) + MaxSurge(p.d)))
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	changed := rs.Annotations[DesiredReplicasAnnotation] != desired || rs.Annotations[MaxReplicasAnnotation] != maxR
	rs.Annotations[DesiredReplicasAnnotation] = desired
	rs.Annotations[MaxReplicasAnnotation] = maxR
	return changed
}

func (p *planner) act(a Action) { p.out.Actions = append(p.out.Actions, a) }

// scaleRS sets rs's replicas (and annotations) and records the write.
func (p *planner) scaleRS(rs *appsv1.ReplicaSet, n int32) bool {
	old := rsReplicas(rs)
	annotated := p.setReplicasAnnotations(rs)
	if old == n && !annotated {
		return false
	}
	rs.Spec.Replicas = &n
	a := Action{Type: UpdateReplicaSet, RS: rs}
	if old != n {
		dir := "up"
		if n < old {
			dir = "down"
		}
		a.Reason, a.Message = "ScalingReplicaSet", fmt.Sprintf("Scaled %s replica set %s from %d to %d", dir, rs.Name, old, n)
	}
	p.replaceOrAppend(a)
	return old != n
}

// replaceOrAppend keeps one write per ReplicaSet: a later one replaces an
// earlier one (e.g. annotations, then replicas).
func (p *planner) replaceOrAppend(a Action) {
	for i, x := range p.out.Actions {
		if x.RS != nil && x.RS.Name == a.RS.Name && (x.Type == UpdateReplicaSet || x.Type == CreateReplicaSet) {
			if x.Type == CreateReplicaSet {
				a.Type = CreateReplicaSet
			}
			if a.Message == "" {
				a.Reason, a.Message = x.Reason, x.Message
			}
			p.out.Actions[i] = a
			return
		}
	}
	p.act(a)
}

func (p *planner) allRS() []*appsv1.ReplicaSet {
	out := append([]*appsv1.ReplicaSet(nil), p.old...)
	if p.newRS != nil {
		out = append(out, p.newRS)
	}
	return out
}

func activeRS(rss []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	var out []*appsv1.ReplicaSet
	for _, rs := range rss {
		if rs != nil && rsReplicas(rs) > 0 {
			out = append(out, rs)
		}
	}
	return out
}

// isScalingEvent reports whether replicas changed without a new template:
// an active ReplicaSet records a different desired count.
func (p *planner) isScalingEvent() bool {
	want := strconv.Itoa(int(replicas(p.d)))
	for _, rs := range p.in.ReplicaSets {
		if rsReplicas(rs) == 0 {
			continue
		}
		if v, ok := rs.Annotations[DesiredReplicasAnnotation]; ok && v != want {
			return true
		}
	}
	return false
}

// scale resizes the ReplicaSets to the Deployment's replicas: all to the
// only active one, or proportionally to their sizes during a rollout.
func (p *planner) scale() {
	d := p.d
	active := activeRS(p.allRS())
	if len(active) == 0 {
		if p.newRS != nil {
			p.scaleRS(p.newRS, replicas(d))
		}
		return
	}
	if len(active) == 1 {
		p.scaleRS(active[0], replicas(d))
		return
	}
	if p.newRS != nil && rsReplicas(p.newRS) == replicas(d) && p.newRS.Status.AvailableReplicas == replicas(d) {
		for _, rs := range p.old {
			p.scaleRS(rs, 0)
		}
		return
	}
	allowed := replicas(d)
	if d.Spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType {
		allowed += MaxSurge(d)
	}
	toAdd := allowed - sumSpec(active)
	if toAdd == 0 {
		return
	}
	// Larger first; on ties, newer first when growing, older when shrinking.
	sort.SliceStable(active, func(i, j int) bool {
		a, b := active[i], active[j]
		if rsReplicas(a) != rsReplicas(b) {
			return rsReplicas(a) > rsReplicas(b)
		}
		if toAdd > 0 {
			return b.CreationTimestamp.Before(&a.CreationTimestamp)
		}
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	})
	sizes := map[string]int32{}
	var added int32
	for _, rs := range active {
		prop := p.proportion(rs, toAdd, added)
		sizes[rs.Name] = rsReplicas(rs) + prop
		added += prop
	}
	for i, rs := range active {
		n := sizes[rs.Name]
		if i == 0 && toAdd != added {
			n = max(0, n+toAdd-added)
		}
		p.scaleRS(rs, n)
	}
}

// proportion is rs's share of toAdd pods, of which added are given out.
func (p *planner) proportion(rs *appsv1.ReplicaSet, toAdd, added int32) int32 {
	allowed := toAdd - added
	d := p.d
	var fraction int32
	if replicas(d) == 0 {
		fraction = -rsReplicas(rs)
	} else {
		maxReplicas := replicas(d) + MaxSurge(d)
		annotated, err := strconv.Atoi(rs.Annotations[MaxReplicasAnnotation])
		if err != nil || annotated == 0 {
			annotated = int(p.in.Deployment.Status.Replicas)
		}
		if annotated == 0 {
			annotated = int(maxReplicas)
		}
		newSize := int32(math.Round(float64(rsReplicas(rs)) * float64(maxReplicas) / float64(annotated)))
		fraction = newSize - rsReplicas(rs)
	}
	if toAdd > 0 {
		return min(fraction, allowed)
	}
	return max(fraction, allowed)
}

// newReplicaSetReplicas is the size the new ReplicaSet may grow to now.
func (p *planner) newReplicaSetReplicas(cur int32) int32 {
	d := p.d
	want := replicas(d)
	if d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		return want
	}
	total := sumSpec(p.allRS())
	if p.newRS == nil {
		total += cur
	}
	maxTotal := want + MaxSurge(d)
	if total >= maxTotal {
		return cur
	}
	return cur + min(maxTotal-total, max(0, want-cur))
}

func (p *planner) rolloutRolling() {
	d := p.d
	// Scale up the new ReplicaSet.
	if p.newRS != nil {
		cur := rsReplicas(p.newRS)
		var target int32
		switch {
		case cur == replicas(d):
			target = cur
		case cur > replicas(d):
			target = replicas(d)
		default:
			target = p.newReplicaSetReplicas(cur)
		}
		if p.scaleRS(p.newRS, target) {
			p.syncStatus(true)
			return
		}
	}
	// Scale down old ReplicaSets.
	if p.reconcileOld() {
		p.syncStatus(true)
		return
	}
	if p.complete() {
		p.cleanup()
	}
	p.syncStatus(true)
}

// reconcileOld scales old ReplicaSets down as far as availability allows.
func (p *planner) reconcileOld() bool {
	d := p.d
	if sumSpec(p.old) == 0 {
		return false
	}
	all := p.allRS()
	minAvailable := replicas(d) - MaxUnavailable(d)
	newUnavailable := rsReplicas(p.newRS)
	if p.newRS != nil {
		newUnavailable -= p.newRS.Status.AvailableReplicas
	}
	maxScaledDown := sumSpec(all) - minAvailable - newUnavailable
	if maxScaledDown <= 0 {
		return false
	}
	scaled := false
	old := append([]*appsv1.ReplicaSet(nil), p.old...)
	byCreation(old)
	// First remove unhealthy old pods: they count against availability anyway.
	var cleaned int32
	for _, rs := range old {
		if cleaned >= maxScaledDown {
			break
		}
		if rsReplicas(rs) == 0 || rsReplicas(rs) == rs.Status.AvailableReplicas {
			continue
		}
		n := min(maxScaledDown-cleaned, rsReplicas(rs)-rs.Status.AvailableReplicas)
		if p.scaleRS(rs, rsReplicas(rs)-n) {
			scaled = true
		}
		cleaned += n
	}
	// Then healthy ones, keeping minAvailable available.
	total := sumAvailable(all) - minAvailable
	for _, rs := range old {
		if total <= 0 {
			break
		}
		if rsReplicas(rs) == 0 {
			continue
		}
		n := min(total, rsReplicas(rs))
		if p.scaleRS(rs, rsReplicas(rs)-n) {
			scaled = true
		}
		total -= n
	}
	return scaled
}

func (p *planner) rolloutRecreate() {
	d := p.d
	scaledDown := false
	for _, rs := range activeRS(p.old) {
		if p.scaleRS(rs, 0) {
			scaledDown = true
		}
	}
	if scaledDown {
		p.syncStatus(true)
		return
	}
	for _, rs := range p.old {
		if p.in.ActivePods[rs.UID] > 0 {
			p.syncStatus(true) // wait for old pods to end
			return
		}
	}
	if p.newRS == nil {
		p.createNewRS(strconv.FormatInt(MaxRevision(p.old)+1, 10))
		p.syncStatus(true)
		return
	}
	if p.scaleRS(p.newRS, replicas(d)) {
		p.syncStatus(true)
		return
	}
	if p.complete() {
		p.cleanup()
	}
	p.syncStatus(true)
}

// complete reports whether the rollout is done, judged on the status the
// ReplicaSets report.
func (p *planner) complete() bool {
	st := p.computeStatus()
	return deploymentComplete(p.d, &st)
}

// cleanup deletes the oldest old ReplicaSets with no pods beyond
// revisionHistoryLimit.
func (p *planner) cleanup() {
	limit := int32(defaultRevisionHistory)
	if p.d.Spec.RevisionHistoryLimit != nil {
		limit = *p.d.Spec.RevisionHistoryLimit
	}
	var cleanable []*appsv1.ReplicaSet
	for _, rs := range p.old {
		if rsReplicas(rs) == 0 && rs.Status.Replicas == 0 && rs.DeletionTimestamp == nil && rs.Generation <= rs.Status.ObservedGeneration {
			cleanable = append(cleanable, rs)
		}
	}
	diff := len(cleanable) - int(limit)
	if diff <= 0 {
		return
	}
	sort.SliceStable(cleanable, func(i, j int) bool { return Revision(cleanable[i]) < Revision(cleanable[j]) })
	for _, rs := range cleanable[:diff] {
		p.act(Action{Type: DeleteReplicaSet, RS: rs})
	}
}

func (p *planner) computeStatus() appsv1.DeploymentStatus {
	d := p.d
	all := p.allRS()
	st := appsv1.DeploymentStatus{
		ObservedGeneration: d.Generation,
		CollisionCount:     d.Status.CollisionCount,
		Conditions:         append([]appsv1.DeploymentCondition(nil), d.Status.Conditions...),
	}
	for _, rs := range all {
		st.Replicas += rs.Status.Replicas
		st.ReadyReplicas += rs.Status.ReadyReplicas
		st.AvailableReplicas += rs.Status.AvailableReplicas
	}
	if p.newRS != nil {
		st.UpdatedReplicas = p.newRS.Status.Replicas
	}
	st.UnavailableReplicas = max(0, replicas(d)-st.AvailableReplicas)
	return st
}

// syncStatus computes the status and conditions; rollout says whether a
// rollout is under way (Progressing and ReplicaFailure are judged then, as
// in Kubernetes, whose scaling and paused syncs keep them as they are).
func (p *planner) syncStatus(rollout bool) {
	d := p.d
	now := p.in.Now
	st := p.computeStatus()
	if st.AvailableReplicas >= replicas(d)-MaxUnavailable(d) {
		setCondition(&st, newCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, ReasonMinimumAvailable, "Deployment has minimum availability.", now))
	} else {
		setCondition(&st, newCondition(appsv1.DeploymentAvailable, corev1.ConditionFalse, ReasonMinimumUnavailable, "Deployment does not have minimum availability.", now))
	}
	p.pausedCondition(&st)
	if rollout {
		p.progressCondition(&st)
		p.replicaFailureCondition(&st)
	}
	if rsMinReady := d.Spec.MinReadySeconds; rsMinReady > 0 && st.ReadyReplicas > st.AvailableReplicas {
		p.requeue(time.Duration(rsMinReady) * time.Second)
	}
	if !statusEqual(p.in.Deployment.Status, st) {
		d.Status = st
		p.act(Action{Type: UpdateStatus, Deployment: d})
	}
}

// pausedCondition says DeploymentPaused while paused and DeploymentResumed
// once resumed, unless the rollout has already timed out.
func (p *planner) pausedCondition(st *appsv1.DeploymentStatus) {
	d := p.d
	cond := getCondition(*st, appsv1.DeploymentProgressing)
	if d.DeletionTimestamp != nil || !hasProgressDeadline(d) || cond != nil && cond.Reason == ReasonTimedOut {
		return
	}
	paused := cond != nil && cond.Reason == ReasonPaused
	switch {
	case d.Spec.Paused && !paused:
		setCondition(st, newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, ReasonPaused, "Deployment is paused", p.in.Now))
	case !d.Spec.Paused && paused:
		setCondition(st, newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, ReasonResumed, "Deployment is resumed", p.in.Now))
	}
}

// progressCondition judges the rollout's progress, as Kubernetes'
// syncRolloutStatus: NewReplicaSetAvailable once complete, and then left
// alone until a new rollout; ReplicaSetUpdated (lastUpdateTime moving on)
// while replicas are updated, become ready or available; and
// ProgressDeadlineExceeded once progressDeadlineSeconds passed without.
func (p *planner) progressCondition(st *appsv1.DeploymentStatus) {
	d, now := p.d, p.in.Now
	if !hasProgressDeadline(d) {
		removeCondition(st, appsv1.DeploymentProgressing)
		return
	}
	cond := getCondition(*st, appsv1.DeploymentProgressing)
	if st.Replicas == st.UpdatedReplicas && cond != nil && cond.Reason == ReasonNewRSAvailable {
		return // a finished rollout, resynced (or scaled): no progress to judge
	}
	subject := fmt.Sprintf("Deployment %q", d.Name)
	if p.newRS != nil {
		subject = fmt.Sprintf("ReplicaSet %q", p.newRS.Name)
	}
	switch {
	case deploymentComplete(d, st):
		setCondition(st, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonNewRSAvailable,
			subject+" has successfully progressed.", now))
	case progressing(p.in.Deployment.Status, *st):
		c := newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonRSUpdated, subject+" is progressing.", now)
		if cond != nil && cond.Status == corev1.ConditionTrue {
			c.LastTransitionTime = cond.LastTransitionTime
		}
		// Progress restarts the deadline: lastUpdateTime moves on, even
		// with the reason unchanged (which setCondition would ignore).
		removeCondition(st, c.Type)
		st.Conditions = append(st.Conditions, c)
	case timedOut(d, cond, now):
		setCondition(st, newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, ReasonTimedOut,
			subject+" has timed out progressing.", now))
	case cond != nil && cond.Reason != ReasonTimedOut && cond.Reason != ReasonNewRSAvailable:
		// Not done, not stuck yet: look again when the deadline passes.
		deadline := cond.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second)
		p.requeue(deadline.Sub(now) + time.Second)
	}
}

// replicaFailureCondition copies the ReplicaFailure condition of the new
// ReplicaSet, or else of an old one, onto the Deployment, and removes the
// Deployment's once none has it, as Kubernetes does.
func (p *planner) replicaFailureCondition(st *appsv1.DeploymentStatus) {
	for _, rs := range append([]*appsv1.ReplicaSet{p.newRS}, p.old...) {
		if rs == nil {
			continue
		}
		for _, c := range rs.Status.Conditions {
			if c.Type == appsv1.ReplicaSetReplicaFailure {
				setCondition(st, appsv1.DeploymentCondition{Type: appsv1.DeploymentReplicaFailure, Status: c.Status,
					Reason: c.Reason, Message: c.Message, LastUpdateTime: c.LastTransitionTime, LastTransitionTime: c.LastTransitionTime})
				return
			}
		}
	}
	removeCondition(st, appsv1.DeploymentReplicaFailure)
}

func (p *planner) requeue(d time.Duration) {
	if d <= 0 {
		d = time.Second
	}
	if p.out.RequeueAfter == 0 || d < p.out.RequeueAfter {
		p.out.RequeueAfter = d
	}
}

func hasProgressDeadline(d *appsv1.Deployment) bool {
	return d.Spec.ProgressDeadlineSeconds != nil && *d.Spec.ProgressDeadlineSeconds != math.MaxInt32
}

// deploymentComplete reports whether st has every replica updated and
// available.
func deploymentComplete(d *appsv1.Deployment, st *appsv1.DeploymentStatus) bool {
	n := replicas(d)
	return st.UpdatedReplicas == n && st.Replicas == n && st.AvailableReplicas == n && st.ObservedGeneration >= d.Generation
}

// progressing reports whether the rollout moved since the old status.
func progressing(old, cur appsv1.DeploymentStatus) bool {
	return cur.UpdatedReplicas > old.UpdatedReplicas ||
		cur.Replicas-cur.UpdatedReplicas < old.Replicas-old.UpdatedReplicas ||
		cur.ReadyReplicas > old.ReadyReplicas ||
		cur.AvailableReplicas > old.AvailableReplicas
}

// timedOut reports whether progressDeadlineSeconds passed since cond (the
// Progressing condition) last moved; a finished rollout never times out.
func timedOut(d *appsv1.Deployment, cond *appsv1.DeploymentCondition, now time.Time) bool {
	if cond == nil || cond.Reason == ReasonNewRSAvailable {
		return false
	}
	if cond.Reason == ReasonTimedOut {
		return true
	}
	deadline := cond.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second)
	return deadline.Before(now)
}

func newCondition(t appsv1.DeploymentConditionType, s corev1.ConditionStatus, reason, msg string, now time.Time) appsv1.DeploymentCondition {
	ts := metav1.NewTime(now)
	return appsv1.DeploymentCondition{Type: t, Status: s, Reason: reason, Message: msg, LastUpdateTime: ts, LastTransitionTime: ts}
}

func getCondition(st appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}

// setCondition replaces the condition of c's type, keeping its
// lastTransitionTime if the status did not change. As in Kubernetes, a
// condition with the same status and reason is left alone, message and
// times included.
func setCondition(st *appsv1.DeploymentStatus, c appsv1.DeploymentCondition) {
	cur := getCondition(*st, c.Type)
	if cur != nil && cur.Status == c.Status && cur.Reason == c.Reason {
		return
	}
	if cur != nil && cur.Status == c.Status {
		c.LastTransitionTime = cur.LastTransitionTime
	}
	var out []appsv1.DeploymentCondition
	for _, x := range st.Conditions {
		if x.Type != c.Type {
			out = append(out, x)
		}
	}
	st.Conditions = append(out, c)
}

func removeCondition(st *appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) {
	var out []appsv1.DeploymentCondition
	for _, x := range st.Conditions {
		if x.Type != t {
			out = append(out, x)
		}
	}
	st.Conditions = out
}

func statusEqual(a, b appsv1.DeploymentStatus) bool {
	if a.ObservedGeneration != b.ObservedGeneration || a.Replicas != b.Replicas || a.UpdatedReplicas != b.UpdatedReplicas ||
		a.ReadyReplicas != b.ReadyReplicas || a.AvailableReplicas != b.AvailableReplicas || a.UnavailableReplicas != b.UnavailableReplicas ||
		len(a.Conditions) != len(b.Conditions) {
		return false
	}
	if (a.CollisionCount == nil) != (b.CollisionCount == nil) || a.CollisionCount != nil && *a.CollisionCount != *b.CollisionCount {
		return false
	}
	for _, c := range a.Conditions {
		o := getCondition(b, c.Type)
		if o == nil || o.Status != c.Status || o.Reason != c.Reason || o.Message != c.Message ||
			!o.LastUpdateTime.Equal(&c.LastUpdateTime) || !o.LastTransitionTime.Equal(&c.LastTransitionTime) {
			return false
		}
	}
	return true
}

// String renders an action for tests and logs.
func (a Action) String() string {
	var b strings.Builder
	b.WriteString(string(a.Type))
	if a.RS != nil {
		fmt.Fprintf(&b, " %s replicas=%d", a.RS.Name, rsReplicas(a.RS))
	}
	return b.String()
}
