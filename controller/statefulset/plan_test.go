package statefulset

import (
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"minik/controller/internal/history"
	"minik/controller/internal/synctest"
	"minik/controller/internal/testutil"
)

var now = testutil.T0.Add(time.Hour)

func makeSet(replicas int32, edits ...func(*appsv1.StatefulSet)) *appsv1.StatefulSet {
	s := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "kv", Namespace: "default", UID: "set-uid", Generation: 2},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To(replicas), ServiceName: "kv",
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "kv"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "kv"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "kv", Image: "kv:1"}}}},
			PodManagementPolicy: appsv1.OrderedReadyPodManagement,
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](0)}},
			PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType, WhenScaled: appsv1.RetainPersistentVolumeClaimRetentionPolicyType},
		},
	}
	for _, e := range edits {
		e(s)
	}
	return s
}

func withClaims(s *appsv1.StatefulSet) {
	s.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Labels: map[string]string{"tier": "db"}},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")}}},
	}}
}

func parallel(s *appsv1.StatefulSet) { s.Spec.PodManagementPolicy = appsv1.ParallelPodManagement }

func partition(n int32) func(*appsv1.StatefulSet) {
	return func(s *appsv1.StatefulSet) { s.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(n) }
}

// revs returns revisions "kv-old" (image kv:1) and "kv-new" (image kv:2);
// with same both are kv-old.
func revs(set *appsv1.StatefulSet, same bool) Revisions {
	mk := func(name, image string) (*appsv1.ControllerRevision, *corev1.PodTemplateSpec) {
		t := set.Spec.Template.DeepCopy()
		t.Spec.Containers[0].Image = image
		data, _ := history.Patch(t)
		return history.New(set, "apps/v1", "StatefulSet", name, name, t.Labels, data, 1), t
	}
	r := Revisions{}
	r.Current, r.CurrentTemplate = mk("kv-old", "kv:1")
	if same {
		r.Update, r.UpdateTemplate = r.Current, r.CurrentTemplate
	} else {
		r.Update, r.UpdateTemplate = mk("kv-new", "kv:2")
	}
	return r
}

func pod(set *appsv1.StatefulSet, ord int, rev string) *testutil.PodBuilder {
	return testutil.Pod(PodName(set, ord)).Label(history.HashLabel, rev).Owner(set, "apps/v1", "StatefulSet")
}

func ready(set *appsv1.StatefulSet, ord int, rev string) *corev1.Pod {
	return pod(set, ord, rev).Ready(testutil.T0).Obj()
}

func names[T metav1.Object](objs []T) []string {
	out := []string{}
	for _, o := range objs {
		out = append(out, o.GetName())
	}
	return out
}

