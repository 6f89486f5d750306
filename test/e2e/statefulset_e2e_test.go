package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// statefulSetKV is the seeds' StatefulSet with busybox in place of redis:
// 2 replicas come up in order, each with its own bound local-path claim;
// the ConfigMap file appears at its subPath; a file written by kv-0
// survives deleting the pod, which comes back as kv-0 on the same node;
// scale to 1 removes kv-1 and keeps its claim; a rolling update with
// partition 1 updates only kv-1; kubectl rollout history lists both
// revisions.
func (e *ctlEnv) statefulSetKV(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pods := e.cs.CoreV1().Pods(ns)
	claims := e.cs.CoreV1().PersistentVolumeClaims(ns)
	if _, err := e.cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kv-config"},
		Data: map[string]string{"kv.conf": "maxmemory 2mb\n"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	grace := int64(1)
	labels := map[string]string{"app": "kv"}
	set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "kv"}, Spec: appsv1.StatefulSetSpec{
		Replicas: ptrTo[int32](2), ServiceName: "kv", Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{Name: "kv", Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent,
				// Leaves a file in /data (the first kv-0's stays); ready
				// only with the ConfigMap file at its subPath. This
				// cluster's nodes serve no logs or exec to the apiserver,
				// so answers come as Ready conditions.
				Command: []string{"sh", "-c", "[ -f /data/file ] || echo kept > /data/file; trap 'exit 0' TERM; sleep 3600 & wait"},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{
					Command: []string{"grep", "-q", "maxmemory 2mb", "/etc/kv/kv.conf"}}}, PeriodSeconds: 1},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"},
					{Name: "config", MountPath: "/etc/kv/kv.conf", SubPath: "kv.conf"}}}},
			Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{
				ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "kv-config"}}}}}}},
		VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("16Mi")}}}}},
	}}
	if _, err := e.cs.AppsV1().StatefulSets(ns).Create(ctx, set, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		bg := metav1.DeletePropagationBackground
		_ = e.cs.AppsV1().StatefulSets(ns).Delete(ctx, "kv", metav1.DeleteOptions{PropagationPolicy: &bg})
		e.waitGone(t, "app=kv")
		for _, c := range []string{"data-kv-0", "data-kv-1"} {
			_ = claims.Delete(ctx, c, metav1.DeleteOptions{})
		}
		_ = e.cs.CoreV1().ConfigMaps(ns).Delete(ctx, "kv-config", metav1.DeleteOptions{})
	})
	waitSet := func(what string, cond func(s *appsv1.StatefulSet) bool) *appsv1.StatefulSet {
		t.Helper()
		var s *appsv1.StatefulSet
		waitFor(t, 90*time.Second, what, func() (bool, string) {
			var err error
			s, err = e.cs.AppsV1().StatefulSets(ns).Get(ctx, "kv", metav1.GetOptions{})
			return err == nil && s.Status.ObservedGeneration == s.Generation && cond(s), fmt.Sprintf("%+v %v", s.Status, err)
		})
		return s
	}
	waitSet("2 ready replicas", func(s *appsv1.StatefulSet) bool { return s.Status.ReadyReplicas == 2 })

	kv0, err := pods.Get(ctx, "kv-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kv1, err := pods.Get(ctx, "kv-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range kv0.Status.Conditions {
		if c.Type == corev1.PodReady && kv1.CreationTimestamp.Before(&c.LastTransitionTime) {
			t.Errorf("kv-1 was created at %v, before kv-0 was ready at %v", kv1.CreationTimestamp, c.LastTransitionTime)
		}
	}
	for _, name := range []string{"data-kv-0", "data-kv-1"} {
		c, err := claims.Get(ctx, name, metav1.GetOptions{})
		if err != nil || c.Status.Phase != corev1.ClaimBound {
			t.Fatalf("claim %s: %v %v", name, c.Status.Phase, err)
		}
	}
	t.Run("kv-0 comes back on its node with its data", func(t *testing.T) {
		zero := int64(0)
		if err := pods.Delete(ctx, "kv-0", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
		again := e.waitPods(t, "statefulset.kubernetes.io/pod-name=kv-0", 90*time.Second, "a new kv-0 ready", func(ps []corev1.Pod) bool {
			return len(ps) == 1 && ps[0].UID != kv0.UID && podReady(&ps[0])
		})[0]
		if again.Spec.NodeName != kv0.Spec.NodeName {
			t.Errorf("kv-0 moved from %s to %s", kv0.Spec.NodeName, again.Spec.NodeName)
		}
		// A reader on data-kv-0 (same node: the volume's affinity) is
		// Ready only if the file the first kv-0 wrote is there.
		reader := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "kv-reader"}, Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{Name: "r", Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent,
				Command:      []string{"sh", "-c", `[ "$(cat /data/file)" = kept ] || exit 1; touch /tmp/ok; trap 'exit 0' TERM; sleep 3600 & wait`},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
				ReadinessProbe: &corev1.Probe{PeriodSeconds: 1,
					ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "/tmp/ok"}}}}}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-kv-0"}}}}}}
		if _, err := pods.Create(ctx, reader, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = pods.Delete(ctx, "kv-reader", metav1.DeleteOptions{GracePeriodSeconds: &zero}) }()
		waitFor(t, 60*time.Second, "the reader Ready (it found kv-0's file)", func() (bool, string) {
			p, err := pods.Get(ctx, "kv-reader", metav1.GetOptions{})
			if err == nil && p.Status.Phase == corev1.PodFailed {
				t.Fatalf("the reader did not find kv-0's file: %+v", p.Status.ContainerStatuses)
			}
			return err == nil && podReady(p), fmt.Sprint(err)
		})
	})
	t.Run("scale to 1 removes kv-1 and keeps its claim", func(t *testing.T) {
		e.kubectl(t, "scale", "sts/kv", "--replicas=1")
		waitFor(t, 60*time.Second, "kv-1 gone", func() (bool, string) {
			_, err := pods.Get(ctx, "kv-1", metav1.GetOptions{})
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
		if c, err := claims.Get(ctx, "data-kv-1", metav1.GetOptions{}); err != nil || c.DeletionTimestamp != nil {
			t.Errorf("data-kv-1 after scale down: %v", err)
		}
		e.kubectl(t, "scale", "sts/kv", "--replicas=2")
		waitSet("2 ready replicas again", func(s *appsv1.StatefulSet) bool { return s.Status.ReadyReplicas == 2 })
	})
	t.Run("a rolling update with partition 1 updates only kv-1", func(t *testing.T) {
		e.kubectl(t, "patch", "sts/kv", "-p", `{"spec":{"updateStrategy":{"rollingUpdate":{"partition":1}}}}`)
		e.kubectl(t, "patch", "sts/kv", "-p", `{"spec":{"template":{"metadata":{"annotations":{"kv/version":"2"}}}}}`)
		s := waitSet("kv-1 updated", func(s *appsv1.StatefulSet) bool {
			return s.Status.UpdatedReplicas == 1 && s.Status.ReadyReplicas == 2 && s.Status.CurrentRevision != s.Status.UpdateRevision
		})
		for name, want := range map[string]string{"kv-0": s.Status.CurrentRevision, "kv-1": s.Status.UpdateRevision} {
			p, err := pods.Get(ctx, name, metav1.GetOptions{})
			if err != nil || p.Labels[appsv1.ControllerRevisionHashLabelKey] != want {
				t.Errorf("%s at revision %s, want %s (%v)", name, p.Labels[appsv1.ControllerRevisionHashLabelKey], want, err)
			}
		}
		out := e.kubectl(t, "rollout", "history", "sts/kv")
		if !strings.Contains(out, "\n1 ") || !strings.Contains(out, "\n2 ") {
			t.Errorf("rollout history:\n%s", out)
		}
	})
}

func ptrTo[T any](v T) *T { return &v }
