package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/controller"
)

func makeStatefulSet(name string, replicas int32, image string) *appsv1.StatefulSet {
	labels := map[string]string{"app": name}
	return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1.StatefulSetSpec{
		Replicas: int32p(replicas), ServiceName: name,
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image}}}}}}
}

// TestStatefulSetOrderScalePartitionAndHistory runs a StatefulSet against
// the apiserver and the controller manager, with a fake kubelet that
// makes pods Running and Ready: OrderedReady creation waits for each pod,
// scale down removes the highest ordinals, a partitioned update touches
// only the ordinals at or above the partition, a failed pod comes back
// under its name, and kubectl rollout status|history|undo work on the
// ControllerRevisions.
func TestStatefulSetOrderScalePartitionAndHistory(t *testing.T) {
	c, cs, ctx := startWithController(t, controller.Config{Controllers: []string{"statefulset", "garbagecollector"}})
	ns := "default"
	sts := cs.AppsV1().StatefulSets(ns)

	t.Run("a selector that misses the template labels is refused with its cause", func(t *testing.T) {
		bad := makeStatefulSet("bad", 1, "kv:1")
		bad.Spec.Selector.MatchLabels = map[string]string{"app": "other"}
		_, err := sts.Create(ctx, bad, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.template.metadata.labels: Invalid value") {
			t.Fatalf("got %v", err)
		}
	})

	if _, err := sts.Create(ctx, makeStatefulSet("kv", 3, "kv:1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Run("OrderedReady makes kv-0 and waits for it to be ready", func(t *testing.T) {
		eventually(t, 10*time.Second, "kv-0", func() (bool, string) {
			n, _ := countPods(ctx, cs, ns, "app=kv")
			return n == 1, fmt.Sprint(n)
		})
		time.Sleep(time.Second)
		n, pods := countPods(ctx, cs, ns, "app=kv")
		if n != 1 || pods[0].Name != "kv-0" {
			t.Fatalf("pods %v before kv-0 is ready", pods)
		}
		p := pods[0]
		if p.Spec.Hostname != "kv-0" || p.Spec.Subdomain != "kv" || p.Labels[appsv1.StatefulSetPodNameLabel] != "kv-0" ||
			p.Labels[appsv1.PodIndexLabel] != "0" || !strings.HasPrefix(p.Labels[appsv1.ControllerRevisionHashLabelKey], "kv-") {
			t.Errorf("kv-0 identity: hostname %q subdomain %q labels %v", p.Spec.Hostname, p.Spec.Subdomain, p.Labels)
		}
	})
	fakeKubelet(t, cs, ns)
	waitReady := func(t *testing.T, ready int32) *appsv1.StatefulSet {
		t.Helper()
		var got *appsv1.StatefulSet
		eventually(t, 20*time.Second, fmt.Sprintf("%d ready", ready), func() (bool, string) {
			got, _ = sts.Get(ctx, "kv", metav1.GetOptions{})
			return got.Status.ReadyReplicas == ready && got.Status.Replicas == ready && got.Status.ObservedGeneration == got.Generation,
				fmt.Sprintf("%+v", got.Status)
		})
		return got
	}
	t.Run("the other ordinals follow and kubectl shows READY 3/3", func(t *testing.T) {
		got := waitReady(t, 3)
		if got.Status.CurrentRevision == "" || got.Status.CurrentRevision != got.Status.UpdateRevision || got.Status.UpdatedReplicas != 3 {
			t.Errorf("status %+v", got.Status)
		}
		out := c.MustKubectl(t, "", "get", "sts", "kv")
		if !strings.Contains(out, "READY") || !strings.Contains(out, "3/3") {
			t.Errorf("kubectl get sts:\n%s", out)
		}
		out = c.MustKubectl(t, "", "rollout", "status", "sts/kv", "--timeout=10s")
		if !strings.Contains(out, "partitioned roll out complete: 3 new pods have been updated") {
			t.Errorf("rollout status: %s", out)
		}
	})
	t.Run("scale to 1 removes kv-2 and kv-1", func(t *testing.T) {
		c.MustKubectl(t, "", "scale", "sts/kv", "--replicas=1")
		waitReady(t, 1)
		_, pods := countPods(ctx, cs, ns, "app=kv")
		if len(pods) != 1 || pods[0].Name != "kv-0" {
			t.Fatalf("pods %v", pods)
		}
		c.MustKubectl(t, "", "scale", "sts/kv", "--replicas=3")
		waitReady(t, 3)
	})
	var oldRev string
	t.Run("a partitioned update replaces only kv-2", func(t *testing.T) {
		before, _ := sts.Get(ctx, "kv", metav1.GetOptions{})
		oldRev = before.Status.CurrentRevision
		c.MustKubectl(t, "", "patch", "sts/kv", "-p", `{"spec":{"updateStrategy":{"rollingUpdate":{"partition":2}}}}`)
		c.MustKubectl(t, "", "set", "image", "sts/kv", "c=kv:2")
		eventually(t, 20*time.Second, "kv-2 on kv:2", func() (bool, string) {
			got, _ := sts.Get(ctx, "kv", metav1.GetOptions{})
			return got.Status.UpdatedReplicas == 1 && got.Status.ReadyReplicas == 3, fmt.Sprintf("%+v", got.Status)
		})
		for _, name := range []string{"kv-0", "kv-1", "kv-2"} {
			p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := "kv:1"
			if name == "kv-2" {
				want = "kv:2"
			}
			if p.Spec.Containers[0].Image != want {
				t.Errorf("%s runs %s, want %s", name, p.Spec.Containers[0].Image, want)
			}
		}
		got, _ := sts.Get(ctx, "kv", metav1.GetOptions{})
		if got.Status.CurrentRevision != oldRev || got.Status.UpdateRevision == oldRev {
			t.Errorf("revisions current %s update %s, want current %s kept", got.Status.CurrentRevision, got.Status.UpdateRevision, oldRev)
		}
		out := c.MustKubectl(t, "", "rollout", "history", "sts/kv")
		if !strings.Contains(out, "REVISION") || !strings.Contains(out, "\n1 ") || !strings.Contains(out, "\n2 ") {
			t.Errorf("rollout history:\n%s", out)
		}
	})
	t.Run("partition 0 finishes the rollout from the highest ordinal down", func(t *testing.T) {
		c.MustKubectl(t, "", "patch", "sts/kv", "-p", `{"spec":{"updateStrategy":{"rollingUpdate":{"partition":0}}}}`)
		eventually(t, 20*time.Second, "every pod updated and the update revision current", func() (bool, string) {
			got, _ := sts.Get(ctx, "kv", metav1.GetOptions{})
			return got.Status.UpdatedReplicas == 3 && got.Status.ReadyReplicas == 3 && got.Status.CurrentRevision == got.Status.UpdateRevision,
				fmt.Sprintf("%+v", got.Status)
		})
	})
	t.Run("rollout undo returns to the first template as revision 3", func(t *testing.T) {
		c.MustKubectl(t, "", "rollout", "undo", "sts/kv")
		eventually(t, 20*time.Second, "back on kv:1", func() (bool, string) {
			got, _ := sts.Get(ctx, "kv", metav1.GetOptions{})
			return got.Spec.Template.Spec.Containers[0].Image == "kv:1" && got.Status.UpdatedReplicas == 3 &&
				got.Status.CurrentRevision == oldRev, fmt.Sprintf("%s %+v", got.Spec.Template.Spec.Containers[0].Image, got.Status)
		})
		rev, err := cs.AppsV1().ControllerRevisions(ns).Get(ctx, oldRev, metav1.GetOptions{})
		if err != nil || rev.Revision != 3 {
			t.Fatalf("revision %s: %v %v", oldRev, rev, err)
		}
	})
	t.Run("claim templates make one claim per ordinal, kept on scale down, owned by the set with whenDeleted=Delete", func(t *testing.T) {
		set := makeStatefulSet("db", 2, "db:1")
		set.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
		set.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
			WhenDeleted: appsv1.DeletePersistentVolumeClaimRetentionPolicyType}
		set.Spec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		set.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}}
		if _, err := sts.Create(ctx, set, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		claims := cs.CoreV1().PersistentVolumeClaims(ns)
		eventually(t, 20*time.Second, "data-db-0 and data-db-1", func() (bool, string) {
			l, _ := claims.List(ctx, metav1.ListOptions{LabelSelector: "app=db"})
			return len(l.Items) == 2, fmt.Sprint(len(l.Items))
		})
		c0, err := claims.Get(ctx, "data-db-0", metav1.GetOptions{})
		if err != nil || len(c0.OwnerReferences) != 1 || c0.OwnerReferences[0].Kind != "StatefulSet" {
			t.Fatalf("data-db-0: %v %v", c0.OwnerReferences, err)
		}
		// The claims are created before their pods, in the same pass.
		var p *corev1.Pod
		eventually(t, 20*time.Second, "db-0", func() (bool, string) {
			p, err = cs.CoreV1().Pods(ns).Get(ctx, "db-0", metav1.GetOptions{})
			return err == nil, fmt.Sprint(err)
		})
		if p.Spec.Volumes[len(p.Spec.Volumes)-1].PersistentVolumeClaim.ClaimName != "data-db-0" {
			t.Fatalf("db-0's volumes: %+v", p)
		}
		c.MustKubectl(t, "", "scale", "sts/db", "--replicas=1")
		eventually(t, 20*time.Second, "db-1 gone", func() (bool, string) {
			_, err := cs.CoreV1().Pods(ns).Get(ctx, "db-1", metav1.GetOptions{})
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
		if _, err := claims.Get(ctx, "data-db-1", metav1.GetOptions{}); err != nil {
			t.Errorf("data-db-1 after scale down (whenScaled Retain): %v", err)
		}
	})
	t.Run("a failed pod is deleted and made again under its name", func(t *testing.T) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "kv-1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		oldUID := p.UID
		p.Status.Phase = corev1.PodFailed
		if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 20*time.Second, "a new kv-1", func() (bool, string) {
			p, err := cs.CoreV1().Pods(ns).Get(ctx, "kv-1", metav1.GetOptions{})
			return err == nil && p.UID != oldUID && p.Status.Phase == corev1.PodRunning, fmt.Sprint(err)
		})
		evs, _ := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=kv,reason=SuccessfulCreate"})
		found := false
		for _, e := range evs.Items {
			found = found || e.Message == "create Pod kv-1 in StatefulSet kv successful"
		}
		if !found {
			t.Errorf("no SuccessfulCreate event for kv-1 among %d", len(evs.Items))
		}
	})
}

