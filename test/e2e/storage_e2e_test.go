package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// localPathVolume: a pod writes to a claim of the default local-path
// class; after the pod is deleted, a new pod on the same claim lands on
// the same node and reads the data (also through a subPath); deleting
// the claim while that pod uses it leaves it Terminating until the pod is
// gone, then the node's kubelet deletes the released volume.
func (e *ctlEnv) localPathVolume(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	claims := e.cs.CoreV1().PersistentVolumeClaims("default")
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "e2e-data"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("16Mi")}}}}
	if _, err := claims.Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = claims.Delete(ctx, "e2e-data", metav1.DeleteOptions{}) })
	withClaim := func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "e2e-data"}}}}
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"},
			{Name: "data", MountPath: "/sub", SubPath: "sub"}}
	}

	e.create(t, makePod("pv-writer", "").Sh("echo hello > /data/file && echo through-subpath > /sub/f && sleep 3600").With(withClaim).Obj())
	writer := e.waitPod(t, "pv-writer", 60*time.Second, "Running", running)
	cl, err := claims.Get(ctx, "e2e-data", metav1.GetOptions{})
	if err != nil || cl.Status.Phase != corev1.ClaimBound || cl.Annotations["volume.kubernetes.io/selected-node"] != writer.Spec.NodeName {
		t.Fatalf("claim %+v %v: want Bound on the writer's node %s (%v)", cl.Status, cl.Annotations, writer.Spec.NodeName, err)
	}
	volume := cl.Spec.VolumeName
	zero := int64(0)
	if err := e.cs.CoreV1().Pods("default").Delete(ctx, "pv-writer", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the writer gone", func() (bool, string) {
		_, err := e.cs.CoreV1().Pods("default").Get(ctx, "pv-writer", metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})

	e.create(t, makePod("pv-reader", "").Sh("cat /data/file /data/sub/f; sleep 3600").With(withClaim).Obj())
	reader := e.waitPod(t, "pv-reader", 60*time.Second, "Running", running)
	if reader.Spec.NodeName != writer.Spec.NodeName {
		t.Errorf("the reader runs on %s, the volume lives on %s", reader.Spec.NodeName, writer.Spec.NodeName)
	}
	waitFor(t, 10*time.Second, "the reader's output", func() (bool, string) {
		out, _ := e.c.Kubectl(ctx, "", "logs", "pv-reader")
		return out == "hello\nthrough-subpath\n", out
	})

	if err := claims.Delete(ctx, "e2e-data", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // time enough for a wrong protection controller
	if out := e.c.MustKubectl(t, "", "get", "pvc", "e2e-data"); !strings.Contains(out, "Terminating") {
		t.Fatalf("a claim in use must stay Terminating:\n%s", out)
	}
	if err := e.cs.CoreV1().Pods("default").Delete(ctx, "pv-reader", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the claim, then the released volume, gone", func() (bool, string) {
		_, cerr := claims.Get(ctx, "e2e-data", metav1.GetOptions{})
		v, verr := e.cs.CoreV1().PersistentVolumes().Get(ctx, volume, metav1.GetOptions{})
		return apierrors.IsNotFound(cerr) && apierrors.IsNotFound(verr), fmt.Sprintf("claim: %v; volume: %+v %v", cerr, v.Status, verr)
	})
}
