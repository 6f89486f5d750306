package deployment

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/controller/internal/testutil"
)

// midRollout is a Deployment rolling v1 out to v2 with maxSurge 1: the old
// ReplicaSet has 3 available pods, the new one 1 pod of which newAvailable
// are available. Its recorded status is the one before: nothing available
// yet on the new side, so newAvailable 1 is progress.
func midRollout(newAvailable int32) (*appsv1.Deployment, []*appsv1.ReplicaSet) {
	d := makeDeploy(3, "v2")
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 4, UpdatedReplicas: 1, ReadyReplicas: 3, AvailableReplicas: 3}
	return d, []*appsv1.ReplicaSet{rsFor(d, "v1", 1, 3, 3, time.Hour), rsFor(d, "v2", 2, 1, newAvailable, time.Minute)}
}

func progressingCondition(reason string, status corev1.ConditionStatus, lastUpdate time.Time) appsv1.DeploymentCondition {
	return appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: status, Reason: reason, Message: "before",
		LastUpdateTime: metav1.NewTime(lastUpdate), LastTransitionTime: metav1.NewTime(lastUpdate)}
}

func TestProgressingConditionReasons(t *testing.T) {
	now := testutil.T0
	newRS := fmt.Sprintf("web-%s", ComputeHash(&makeDeploy(3, "v2").Spec.Template, nil))
	cases := []struct {
		name  string
		input func() Input
		// want is the Progressing condition written: status, reason,
		// message; lastUpdate and lastTransition times if not zero.
		want                       appsv1.DeploymentCondition
		wantRequeue                time.Duration
		wantUnchanged, wantRemoved bool
	}{
		{name: "a new ReplicaSet found without a Progressing condition is FoundNewReplicaSet, checked again at the deadline",
			input: func() Input {
				d, rss := midRollout(0)
				return Input{Deployment: d, ReplicaSets: rss}
			},
			want: appsv1.DeploymentCondition{Status: corev1.ConditionTrue, Reason: "FoundNewReplicaSet",
				Message: fmt.Sprintf("Found new replica set %q", newRS)},
			wantRequeue: 601 * time.Second},
		{name: "a new pod becoming available is ReplicaSetUpdated: lastUpdateTime moves, lastTransitionTime stays",
			input: func() Input {
				d, rss := midRollout(1)
				d.Status.Conditions = []appsv1.DeploymentCondition{progressingCondition("NewReplicaSetCreated", corev1.ConditionTrue, now.Add(-time.Minute))}
				return Input{Deployment: d, ReplicaSets: rss}
			},
			want: appsv1.DeploymentCondition{Status: corev1.ConditionTrue, Reason: "ReplicaSetUpdated",
				Message: fmt.Sprintf("ReplicaSet %q is progressing.", newRS), LastUpdateTime: metav1.NewTime(now),
				LastTransitionTime: metav1.NewTime(now.Add(-time.Minute))}},
		{name: "no progress for progressDeadlineSeconds is ProgressDeadlineExceeded",
			input: func() Input {
				d, rss := midRollout(0)
				d.Status.Conditions = []appsv1.DeploymentCondition{progressingCondition("ReplicaSetUpdated", corev1.ConditionTrue, now.Add(-11*time.Minute))}
				return Input{Deployment: d, ReplicaSets: rss}
			},
			want: appsv1.DeploymentCondition{Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded",
				Message: fmt.Sprintf("ReplicaSet %q has timed out progressing.", newRS)}},
		{name: "every replica updated and available is NewReplicaSetAvailable",
			input: func() Input {
				d := makeDeploy(3, "v2")
				d.Status.Conditions = []appsv1.DeploymentCondition{progressingCondition("ReplicaSetUpdated", corev1.ConditionTrue, now.Add(-time.Minute))}
				return Input{Deployment: d, ReplicaSets: []*appsv1.ReplicaSet{rsFor(d, "v2", 1, 3, 3, time.Minute)}}
			},
			want: appsv1.DeploymentCondition{Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable",
				Message: fmt.Sprintf("ReplicaSet %q has successfully progressed.", newRS), LastTransitionTime: metav1.NewTime(now.Add(-time.Minute))}},
		{name: "a finished rollout scaled up stays NewReplicaSetAvailable while the new pods become available",
			input: func() Input {
				d := makeDeploy(5, "v2")
				d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 5, UpdatedReplicas: 5, ReadyReplicas: 2, AvailableReplicas: 2,
					Conditions: []appsv1.DeploymentCondition{progressingCondition("NewReplicaSetAvailable", corev1.ConditionTrue, now.Add(-time.Hour))}}
				return Input{Deployment: d, ReplicaSets: []*appsv1.ReplicaSet{rsFor(d, "v2", 1, 5, 3, time.Hour)}}
			},
			wantUnchanged: true},
		{name: "NewReplicaSetAvailable never times out",
			input: func() Input {
				d, rss := midRollout(0)
				d.Status.Conditions = []appsv1.DeploymentCondition{progressingCondition("NewReplicaSetAvailable", corev1.ConditionTrue, now.Add(-time.Hour))}
				return Input{Deployment: d, ReplicaSets: rss}
			},
			wantUnchanged: true},
		{name: "resuming says DeploymentResumed, and the deadline counts from then",
			input: func() Input {
				d, rss := midRollout(0)
				d.Status.Conditions = []appsv1.DeploymentCondition{progressingCondition("DeploymentPaused", corev1.ConditionUnknown, now.Add(-time.Hour))}
				return Input{Deployment: d, ReplicaSets: rss}
			},
			want: appsv1.DeploymentCondition{Status: corev1.ConditionUnknown, Reason: "DeploymentResumed", Message: "Deployment is resumed",
				LastUpdateTime: metav1.NewTime(now)},
			wantRequeue: 601 * time.Second},
		{name: "pausing a timed-out rollout keeps ProgressDeadlineExceeded",
			input: func() Input {
				d, rss := midRollout(0)
				d.Spec.Paused = true
				d.Status.Conditions = []appsv1.DeploymentCondition{progressingCondition("ProgressDeadlineExceeded", corev1.ConditionFalse, now.Add(-time.Hour))}
				return Input{Deployment: d, ReplicaSets: rss}
			},
			wantUnchanged: true},
		{name: "without a progress deadline there is no Progressing condition",
			input: func() Input {
				d, rss := midRollout(1)
				d.Spec.ProgressDeadlineSeconds = testutil.Int32(math.MaxInt32)
				d.Status.Conditions = []appsv1.DeploymentCondition{progressingCondition("ReplicaSetUpdated", corev1.ConditionTrue, now.Add(-time.Minute))}
				return Input{Deployment: d, ReplicaSets: rss}
			},
			wantRemoved: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.input()
			in.Now = now
			before := getCondition(in.Deployment.Status, appsv1.DeploymentProgressing)
			out := Plan(in)
			st := status(out)
			if st == nil {
				st = &in.Deployment.Status
			}
			got := getCondition(*st, appsv1.DeploymentProgressing)
			switch {
			case tc.wantRemoved:
				if got != nil {
					t.Fatalf("Progressing %+v, want none", got)
				}
			case tc.wantUnchanged:
				if got == nil || *got != *before {
					t.Fatalf("Progressing %+v, want it unchanged: %+v", got, before)
				}
			default:
				if got == nil || got.Status != tc.want.Status || got.Reason != tc.want.Reason || got.Message != tc.want.Message {
					t.Fatalf("Progressing %+v, want %s %s %q", got, tc.want.Status, tc.want.Reason, tc.want.Message)
				}
				if !tc.want.LastUpdateTime.IsZero() && !got.LastUpdateTime.Equal(&tc.want.LastUpdateTime) {
					t.Errorf("lastUpdateTime %v, want %v", got.LastUpdateTime, tc.want.LastUpdateTime)
				}
				if !tc.want.LastTransitionTime.IsZero() && !got.LastTransitionTime.Equal(&tc.want.LastTransitionTime) {
					t.Errorf("lastTransitionTime %v, want %v", got.LastTransitionTime, tc.want.LastTransitionTime)
				}
			}
			if out.RequeueAfter != tc.wantRequeue {
				t.Errorf("requeue after %v, want %v", out.RequeueAfter, tc.wantRequeue)
			}
		})
	}
}

