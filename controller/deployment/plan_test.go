package deployment

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"minik/controller/internal/testutil"
)

func TestResolveFenceposts(t *testing.T) {
	cases := []struct {
		name                   string
		surge, unavail         intstr.IntOrString
		replicas               int32
		wantSurge, wantUnavail int32
	}{
		{"25% of 10 rounds surge up and unavailable down", intstr.FromString("25%"), intstr.FromString("25%"), 10, 3, 2},
		{"numbers are taken as they are", intstr.FromInt32(2), intstr.FromInt32(1), 10, 2, 1},
		{"both zero makes unavailable 1", intstr.FromInt32(0), intstr.FromString("0%"), 5, 0, 1},
		{"a percentage of 1 replica: surge 1, unavailable 0", intstr.FromString("25%"), intstr.FromString("25%"), 1, 1, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, u, err := ResolveFenceposts(&tc.surge, &tc.unavail, tc.replicas)
			if err != nil || s != tc.wantSurge || u != tc.wantUnavail {
				t.Fatalf("got surge %d unavailable %d (%v), want %d %d", s, u, err, tc.wantSurge, tc.wantUnavail)
			}
		})
	}
}

func makeDeploy(replicas int32, image string) *appsv1.Deployment {
	surge, unavail := intstr.FromInt32(1), intstr.FromInt32(0)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "d-uid", Generation: 1},
		Spec: appsv1.DeploymentSpec{
			Replicas:                &replicas,
			Selector:                &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			ProgressDeadlineSeconds: testutil.Int32(600),
			RevisionHistoryLimit:    testutil.Int32(10),
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavail}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image}}}},
		},
	}
}

// rsFor returns a ReplicaSet of d's template with image, at revision rev,
// spec replicas and available (= ready = status) pods.
func rsFor(d *appsv1.Deployment, image string, rev, replicas, available int32, age time.Duration) *appsv1.ReplicaSet {
	tmpl := d.Spec.Template.DeepCopy()
	tmpl.Spec.Containers[0].Image = image
	hash := ComputeHash(tmpl, nil)
	tmpl.Labels = map[string]string{"app": "web", PodTemplateHashLabel: hash}
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-" + hash, Namespace: "default", UID: types.UID("uid-" + image),
			CreationTimestamp: metav1.NewTime(testutil.T0.Add(-age)),
			Annotations: map[string]string{RevisionAnnotation: strconv.Itoa(int(rev)), DesiredReplicasAnnotation: strconv.Itoa(int(*d.Spec.Replicas)),
				MaxReplicasAnnotation: strconv.Itoa(int(*d.Spec.Replicas + MaxSurge(d)))}},
		Spec:   appsv1.ReplicaSetSpec{Replicas: &replicas, Template: *tmpl},
		Status: appsv1.ReplicaSetStatus{Replicas: replicas, ReadyReplicas: available, AvailableReplicas: available},
	}
}

func writes(out Output) []string {
	var s []string
	for _, a := range out.Actions {
		if a.Type != UpdateStatus && a.Type != UpdateRevision { // TestRevision checks the revision
			s = append(s, a.String())
		}
	}
	return s
}

func status(out Output) *appsv1.DeploymentStatus {
	for _, a := range out.Actions {
		if a.Type == UpdateStatus {
			return &a.Deployment.Status
		}
	}
	return nil
}

