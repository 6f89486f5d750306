package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"minik/controller"
)

// TestDaemonSetRollingUpdateWithMaxSurge updates a DaemonSet with maxSurge
// 1 and maxUnavailable 0 on two nodes and watches every 50ms that no node
// is ever left without a pod, that a node runs the new pod beside the old
// one, and that the old one goes only once the new one was ready for
// minReadySeconds.
func TestDaemonSetRollingUpdateWithMaxSurge(t *testing.T) {
	c, cs, ctx := startWithController(t, controller.Config{})
	ns := "default"
	fakeKubelet(t, cs, ns)
	fakeNode(t, ctx, cs, "n1")
	fakeNode(t, ctx, cs, "n2")

	one, zero := intstr.FromInt32(1), intstr.FromInt32(0)
	ds := makeDaemonSet("surge", "agent:1")
	ds.Spec.MinReadySeconds = 2
	ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxSurge: &one}}

	t.Run("maxSurge needs maxUnavailable 0, which does not default to it", func(t *testing.T) {
		_, err := cs.AppsV1().DaemonSets(ns).Create(ctx, ds, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: 1: may not be set when maxUnavailable is non-zero") {
			t.Fatalf("got %v", err)
		}
	})
	ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = &zero
	if _, err := cs.AppsV1().DaemonSets(ns).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "an available pod on each node", func() (bool, string) {
		got, _ := cs.AppsV1().DaemonSets(ns).Get(ctx, "surge", metav1.GetOptions{})
		return got.Status.NumberAvailable == 2, fmt.Sprintf("%+v", got.Status)
	})

	c.MustKubectl(t, "", "set", "image", "daemonset/surge", "c=agent:2")
	sawTwoOnANode := false
	deadline := time.Now().Add(40 * time.Second)
	for {
		byNode := daemonPodsByNode(ctx, cs, ns, "surge")
		done := len(byNode) == 2
		for _, node := range []string{"n1", "n2"} {
			pods := byNode[node]
			if len(pods) == 0 {
				t.Fatalf("node %s has no pod during the rollout", node)
			}
			if len(pods) == 2 {
				sawTwoOnANode = true
			}
			var updatedReady *corev1.PodCondition
			hasOld := false
			for i := range pods {
				if pods[i].Spec.Containers[0].Image == "agent:1" {
					hasOld = true
				} else if c := podCondition(&pods[i], corev1.PodReady); c != nil && c.Status == corev1.ConditionTrue {
					updatedReady = c
				}
			}
			done = done && !hasOld && len(pods) == 1
			if !hasOld && updatedReady == nil {
				t.Fatalf("node %s lost its old pod before the new one was ready: %+v", node, pods)
			}
			if !hasOld && time.Since(updatedReady.LastTransitionTime.Time) < 1*time.Second {
				// Ready times are kept to the second: 2s minReadySeconds
				// leaves at least 1s.
				t.Fatalf("node %s lost its old pod %v after the new one became ready, before minReadySeconds", node, time.Since(updatedReady.LastTransitionTime.Time))
			}
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("rollout not done: %v", byNode)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !sawTwoOnANode {
		t.Fatal("never saw the new pod beside the old one")
	}
	eventually(t, 20*time.Second, "status updated 2, available 2", func() (bool, string) {
		got, _ := cs.AppsV1().DaemonSets(ns).Get(ctx, "surge", metav1.GetOptions{})
		return got.Status.UpdatedNumberScheduled == 2 && got.Status.NumberAvailable == 2, fmt.Sprintf("%+v", got.Status)
	})
}
