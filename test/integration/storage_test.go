package integration

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"minik/controller"
)

func makeClaim(name, size string, class *string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: class,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}}}}
}

func claimEvents(ctx context.Context, cs kubernetes.Interface, ns, name string) string {
	l, _ := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=PersistentVolumeClaim,involvedObject.name=" + name})
	var out []string
	if l != nil {
		for _, e := range l.Items {
			out = append(out, e.Reason+": "+e.Message)
		}
	}
	return strings.Join(out, "; ")
}

// TestLocalPathVolumeLifecycle follows a claim of the default local-path
// class through the whole control plane, with hollow kubelets doing the
// node's part: it waits for its pod, is provisioned on the pod's node,
// bound, protected while the pod uses it, then released and deleted (the
// node's kubelet removes the directory and the volume).
func TestLocalPathVolumeLifecycle(t *testing.T) {
	c, cs, ctx, _ := startWithHollowNodes(t, controller.Config{}, "n1", "n2")
	ns := "default"

	t.Run("the local-path class is there and is the default", func(t *testing.T) {
		out := c.MustKubectl(t, "", "get", "sc")
		if !strings.Contains(out, "local-path (default)") || !strings.Contains(out, "WaitForFirstConsumer") {
			t.Fatalf("kubectl get sc:\n%s", out)
		}
	})
	t.Run("an invalid claim is refused with its causes", func(t *testing.T) {
		bad := makeClaim("bad", "1Gi", nil)
		bad.Spec.AccessModes = nil
		bad.Spec.Resources.Requests = nil
		_, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, bad, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.accessModes: Required value: at least 1 access mode is required") ||
			!strings.Contains(err.Error(), "spec.resources[storage]: Required value") {
			t.Fatalf("got %v", err)
		}
	})

	claim, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, makeClaim("data", "64Mi", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if claim.Spec.StorageClassName == nil || *claim.Spec.StorageClassName != "local-path" ||
		!slices.Contains(claim.Finalizers, "kubernetes.io/pvc-protection") || claim.Status.Phase != corev1.ClaimPending {
		t.Fatalf("admission: class %v, finalizers %v, phase %s", claim.Spec.StorageClassName, claim.Finalizers, claim.Status.Phase)
	}
	eventually(t, 10*time.Second, "the WaitForFirstConsumer event", func() (bool, string) {
		ev := claimEvents(ctx, cs, ns, "data")
		return strings.Contains(ev, "WaitForFirstConsumer: waiting for first consumer to be created before binding"), ev
	})

	pod := makePod("user", nil)
	pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var pv *corev1.PersistentVolume
	eventually(t, 20*time.Second, "the claim bound to a provisioned volume on the pod's node, and the pod running", func() (bool, string) {
		p, _ := cs.CoreV1().Pods(ns).Get(ctx, "user", metav1.GetOptions{})
		cl, _ := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data", metav1.GetOptions{})
		if cl == nil || p == nil || cl.Status.Phase != corev1.ClaimBound || p.Status.Phase != corev1.PodRunning {
			return false, fmt.Sprintf("claim %+v annotations %v; pod %s on %q; events %s", cl.Status, cl.Annotations, p.Status.Phase, p.Spec.NodeName, claimEvents(ctx, cs, ns, "data"))
		}
		pv, _ = cs.CoreV1().PersistentVolumes().Get(ctx, cl.Spec.VolumeName, metav1.GetOptions{})
		return pv != nil && cl.Annotations["volume.kubernetes.io/selected-node"] == p.Spec.NodeName &&
			pv.Annotations["volume.kubernetes.io/selected-node"] == p.Spec.NodeName, fmt.Sprintf("pv %+v", pv)
	})
	if pv.Status.Phase != corev1.VolumeBound || pv.Spec.Local == nil || pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete ||
		!slices.Contains(pv.Finalizers, "kubernetes.io/pv-protection") {
		t.Fatalf("volume %+v", pv)
	}
	if q := pv.Spec.Capacity[corev1.ResourceStorage]; q.String() != "64Mi" {
		t.Errorf("capacity %s, want the request 64Mi", q.String())
	}
	if st, err := os.Stat(pv.Spec.Local.Path); err != nil || !st.IsDir() {
		t.Fatalf("the node's kubelet made no directory at %s: %v", pv.Spec.Local.Path, err)
	}
	out := c.MustKubectl(t, "", "get", "pvc", "data")
	if !strings.Contains(out, "Bound") || !strings.Contains(out, pv.Name) || !strings.Contains(out, "64Mi") || !strings.Contains(out, "RWO") {
		t.Errorf("kubectl get pvc:\n%s", out)
	}

	t.Run("a claim in use stays Terminating until its pod is gone", func(t *testing.T) {
		if err := cs.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, "data", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		if out := c.MustKubectl(t, "", "get", "pvc", "data"); !strings.Contains(out, "Terminating") {
			t.Fatalf("kubectl get pvc:\n%s", out)
		}
		zero := int64(0)
		if err := cs.CoreV1().Pods(ns).Delete(ctx, "user", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 20*time.Second, "the claim gone", func() (bool, string) {
			cl, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data", metav1.GetOptions{})
			return apierrors.IsNotFound(err), fmt.Sprintf("%v %v", cl.Finalizers, err)
		})
	})
	t.Run("the released volume is deleted by its node: directory, then object", func(t *testing.T) {
		eventually(t, 20*time.Second, "the volume gone", func() (bool, string) {
			v, err := cs.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), fmt.Sprintf("%+v %v", v.Status, err)
		})
		if _, err := os.Stat(pv.Spec.Local.Path); !os.IsNotExist(err) {
			t.Errorf("the directory %s is still there: %v", pv.Spec.Local.Path, err)
		}
	})
}