func TestPlan(t *testing.T) {
	now := testutil.T0
	d := makeDeploy(3, "v1")
	d2 := makeDeploy(3, "v2")
	hash1 := ComputeHash(&d.Spec.Template, nil)
	cases := []struct {
		name string
		in   Input
		want []string
		// check, if set, looks at the status written.
		check func(t *testing.T, st *appsv1.DeploymentStatus)
	}{
		{name: "a new Deployment creates its first ReplicaSet at replicas, as revision 1",
			in:   Input{Deployment: d, Now: now},
			want: []string{fmt.Sprintf("CreateReplicaSet web-%s replicas=3", hash1)},
			check: func(t *testing.T, st *appsv1.DeploymentStatus) {
				c := getCondition(*st, appsv1.DeploymentProgressing)
				if c == nil || c.Reason != ReasonNewRSCreated {
					t.Errorf("Progressing %+v", c)
				}
			}},
		{name: "a new template surges the new ReplicaSet by maxSurge first",
			in:   Input{Deployment: d2, ReplicaSets: []*appsv1.ReplicaSet{rsFor(d, "v1", 1, 3, 3, time.Hour)}, Now: now},
			want: []string{fmt.Sprintf("CreateReplicaSet web-%s replicas=1", ComputeHash(&d2.Spec.Template, nil))}},
		{name: "with maxUnavailable 0 the old ReplicaSet shrinks only as new pods become available",
			in:   Input{Deployment: d2, ReplicaSets: []*appsv1.ReplicaSet{rsFor(d, "v1", 1, 3, 3, time.Hour), rsFor(d, "v2", 2, 1, 1, time.Minute)}, Now: now},
			want: []string{fmt.Sprintf("UpdateReplicaSet %s replicas=2", rsFor(d, "v1", 1, 3, 3, 0).Name)}},
		{name: "an unavailable new pod blocks scaling the old one down",
			in:   Input{Deployment: d2, ReplicaSets: []*appsv1.ReplicaSet{rsFor(d, "v1", 1, 3, 3, time.Hour), rsFor(d, "v2", 2, 1, 0, time.Minute)}, Now: now},
			want: nil},
		{name: "a finished rollout deletes old ReplicaSets beyond revisionHistoryLimit, oldest revision first",
			in: func() Input {
				dd := makeDeploy(3, "v4")
				dd.Spec.RevisionHistoryLimit = testutil.Int32(1)
				return Input{Deployment: dd, ReplicaSets: []*appsv1.ReplicaSet{rsFor(dd, "v1", 1, 0, 0, 3*time.Hour), rsFor(dd, "v2", 2, 0, 0, 2*time.Hour),
					rsFor(dd, "v3", 3, 0, 0, time.Hour), rsFor(dd, "v4", 4, 3, 3, time.Minute)}, Now: now}
			}(),
			want: []string{
				fmt.Sprintf("DeleteReplicaSet %s replicas=0", rsFor(d, "v1", 1, 0, 0, 0).Name),
				fmt.Sprintf("DeleteReplicaSet %s replicas=0", rsFor(d, "v2", 2, 0, 0, 0).Name)},
			check: func(t *testing.T, st *appsv1.DeploymentStatus) {
				if c := getCondition(*st, appsv1.DeploymentProgressing); c == nil || c.Reason != ReasonNewRSAvailable {
					t.Errorf("Progressing %+v", c)
				}
				if c := getCondition(*st, appsv1.DeploymentAvailable); c == nil || c.Status != corev1.ConditionTrue || c.Reason != ReasonMinimumAvailable {
					t.Errorf("Available %+v", c)
				}
			}},
		{name: "Recreate scales every old ReplicaSet to zero first",
			in: func() Input {
				dd := makeDeploy(3, "v2")
				dd.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
				return Input{Deployment: dd, ReplicaSets: []*appsv1.ReplicaSet{rsFor(dd, "v1", 1, 3, 3, time.Hour)}, Now: now}
			}(),
			want: []string{fmt.Sprintf("UpdateReplicaSet %s replicas=0", rsFor(d, "v1", 1, 0, 0, 0).Name)}},
		{name: "Recreate waits for old pods to end before the new ReplicaSet grows",
			in: func() Input {
				dd := makeDeploy(3, "v2")
				dd.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
				return Input{Deployment: dd, ReplicaSets: []*appsv1.ReplicaSet{rsFor(dd, "v1", 1, 0, 0, time.Hour)},
					ActivePods: map[types.UID]int{"uid-v1": 2}, Now: now}
			}(),
			want: nil},
		{name: "Recreate creates the new ReplicaSet at full size once the old pods are gone",
			in: func() Input {
				dd := makeDeploy(3, "v2")
				dd.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
				return Input{Deployment: dd, ReplicaSets: []*appsv1.ReplicaSet{rsFor(dd, "v1", 1, 0, 0, time.Hour)}, Now: now}
			}(),
			want: []string{fmt.Sprintf("CreateReplicaSet web-%s replicas=3", ComputeHash(&d2.Spec.Template, nil))}},
		{name: "a paused Deployment creates no new ReplicaSet and says DeploymentPaused",
			in: func() Input {
				dd := makeDeploy(3, "v2")
				dd.Spec.Paused = true
				return Input{Deployment: dd, ReplicaSets: []*appsv1.ReplicaSet{rsFor(dd, "v1", 1, 3, 3, time.Hour)}, Now: now}
			}(),
			want: nil,
			check: func(t *testing.T, st *appsv1.DeploymentStatus) {
				if c := getCondition(*st, appsv1.DeploymentProgressing); c == nil || c.Reason != ReasonPaused || c.Status != corev1.ConditionUnknown {
					t.Errorf("Progressing %+v", c)
				}
			}},
		{name: "scaling during a rollout splits new replicas proportionally",
			in: func() Input {
				dd := makeDeploy(6, "v2")
				old := rsFor(makeDeploy(3, "v2"), "v1", 1, 2, 2, time.Hour)
				nu := rsFor(makeDeploy(3, "v2"), "v2", 2, 2, 2, time.Minute)
				return Input{Deployment: dd, ReplicaSets: []*appsv1.ReplicaSet{old, nu}, Now: now}
			}(),
			want: []string{
				fmt.Sprintf("UpdateReplicaSet %s replicas=4", rsFor(d, "v2", 0, 0, 0, 0).Name),
				fmt.Sprintf("UpdateReplicaSet %s replicas=3", rsFor(d, "v1", 0, 0, 0, 0).Name)}},
		{name: "a rollout without progress past progressDeadlineSeconds reports ProgressDeadlineExceeded",
			in: func() Input {
				dd := makeDeploy(3, "v2")
				dd.Spec.ProgressDeadlineSeconds = testutil.Int32(10)
				old := metav1.NewTime(now.Add(-time.Minute))
				dd.Status = appsv1.DeploymentStatus{Replicas: 4, UpdatedReplicas: 1, ReadyReplicas: 3, AvailableReplicas: 3, ObservedGeneration: 1,
					Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: ReasonRSUpdated,
						LastUpdateTime: old, LastTransitionTime: old}}}
				return Input{Deployment: dd, ReplicaSets: []*appsv1.ReplicaSet{rsFor(dd, "v1", 1, 3, 3, time.Hour), rsFor(dd, "v2", 2, 1, 0, time.Minute)}, Now: now}
			}(),
			want: nil,
			check: func(t *testing.T, st *appsv1.DeploymentStatus) {
				c := getCondition(*st, appsv1.DeploymentProgressing)
				if c == nil || c.Status != corev1.ConditionFalse || c.Reason != ReasonTimedOut {
					t.Errorf("Progressing %+v", c)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := Plan(tc.in)
			if got := writes(out); !slices.Equal(got, tc.want) {
				t.Fatalf("writes %q, want %q", got, tc.want)
			}
			if tc.check != nil {
				st := status(out)
				if st == nil {
					t.Fatal("no status written")
				}
				tc.check(t, st)
			}
		})
	}
}