func replicaFailure(message string, at time.Time) appsv1.ReplicaSetCondition {
	return appsv1.ReplicaSetCondition{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate",
		Message: message, LastTransitionTime: metav1.NewTime(at)}
}

func TestReplicaFailureIsCopiedFromTheReplicaSets(t *testing.T) {
	now := testutil.T0
	failedAt := now.Add(-time.Minute)
	cases := []struct {
		name string
		// newFailure and oldFailure are the ReplicaSets' ReplicaFailure
		// messages ("" for none), deploymentFailure the Deployment's.
		newFailure, oldFailure, deploymentFailure string
		paused                                    bool
		// want is the Deployment's ReplicaFailure message after the sync,
		// "" for none.
		want string
	}{
		{name: "the new ReplicaSet's failure is copied", newFailure: "quota exceeded", want: "quota exceeded"},
		{name: "the new ReplicaSet's failure wins over an old one's", newFailure: "quota exceeded", oldFailure: "forbidden", want: "quota exceeded"},
		{name: "an old ReplicaSet's failure is copied when the new one has none", oldFailure: "forbidden", want: "forbidden"},
		{name: "the condition goes once no ReplicaSet has one", deploymentFailure: "quota exceeded", want: ""},
		{name: "a condition of the same reason is left as it is, message included", newFailure: "quota exceeded again",
			deploymentFailure: "quota exceeded", want: "quota exceeded"},
		{name: "a paused Deployment keeps its condition as it is", paused: true, deploymentFailure: "quota exceeded", want: "quota exceeded"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, rss := midRollout(0)
			d.Spec.Paused = tc.paused
			if tc.oldFailure != "" {
				rss[0].Status.Conditions = []appsv1.ReplicaSetCondition{replicaFailure(tc.oldFailure, failedAt)}
			}
			if tc.newFailure != "" {
				rss[1].Status.Conditions = []appsv1.ReplicaSetCondition{replicaFailure(tc.newFailure, failedAt)}
			}
			if tc.deploymentFailure != "" {
				d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue,
					Reason: "FailedCreate", Message: tc.deploymentFailure, LastUpdateTime: metav1.NewTime(failedAt), LastTransitionTime: metav1.NewTime(failedAt)}}
			}
			st := status(Plan(Input{Deployment: d, ReplicaSets: rss, Now: now}))
			if st == nil {
				t.Fatal("no status written")
			}
			got := getCondition(*st, appsv1.DeploymentReplicaFailure)
			if tc.want == "" {
				if got != nil {
					t.Fatalf("ReplicaFailure %+v, want none", got)
				}
				return
			}
			if got == nil || got.Status != corev1.ConditionTrue || got.Reason != "FailedCreate" || got.Message != tc.want ||
				!got.LastTransitionTime.Time.Equal(failedAt) || !got.LastUpdateTime.Time.Equal(failedAt) {
				t.Fatalf("ReplicaFailure %+v, want True FailedCreate %q since %v", got, tc.want, failedAt)
			}
		})
	}
}