// TestDaemonSetRolloutHistoryAndUndo checks that the DaemonSet controller
// keeps ControllerRevisions: kubectl rollout history lists both
// templates and rollout undo brings the first back.
func TestDaemonSetRolloutHistoryAndUndo(t *testing.T) {
	c, cs, ctx := startWithController(t, controller.Config{Controllers: []string{"daemonset"}})
	ns := "default"
	fakeKubelet(t, cs, ns)
	fakeNode(t, ctx, cs, "n1")
	if _, err := cs.AppsV1().DaemonSets(ns).Create(ctx, makeDaemonSet("agent", "agent:1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	image := func() string {
		pods := daemonPodsByNode(ctx, cs, ns, "agent")["n1"]
		if len(pods) != 1 {
			return fmt.Sprint(len(pods), " pods")
		}
		return pods[0].Spec.Containers[0].Image
	}
	eventually(t, 20*time.Second, "agent:1 on n1", func() (bool, string) { return image() == "agent:1", image() })
	c.MustKubectl(t, "", "set", "image", "ds/agent", "c=agent:2")
	eventually(t, 20*time.Second, "agent:2 on n1", func() (bool, string) { return image() == "agent:2", image() })
	out := c.MustKubectl(t, "", "rollout", "history", "ds/agent")
	if !strings.Contains(out, "\n1 ") || !strings.Contains(out, "\n2 ") {
		t.Fatalf("rollout history:\n%s", out)
	}
	revs, _ := cs.AppsV1().ControllerRevisions(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=agent"})
	pods := daemonPodsByNode(ctx, cs, ns, "agent")["n1"]
	found := false
	for _, r := range revs.Items {
		found = found || r.Revision == 2 && r.Labels[appsv1.ControllerRevisionHashLabelKey] == pods[0].Labels[appsv1.ControllerRevisionHashLabelKey] &&
			r.Name == "agent-"+pods[0].Labels[appsv1.ControllerRevisionHashLabelKey]
	}
	if !found {
		t.Errorf("no revision 2 named agent-HASH for the pod's hash among %d revisions", len(revs.Items))
	}
	c.MustKubectl(t, "", "rollout", "undo", "ds/agent")
	eventually(t, 20*time.Second, "agent:1 back on n1", func() (bool, string) { return image() == "agent:1", image() })
}