func TestNewReplicaSetAnnotations(t *testing.T) {
	d := makeDeploy(3, "v2")
	d.Annotations = map[string]string{ChangeCauseAnnotation: "kubectl set image", lastAppliedAnnotation: "{}"}
	out := Plan(Input{Deployment: d, ReplicaSets: []*appsv1.ReplicaSet{rsFor(d, "v1", 4, 3, 3, time.Hour)}, Now: testutil.T0})
	rs := out.Actions[0].RS
	hash := ComputeHash(&d.Spec.Template, nil)
	cases := []struct {
		name      string
		got, want string
	}{
		{"the revision is one more than the highest old one", rs.Annotations[RevisionAnnotation], "5"},
		{"the change cause is copied", rs.Annotations[ChangeCauseAnnotation], "kubectl set image"},
		{"last-applied-configuration is not copied", rs.Annotations[lastAppliedAnnotation], ""},
		{"desired replicas are recorded", rs.Annotations[DesiredReplicasAnnotation], "3"},
		{"max replicas are replicas plus surge", rs.Annotations[MaxReplicasAnnotation], "4"},
		{"the name is the Deployment's plus the template hash", rs.Name, "web-" + hash},
		{"pods are labelled with the hash", rs.Spec.Template.Labels[PodTemplateHashLabel], hash},
		{"the selector includes the hash", rs.Spec.Selector.MatchLabels[PodTemplateHashLabel], hash},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Fatalf("got %q, want %q", tc.got, tc.want)
			}
		})
	}
}