func TestCreateFailedReportsReplicaSetCreateError(t *testing.T) {
	quota := errors.New(`replicasets.apps "web-abc" is forbidden: exceeded quota`)
	want := `Failed to create new replica set "web-abc": replicasets.apps "web-abc" is forbidden: exceeded quota`
	t.Run("with a progress deadline, Progressing turns False", func(t *testing.T) {
		d := makeDeploy(3, "v1")
		d.Status.Conditions = []appsv1.DeploymentCondition{progressingCondition("NewReplicaSetAvailable", corev1.ConditionTrue, testutil.T0.Add(-time.Hour))}
		failed, msg := CreateFailed(d, "web-abc", quota, testutil.T0)
		c := getCondition(failed.Status, appsv1.DeploymentProgressing)
		if msg != want || c == nil || c.Status != corev1.ConditionFalse || c.Reason != "ReplicaSetCreateError" || c.Message != want ||
			!c.LastTransitionTime.Time.Equal(testutil.T0) {
			t.Fatalf("message %q, Progressing %+v", msg, c)
		}
		if getCondition(d.Status, appsv1.DeploymentProgressing).Reason != "NewReplicaSetAvailable" {
			t.Fatal("the input Deployment was changed")
		}
	})
	t.Run("without one, only the event says it", func(t *testing.T) {
		d := makeDeploy(3, "v1")
		d.Spec.ProgressDeadlineSeconds = testutil.Int32(math.MaxInt32)
		failed, msg := CreateFailed(d, "web-abc", quota, testutil.T0)
		if msg != want || len(failed.Status.Conditions) != 0 {
			t.Fatalf("message %q, conditions %+v", msg, failed.Status.Conditions)
		}
	})
}
