package tainttoleration

import (
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"minik/scheduler/framework"
	"minik/scheduler/internal/st"
)

func TestFilter(t *testing.T) {
	gpu := st.MakeNode().Name("n").Taint("dedicated", "gpu", corev1.TaintEffectNoSchedule).Obj()
	cases := []struct {
		name string
		pod  *corev1.Pod
		node *corev1.Node
		want framework.Code
		// detail is the taint minik explain shows; the message is always
		// upstream's ErrReasonUntoleratedTaint.
		detail string
	}{
		{"an untainted node accepts any pod", st.MakePod().Obj(), st.MakeNode().Name("n").Obj(), framework.Success, ""},
		{"a NoSchedule taint rejects a pod without toleration", st.MakePod().Obj(), gpu, framework.UnschedulableAndUnresolvable,
			"dedicated=gpu:NoSchedule"},
		{"a NoExecute taint rejects too", st.MakePod().Obj(), st.MakeNode().Name("n").Taint("node.kubernetes.io/not-ready", "", corev1.TaintEffectNoExecute).Obj(),
			framework.UnschedulableAndUnresolvable, "node.kubernetes.io/not-ready:NoExecute"},
		{"a PreferNoSchedule taint does not filter", st.MakePod().Obj(), st.MakeNode().Name("n").Taint("a", "b", corev1.TaintEffectPreferNoSchedule).Obj(), framework.Success, ""},
		{"Equal with the same key, value and effect tolerates",
			st.MakePod().Toleration("dedicated", corev1.TolerationOpEqual, "gpu", corev1.TaintEffectNoSchedule).Obj(), gpu, framework.Success, ""},
		{"an empty operator means Equal",
			st.MakePod().Toleration("dedicated", "", "gpu", corev1.TaintEffectNoSchedule).Obj(), gpu, framework.Success, ""},
		{"Equal with another value does not tolerate",
			st.MakePod().Toleration("dedicated", corev1.TolerationOpEqual, "cpu", corev1.TaintEffectNoSchedule).Obj(), gpu, framework.UnschedulableAndUnresolvable,
			"dedicated=gpu:NoSchedule"},
		{"Exists ignores the value",
			st.MakePod().Toleration("dedicated", corev1.TolerationOpExists, "", corev1.TaintEffectNoSchedule).Obj(), gpu, framework.Success, ""},
		{"an empty effect matches every effect",
			st.MakePod().Toleration("dedicated", corev1.TolerationOpExists, "", "").Obj(), gpu, framework.Success, ""},
		{"another effect does not tolerate",
			st.MakePod().Toleration("dedicated", corev1.TolerationOpExists, "", corev1.TaintEffectNoExecute).Obj(), gpu, framework.UnschedulableAndUnresolvable,
			"dedicated=gpu:NoSchedule"},
		{"an empty key with Exists tolerates every taint",
			st.MakePod().Toleration("", corev1.TolerationOpExists, "", "").Obj(),
			st.MakeNode().Name("n").Taint("a", "1", corev1.TaintEffectNoSchedule).Taint("b", "2", corev1.TaintEffectNoExecute).Obj(), framework.Success, ""},
		{"the first untolerated taint is reported",
			st.MakePod().Toleration("a", corev1.TolerationOpExists, "", "").Obj(),
			st.MakeNode().Name("n").Taint("a", "1", corev1.TaintEffectNoSchedule).Taint("b", "2", corev1.TaintEffectNoSchedule).Obj(),
			framework.UnschedulableAndUnresolvable, "b=2:NoSchedule"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := st.Filter(New(), tc.pod, st.NewSnapshot([]*corev1.Node{tc.node}, nil), "n")
			message := ""
			if tc.want != framework.Success {
				message = ErrReasonUntoleratedTaint
			}
			if got.Code() != tc.want || got.Message() != message || got.Detail() != tc.detail {
				t.Fatalf("got %v (detail %q), want %v %q (detail %q)", got, got.Detail(), tc.want, message, tc.detail)
			}
		})
	}
}

func TestScore(t *testing.T) {
	nodes := []*corev1.Node{
		st.MakeNode().Name("clean").Obj(),
		st.MakeNode().Name("one").Taint("a", "", corev1.TaintEffectPreferNoSchedule).Obj(),
		st.MakeNode().Name("two").Taint("a", "", corev1.TaintEffectPreferNoSchedule).Taint("b", "", corev1.TaintEffectPreferNoSchedule).Obj(),
	}
	cases := []struct {
		name string
		pod  *corev1.Pod
		want map[string]int64
	}{
		{"fewer untolerated PreferNoSchedule taints score higher", st.MakePod().Obj(), map[string]int64{"clean": 100, "one": 50, "two": 0}},
		{"tolerated PreferNoSchedule taints do not count",
			st.MakePod().Toleration("a", corev1.TolerationOpExists, "", corev1.TaintEffectPreferNoSchedule).Obj(), map[string]int64{"clean": 100, "one": 100, "two": 0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, st2 := st.Scores(New(), tc.pod, st.NewSnapshot(nodes, nil))
			if !st2.IsSuccess() {
				t.Fatal(st2)
			}
			for n, w := range tc.want {
				if got[n] != w {
					t.Fatalf("scores %v, want %v", got, tc.want)
				}
			}
		})
	}
}

// TestToleratesTaint pins the toleration rule this plugin, the kubelet
// and the controllers share (k8s.io/component-helpers).
func TestToleratesTaint(t *testing.T) {
	taint := corev1.Taint{Key: "k", Value: "v", Effect: corev1.TaintEffectNoSchedule}
	cases := []struct {
		name string
		tol  corev1.Toleration
		want bool
	}{
		{"Equal with key, value and effect", corev1.Toleration{Key: "k", Operator: corev1.TolerationOpEqual, Value: "v", Effect: corev1.TaintEffectNoSchedule}, true},
		{"Equal with a different value", corev1.Toleration{Key: "k", Operator: corev1.TolerationOpEqual, Value: "w"}, false},
		{"Exists with the key and no effect", corev1.Toleration{Key: "k", Operator: corev1.TolerationOpExists}, true},
		{"Exists with another key", corev1.Toleration{Key: "j", Operator: corev1.TolerationOpExists}, false},
		{"an empty key with Exists matches every taint", corev1.Toleration{Operator: corev1.TolerationOpExists}, true},
		// The API rejects an empty key without Exists; Kubernetes' matcher
		// compares the value alone.
		{"an empty key with Equal compares the value", corev1.Toleration{Operator: corev1.TolerationOpEqual, Value: "v"}, true},
		{"the alpha operator Lt is off", corev1.Toleration{Key: "k", Operator: corev1.TolerationOpLt, Value: "9"}, false},
		{"another effect does not match", corev1.Toleration{Key: "k", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := corev1helpers.TolerationsTolerateTaint(logr.Discard(), []corev1.Toleration{tc.tol}, &taint, false); got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}