func TestPlan(t *testing.T) {
	cases := []struct {
		name        string
		set         *appsv1.StatefulSet
		sameRev     bool
		pods        func(s *appsv1.StatefulSet) []*corev1.Pod
		claims      []string
		wantCreate  []string
		wantDelete  []string
		wantClaims  []string
		wantRequeue time.Duration
		check       func(t *testing.T, p decisions)
	}{
		{
			name: "OrderedReady creates only the lowest missing ordinal", set: makeSet(3), sameRev: true,
			wantCreate: []string{"kv-0"},
		},
		{
			name: "OrderedReady waits while kv-0 is not Running and Ready", set: makeSet(3), sameRev: true,
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod { return []*corev1.Pod{pod(s, 0, "kv-old").Obj()} },
		},
		{
			name: "OrderedReady creates kv-1 once kv-0 is ready", set: makeSet(3), sameRev: true,
			pods:       func(s *appsv1.StatefulSet) []*corev1.Pod { return []*corev1.Pod{ready(s, 0, "kv-old")} },
			wantCreate: []string{"kv-1"},
		},
		{
			name: "minReadySeconds holds the next ordinal back until kv-0 is available, and requeues for then",
			set:  makeSet(2, func(s *appsv1.StatefulSet) { s.Spec.MinReadySeconds = 30 }), sameRev: true,
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{pod(s, 0, "kv-old").Ready(now.Add(-10 * time.Second)).Obj()}
			},
			wantRequeue: 21 * time.Second,
		},
		{
			name: "Parallel creates every missing ordinal at once", set: makeSet(3, parallel), sameRev: true,
			wantCreate: []string{"kv-0", "kv-1", "kv-2"},
		},
		{
			name: "a claim per template and ordinal is made before the pod, labelled from the template and the selector",
			set:  makeSet(1, withClaims), sameRev: true,
			wantCreate: []string{"kv-0"}, wantClaims: []string{"data-kv-0"},
			check: func(t *testing.T, p decisions) {
				c := p.CreateClaims[0]
				if c.Labels["tier"] != "db" || c.Labels["app"] != "kv" || len(c.OwnerReferences) != 0 {
					t.Errorf("claim labels %v owners %v; want template+selector labels and no owner (Retain)", c.Labels, c.OwnerReferences)
				}
				v := p.CreatePods[0].Spec.Volumes
				if len(v) != 1 || v[0].Name != "data" || v[0].PersistentVolumeClaim.ClaimName != "data-kv-0" {
					t.Errorf("pod volumes %+v; want data → data-kv-0", v)
				}
			},
		},
		{
			name: "an existing claim is not made again",
			set:  makeSet(1, withClaims), sameRev: true, claims: []string{"data-kv-0"},
			wantCreate: []string{"kv-0"},
		},
		{
			name: "whenDeleted=Delete makes the set own its claims",
			set: makeSet(1, withClaims, func(s *appsv1.StatefulSet) {
				s.Spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted = appsv1.DeletePersistentVolumeClaimRetentionPolicyType
			}), sameRev: true,
			wantCreate: []string{"kv-0"}, wantClaims: []string{"data-kv-0"},
			check: func(t *testing.T, p decisions) {
				if o := p.CreateClaims[0].OwnerReferences; len(o) != 1 || o[0].UID != "set-uid" {
					t.Errorf("owners %v; want the set", o)
				}
			},
		},
		{
			name: "pods get hostname, subdomain, ordinal labels and their revision",
			set:  makeSet(1), sameRev: true, wantCreate: []string{"kv-0"},
			check: func(t *testing.T, p decisions) {
				pd := p.CreatePods[0]
				if pd.Spec.Hostname != "kv-0" || pd.Spec.Subdomain != "kv" {
					t.Errorf("hostname %q subdomain %q", pd.Spec.Hostname, pd.Spec.Subdomain)
				}
				want := map[string]string{"app": "kv", PodNameLabel: "kv-0", PodIndexLabel: "0", history.HashLabel: "kv-old"}
				for k, v := range want {
					if pd.Labels[k] != v {
						t.Errorf("label %s=%q, want %q", k, pd.Labels[k], v)
					}
				}
			},
		},
		{
			name: "scale down removes the highest ordinal first, one at a time",
			set:  makeSet(1), sameRev: true,
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{ready(s, 0, "kv-old"), ready(s, 1, "kv-old"), ready(s, 2, "kv-old")}
			},
			wantDelete: []string{"kv-2"},
		},
		{
			name: "scale down waits while a kept pod is unhealthy",
			set:  makeSet(1), sameRev: true,
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{pod(s, 0, "kv-old").Obj(), ready(s, 1, "kv-old")}
			},
		},
		{
			name: "scale down to 0 halts while the highest pod is unhealthy and a lower one is too",
			set:  makeSet(0), sameRev: true,
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{pod(s, 0, "kv-old").Obj(), pod(s, 1, "kv-old").Obj(), pod(s, 2, "kv-old").Obj()}
			},
		},
		{
			name: "scale down removes an unhealthy pod when it is the lowest unhealthy one",
			set:  makeSet(0), sameRev: true,
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{ready(s, 0, "kv-old"), ready(s, 1, "kv-old"), pod(s, 2, "kv-old").Obj()}
			},
			wantDelete: []string{"kv-2"},
		},
		{
			name: "Parallel scale down removes every extra pod at once",
			set:  makeSet(1, parallel), sameRev: true,
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{ready(s, 0, "kv-old"), ready(s, 1, "kv-old"), ready(s, 2, "kv-old")}
			},
			wantDelete: []string{"kv-2", "kv-1"},
		},
		{
			name: "scale down keeps the claim under Retain",
			set:  makeSet(1, withClaims), sameRev: true, claims: []string{"data-kv-0", "data-kv-1"},
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{ready(s, 0, "kv-old"), ready(s, 1, "kv-old")}
			},
			wantDelete: []string{"kv-1"},
			check: func(t *testing.T, p decisions) {
				if len(p.UpdateClaims) != 0 {
					t.Errorf("claims updated: %v", names(p.UpdateClaims))
				}
			},
		},
		{
			name: "whenScaled=Delete hands a condemned pod's claim to the pod before deleting it",
			set: makeSet(1, withClaims, func(s *appsv1.StatefulSet) {
				s.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled = appsv1.DeletePersistentVolumeClaimRetentionPolicyType
			}), sameRev: true, claims: []string{"data-kv-0", "data-kv-1"},
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{ready(s, 0, "kv-old"), ready(s, 1, "kv-old")}
			},
			wantDelete: []string{"kv-1"},
			check: func(t *testing.T, p decisions) {
				if len(p.UpdateClaims) != 1 || p.UpdateClaims[0].Name != "data-kv-1" {
					t.Fatalf("claims updated: %v; want data-kv-1", names(p.UpdateClaims))
				}
				if o := p.UpdateClaims[0].OwnerReferences; len(o) != 1 || o[0].Kind != "Pod" || o[0].UID != "uid-kv-1" {
					t.Errorf("owners %v; want pod kv-1", o)
				}
			},
		},
		{
			name: "a failed pod is deleted (and made again, same name, by the next sync)",
			set:  makeSet(2), sameRev: true,
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{pod(s, 0, "kv-old").Phase(corev1.PodFailed).Obj(), ready(s, 1, "kv-old")}
			},
			wantDelete: []string{"kv-0"},
			check: func(t *testing.T, p decisions) {
				if len(p.Events) != 1 || p.Events[0].Reason != "RecreatingFailedPod" {
					t.Errorf("events %+v", p.Events)
				}
			},
		},
		{
			name: "a rolling update deletes the highest ordinal on the old revision first",
			set:  makeSet(3),
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{ready(s, 0, "kv-old"), ready(s, 1, "kv-old"), ready(s, 2, "kv-old")}
			},
			wantDelete: []string{"kv-2"},
		},
		{
			name: "a deleted pod comes back on the update revision",
			set:  makeSet(3),
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{ready(s, 0, "kv-old"), ready(s, 1, "kv-old")}
			},
			wantCreate: []string{"kv-2"},
			check: func(t *testing.T, p decisions) {
				if p.CreatePods[0].Labels[history.HashLabel] != "kv-new" || p.CreatePods[0].Spec.Containers[0].Image != "kv:2" {
					t.Errorf("kv-2 made from %s with %s", p.CreatePods[0].Labels[history.HashLabel], p.CreatePods[0].Spec.Containers[0].Image)
				}
			},
		},
		{
			name: "the rolling update waits for the updated pod to be ready",
			set:  makeSet(3),
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{ready(s, 0, "kv-old"), ready(s, 1, "kv-old"), pod(s, 2, "kv-new").Obj()}
			},
		},
		{
			name: "the partition keeps lower ordinals on the current revision",
			set:  makeSet(3, partition(2)),
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{ready(s, 0, "kv-old"), ready(s, 1, "kv-old"), ready(s, 2, "kv-new")}
			},
			check: func(t *testing.T, p decisions) {
				if p.Status.CurrentRevision != "kv-old" || p.Status.UpdatedReplicas != 1 || p.Status.CurrentReplicas != 2 {
					t.Errorf("status %+v", p.Status)
				}
			},
		},
		{
			name:       "a pod below the partition is made again from the current revision",
			set:        makeSet(2, partition(1)),
			pods:       func(s *appsv1.StatefulSet) []*corev1.Pod { return []*corev1.Pod{ready(s, 1, "kv-new")} },
			wantCreate: []string{"kv-0"},
			check: func(t *testing.T, p decisions) {
				if p.CreatePods[0].Labels[history.HashLabel] != "kv-old" {
					t.Errorf("kv-0 on %s", p.CreatePods[0].Labels[history.HashLabel])
				}
			},
		},
		{
			name: "maxUnavailable 2 updates two pods at once",
			set: makeSet(3, func(s *appsv1.StatefulSet) {
				s.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(2))
			}),
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{ready(s, 0, "kv-old"), ready(s, 1, "kv-old"), ready(s, 2, "kv-old")}
			},
			wantDelete: []string{"kv-2", "kv-1"},
		},
		{
			name: "OnDelete never deletes old pods",
			set: makeSet(2, func(s *appsv1.StatefulSet) {
				s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
			}),
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{ready(s, 0, "kv-old"), ready(s, 1, "kv-old")}
			},
		},
		{
			name: "once every pod is updated and ready the update revision becomes current",
			set:  makeSet(2),
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{ready(s, 0, "kv-new"), ready(s, 1, "kv-new")}
			},
			check: func(t *testing.T, p decisions) {
				want := appsv1.StatefulSetStatus{ObservedGeneration: 2, Replicas: 2, ReadyReplicas: 2, AvailableReplicas: 2,
					CurrentReplicas: 2, UpdatedReplicas: 2, CurrentRevision: "kv-new", UpdateRevision: "kv-new"}
				if p.Status.String() != want.String() {
					t.Errorf("status\n got %+v\nwant %+v", p.Status, want)
				}
			},
		},
		{
			name: "a set being deleted only reports status", set: makeSet(2, func(s *appsv1.StatefulSet) {
				s.DeletionTimestamp = &metav1.Time{Time: now}
			}), sameRev: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obs := Observed{Claims: map[string]*corev1.PersistentVolumeClaim{}}
			if tc.pods != nil {
				obs.Pods = tc.pods(tc.set)
			}
			for _, c := range tc.claims {
				obs.Claims[c] = &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: c, Namespace: "default"}}
			}
			p := split(t, tc.set, Plan(tc.set, revs(tc.set, tc.sameRev), obs, true, now))
			if got := names(p.CreatePods); !slices.Equal(got, nonNil(tc.wantCreate)) {
				t.Errorf("created %v, want %v", got, tc.wantCreate)
			}
			if got := names(p.DeletePods); !slices.Equal(got, nonNil(tc.wantDelete)) {
				t.Errorf("deleted %v, want %v", got, tc.wantDelete)
			}
			if got := names(p.CreateClaims); !slices.Equal(got, nonNil(tc.wantClaims)) {
				t.Errorf("claims %v, want %v", got, tc.wantClaims)
			}
			if p.RequeueAfter != tc.wantRequeue {
				t.Errorf("requeue after %v, want %v", p.RequeueAfter, tc.wantRequeue)
			}
			if tc.check != nil {
				tc.check(t, p)
			}
		})
	}
}