func TestRevision(t *testing.T) {
	now := testutil.T0
	d := makeDeploy(3, "v1")
	atRevision := func(d *appsv1.Deployment, rev string) *appsv1.Deployment {
		d = d.DeepCopy()
		d.Annotations = map[string]string{RevisionAnnotation: rev}
		return d
	}
	cases := []struct {
		name string
		in   Input
		// want is the revision written on the Deployment, "" for none.
		want string
	}{
		{"a new Deployment takes its first ReplicaSet's revision 1", Input{Deployment: d, Now: now}, "1"},
		{"a new template gives the Deployment the new ReplicaSet's revision",
			Input{Deployment: atRevision(makeDeploy(3, "v2"), "1"), ReplicaSets: []*appsv1.ReplicaSet{rsFor(d, "v1", 1, 3, 3, time.Hour)}, Now: now}, "2"},
		{"a Deployment already at its ReplicaSet's revision writes none",
			Input{Deployment: atRevision(d, "1"), ReplicaSets: []*appsv1.ReplicaSet{rsFor(d, "v1", 1, 3, 3, time.Hour)}, Now: now}, ""},
		{"a rollback to an old template takes the next revision",
			Input{Deployment: atRevision(d, "2"), ReplicaSets: []*appsv1.ReplicaSet{rsFor(d, "v1", 1, 0, 0, time.Hour), rsFor(d, "v2", 2, 3, 3, time.Minute)}, Now: now}, "3"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			for _, a := range Plan(tc.in).Actions {
				if a.Type == UpdateRevision {
					got = a.Deployment.Annotations[RevisionAnnotation]
				}
			}
			if got != tc.want {
				t.Errorf("revision written %q, want %q", got, tc.want)
			}
		})
	}
}

func TestScalingEvents(t *testing.T) {
	now := testutil.T0
	cases := []struct {
		name     string
		replicas int32
		want     string
	}{
		{"a ReplicaSet created with replicas says it scaled up from 0", 3, "Scaled up replica set web-%s from 0 to 3"},
		{"a ReplicaSet created at 0 replicas says nothing", 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := makeDeploy(tc.replicas, "v1")
			want := tc.want
			if want != "" {
				want = fmt.Sprintf(want, ComputeHash(&d.Spec.Template, nil))
			}
			created := false
			for _, a := range Plan(Input{Deployment: d, Now: now}).Actions {
				if a.Type == CreateReplicaSet {
					created = true
					if a.Message != want {
						t.Errorf("event %q, want %q", a.Message, want)
					}
				}
			}
			if !created {
				t.Error("no ReplicaSet created")
			}
		})
	}
}
