package apiserver

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/internal/volumeutil"
)

// TestNodeReadsExactlyTheVolumesOfItsPods: a kubelet gets the claims its
// pods use and the volumes bound to them, and gets and deletes the
// local-path volumes of its node; nothing else, and never a list.
func TestNodeReadsExactlyTheVolumesOfItsPods(t *testing.T) {
	ts := startTestServer(t)
	ctx := t.Context()
	admin := ts.client(t)
	ka := ts.clientAs(t, "system:node:ka", "system:nodes")

	volume := func(name, claim string, ann map[string]string) *corev1.PersistentVolume {
		v := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: ann},
			Spec: corev1.PersistentVolumeSpec{Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
				AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/srv/" + name}}}}
		if claim != "" {
			v.Spec.ClaimRef = &corev1.ObjectReference{Namespace: "default", Name: claim}
		}
		return v
	}
	local := map[string]string{volumeutil.AnnProvisionedBy: volumeutil.LocalPathProvisioner, volumeutil.AnnSelectedNode: "ka"}
	otherLocal := map[string]string{volumeutil.AnnProvisionedBy: volumeutil.LocalPathProvisioner, volumeutil.AnnSelectedNode: "kb"}
	for _, v := range []*corev1.PersistentVolume{volume("used", "mine", nil), volume("unused", "theirs", nil),
		volume("local-ka", "", local), volume("local-kb", "", otherLocal)} {
		mustCreate(t, func() error { _, err := admin.PersistentVolumes().Create(ctx, v, metav1.CreateOptions{}); return err })
	}
	for _, name := range []string{"mine", "theirs"} {
		c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
		mustCreate(t, func() error {
			_, err := admin.PersistentVolumeClaims().Create(ctx, c, metav1.CreateOptions{})
			return err
		})
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"}, Spec: corev1.PodSpec{NodeName: "ka",
		Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
		Volumes: []corev1.Volume{{Name: "d", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "mine"}}}}}}
	mustCreate(t, func() error { _, err := admin.Pods().Create(ctx, pod, metav1.CreateOptions{}); return err })

	allowed := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v, want allowed", what, err)
		}
	}
	forbidden := func(what string, err error) {
		t.Helper()
		if !apierrors.IsForbidden(err) {
			t.Errorf("%s: %v, want Forbidden", what, err)
		}
	}
	_, err := ka.PersistentVolumeClaims().Get(ctx, "default", "mine", metav1.GetOptions{})
	allowed("get the claim its pod uses", err)
	_, err = ka.PersistentVolumeClaims().Get(ctx, "default", "theirs", metav1.GetOptions{})
	forbidden("get another claim", err)
	_, err = ka.PersistentVolumes().Get(ctx, "", "used", metav1.GetOptions{})
	allowed("get the volume of its pod's claim", err)
	_, err = ka.PersistentVolumes().Get(ctx, "", "unused", metav1.GetOptions{})
	forbidden("get another claim's volume", err)
	_, err = ka.PersistentVolumes().Get(ctx, "", "local-kb", metav1.GetOptions{})
	forbidden("get another node's local-path volume", err)
	_, err = ka.PersistentVolumes().List(ctx, "", metav1.ListOptions{})
	forbidden("list volumes", err)
	forbidden("delete another claim's volume", ka.PersistentVolumes().Delete(ctx, "", "used", metav1.DeleteOptions{}))
	_, err = ka.PersistentVolumes().Get(ctx, "", "local-ka", metav1.GetOptions{})
	allowed("get its own local-path volume", err)
	allowed("delete its own local-path volume", ka.PersistentVolumes().Delete(ctx, "", "local-ka", metav1.DeleteOptions{}))

	// Once the pod is gone, so is the right to its volume.
	if err := admin.Pods().Delete(ctx, "default", "db", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := ka.PersistentVolumes().Get(ctx, "", "used", metav1.GetOptions{})
		if apierrors.IsForbidden(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the volume of a deleted pod's claim: err %v, want Forbidden", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