// split sorts out's actions back into decisions, checking their order:
// events, new claims, claim owners, pods, revisions, the status.
func split(t *testing.T, set *appsv1.StatefulSet, out Output) decisions {
	t.Helper()
	d := decisions{Status: set.Status, RequeueAfter: out.RequeueAfter}
	synctest.CheckOrder(t, out.Actions, actionType, []ActionType{RecordEvent, CreateClaim, UpdateClaim, ManagePods, DeleteRevision, UpdateStatus})
	for _, a := range out.Actions {
		switch a.Type {
		case RecordEvent:
			d.Events = append(d.Events, a.Event)
		case CreateClaim:
			d.CreateClaims = append(d.CreateClaims, a.Claim)
		case UpdateClaim:
			d.UpdateClaims = append(d.UpdateClaims, a.Claim)
		case ManagePods:
			d.CreatePods, d.DeletePods = a.Create, a.Delete
		case UpdateStatus:
			d.Status = a.Status
		}
	}
	return d
}

func actionType(a Action) ActionType { return a.Type }

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func TestOrdinal(t *testing.T) {
	set := makeSet(1)
	for name, want := range map[string]int{"kv-0": 0, "kv-12": 12, "kv-01": -1, "kv-x": -1, "kvv-1": -1, "kv--1": -1} {
		got, ok := Ordinal(set, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}})
		if (want < 0) == ok || ok && got != want {
			t.Errorf("Ordinal(%s) = %d, %v; want %d", name, got, ok, want)
		}
	}
}