// TestStaticVolumeBinding binds claims without a class to volumes made by
// hand: the smallest that fits, both sides, phases; a Retain volume is
// kept Released when its claim goes; a claim that fits nothing says why.
func TestStaticVolumeBinding(t *testing.T) {
	_, cs, ctx := startWithController(t, controller.Config{Controllers: []string{"persistentvolume-binder"}})
	ns := "default"
	none := ""
	for name, size := range map[string]string{"small": "1Gi", "big": "5Gi", "huge": "50Gi"} {
		pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PersistentVolumeSpec{Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
				AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/srv/" + name}}}}
		created, err := cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if created.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain || created.Status.Phase != corev1.VolumePending {
			t.Fatalf("defaults: %s %s", created.Spec.PersistentVolumeReclaimPolicy, created.Status.Phase)
		}
	}
	eventually(t, 10*time.Second, "every volume Available", func() (bool, string) {
		l, _ := cs.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
		for _, v := range l.Items {
			if v.Status.Phase != corev1.VolumeAvailable {
				return false, v.Name + " " + string(v.Status.Phase)
			}
		}
		return len(l.Items) == 3, ""
	})
	if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, makeClaim("db", "2Gi", &none), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "db bound to big, both sides", func() (bool, string) {
		cl, _ := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "db", metav1.GetOptions{})
		v, _ := cs.CoreV1().PersistentVolumes().Get(ctx, "big", metav1.GetOptions{})
		q := cl.Status.Capacity[corev1.ResourceStorage]
		return cl.Spec.VolumeName == "big" && cl.Status.Phase == corev1.ClaimBound && q.String() == "5Gi" &&
				cl.Annotations["pv.kubernetes.io/bind-completed"] == "yes" &&
				v.Status.Phase == corev1.VolumeBound && v.Spec.ClaimRef != nil && v.Spec.ClaimRef.UID == cl.UID &&
				v.Annotations["pv.kubernetes.io/bound-by-controller"] == "yes",
			fmt.Sprintf("claim %+v %v; volume %+v", cl.Status, cl.Annotations, v.Status)
	})
	t.Run("a bound claim's access modes are immutable", func(t *testing.T) {
		cl, _ := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "db", metav1.GetOptions{})
		cl.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
		_, err := cs.CoreV1().PersistentVolumeClaims(ns).Update(ctx, cl, metav1.UpdateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec is immutable after creation except resources.requests") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("a claim nothing fits waits with an event", func(t *testing.T) {
		if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, makeClaim("giant", "1Ti", &none), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, "the FailedBinding event", func() (bool, string) {
			ev := claimEvents(ctx, cs, ns, "giant")
			return strings.Contains(ev, "FailedBinding: no persistent volumes available for this claim and no storage class is set"), ev
		})
		cl, _ := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "giant", metav1.GetOptions{})
		if cl.Status.Phase != corev1.ClaimPending {
			t.Errorf("phase %s, want Pending", cl.Status.Phase)
		}
	})
	t.Run("deleting the claim releases the Retain volume", func(t *testing.T) {
		if err := cs.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, "db", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, "big Released", func() (bool, string) {
			v, _ := cs.CoreV1().PersistentVolumes().Get(ctx, "big", metav1.GetOptions{})
			return v.Status.Phase == corev1.VolumeReleased, string(v.Status.Phase)
		})
	})
}
