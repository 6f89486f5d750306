package apiserver

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik/client"
	"minik/internal/quota"
)

// startWithQuota starts a server with the namespace q and a quota name
// in it of hard, whose first status (the controller's part) says used.
func startWithQuota(t *testing.T, name string, hard, used corev1.ResourceList) (context.Context, *client.Client, *client.Typed[corev1.ResourceQuota]) {
	t.Helper()
	ts := startTestServer(t)
	c := ts.client(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	if _, err := c.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "q"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	quotas := client.For[corev1.ResourceQuota](c, client.Resource{Version: "v1", Resource: "resourcequotas", Namespaced: true})
	q, err := quotas.Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "q"},
		Spec: corev1.ResourceQuotaSpec{Hard: hard}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q.Status = corev1.ResourceQuotaStatus{Hard: hard, Used: used}
	if _, err := quotas.UpdateStatus(ctx, q, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return ctx, c, quotas
}

// TestResourceQuotaUnderConcurrentCreates races many creates for the
// last slots of a quota: exactly the quota's worth commit, the rest get
// upstream's 403, and status.used matches what was stored.
func TestResourceQuotaUnderConcurrentCreates(t *testing.T) {
	hard := rl("pods", "5", "configmaps", "3")
	ctx, c, quotas := startWithQuota(t, "quota", hard, rl("pods", "0", "configmaps", "0"))

	var wg sync.WaitGroup
	var mu sync.Mutex
	created, refused := 0, 0
	for i := range 20 {
		wg.Go(func() {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Namespace: "q"},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox"}}}}
			_, err := c.Pods().Create(ctx, pod, metav1.CreateOptions{})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				created++
			case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "exceeded quota: quota, requested: pods=1, used: pods=5, limited: pods=5"):
				refused++
			default:
				t.Errorf("create p%d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if created != 5 || refused != 15 {
		t.Fatalf("created %d and refused %d, want 5 and 15", created, refused)
	}
	got, err := quotas.Get(ctx, "q", "quota", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if used := got.Status.Used[corev1.ResourcePods]; used.Value() != 5 {
		t.Fatalf("used pods = %s, want 5", used.String())
	}

	t.Run("a create that fails charges nothing", func(t *testing.T) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "q"}}
		if _, err := c.ConfigMaps().Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.ConfigMaps().Create(ctx, cm, metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
			t.Fatalf("second create = %v, want AlreadyExists", err)
		}
		got, err := quotas.Get(ctx, "q", "quota", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if used := got.Status.Used[corev1.ResourceConfigMaps]; used.Value() != 1 {
			t.Fatalf("used configmaps = %s, want 1", used.String())
		}
	})
	t.Run("a dry run is checked but not charged", func(t *testing.T) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dry", Namespace: "q"}}
		if _, err := c.ConfigMaps().Create(ctx, cm, metav1.CreateOptions{DryRun: []string{"All"}}); err != nil {
			t.Fatal(err)
		}
		got, _ := quotas.Get(ctx, "q", "quota", metav1.GetOptions{})
		if used := got.Status.Used[corev1.ResourceConfigMaps]; used.Value() != 1 {
			t.Fatalf("used configmaps = %s, want 1", used.String())
		}
	})
}

// TestResourceQuotaOnClaims charges claims to a quota on their count,
// their storage and their class's storage, and refuses the claim that
// would pass it with upstream's message.
func TestResourceQuotaOnClaims(t *testing.T) {
	hard := rl("persistentvolumeclaims", "2", "requests.storage", "3Gi", "gold.storageclass.storage.k8s.io/requests.storage", "1Gi")
	ctx, c, quotas := startWithQuota(t, "claims", hard,
		rl("persistentvolumeclaims", "0", "requests.storage", "0", "gold.storageclass.storage.k8s.io/requests.storage", "0"))
	claim := func(name, class, size string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "q"},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: &class,
				Resources: corev1.VolumeResourceRequirements{Requests: rl("storage", size)}}}
	}
	if _, err := c.PersistentVolumeClaims().Create(ctx, claim("a", "gold", "1Gi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := c.PersistentVolumeClaims().Create(ctx, claim("b", "gold", "1Gi"), metav1.CreateOptions{})
	want := `persistentvolumeclaims "b" is forbidden: exceeded quota: claims, requested: gold.storageclass.storage.k8s.io/requests.storage=1Gi, ` +
		`used: gold.storageclass.storage.k8s.io/requests.storage=1Gi, limited: gold.storageclass.storage.k8s.io/requests.storage=1Gi`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Fatalf("second gold claim: %v, want 403 %q", err, want)
	}
	if _, err := c.PersistentVolumeClaims().Create(ctx, claim("c", "silver", "2Gi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := quotas.Get(ctx, "q", "claims", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if used := quota.String(got.Status.Used); used != "gold.storageclass.storage.k8s.io/requests.storage=1Gi,persistentvolumeclaims=2,requests.storage=3Gi" {
		t.Fatalf("used %s", used)
	}
}

// TestQuotaAndResizeOnUpdates: an update is charged what it adds, as
// upstream's evaluators charge a Service and a claim on update (a
// Service turned NodePort, a claim grown), and a claim may grow only
// when its class allows expansion (PersistentVolumeClaimResize).
func TestQuotaAndResizeOnUpdates(t *testing.T) {
	hard := rl("services.nodeports", "1", "requests.storage", "3Gi")
	ctx, c, quotas := startWithQuota(t, "updates", hard, rl("services.nodeports", "0", "requests.storage", "0"))
	used := func() string {
		t.Helper()
		got, err := quotas.Get(ctx, "q", "updates", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return quota.String(got.Status.Used)
	}
	services := client.For[corev1.Service](c, client.Services)

	t.Run("a Service turned NodePort past the quota is refused and stays as it was", func(t *testing.T) {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "q"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}, {Name: "https", Port: 443}}}}
		if _, err := services.Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err := services.Patch(ctx, "q", "web", types.MergePatchType, []byte(`{"spec":{"type":"NodePort"}}`), metav1.PatchOptions{})
		want := `services "web" is forbidden: exceeded quota: updates, requested: services.nodeports=2, used: services.nodeports=0, limited: services.nodeports=1`
		if !apierrors.IsForbidden(err) || err.Error() != want {
			t.Fatalf("patch to NodePort: %v, want 403 %q", err, want)
		}
		got, err := services.Get(ctx, "q", "web", metav1.GetOptions{})
		if err != nil || got.Spec.Type != corev1.ServiceTypeClusterIP {
			t.Fatalf("service after the refused patch: %v, %v", got, err)
		}
	})

	classes := c.StorageClasses()
	for name, grows := range map[string]bool{"fixed": false, "growable": true} {
		sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: "example.com/disk", AllowVolumeExpansion: &grows}
		if _, err := classes.Create(ctx, sc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	claims := c.PersistentVolumeClaims()
	boundClaim := func(name, class string) {
		t.Helper()
		cl := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "q"},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: &class,
				Resources: corev1.VolumeResourceRequirements{Requests: rl("storage", "1Gi")}}}
		cl, err := claims.Create(ctx, cl, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cl.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Capacity: rl("storage", "1Gi")}
		if _, err := claims.UpdateStatus(ctx, cl, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	grow := func(name, size string) error {
		_, err := claims.Patch(ctx, "q", name, types.MergePatchType,
			[]byte(`{"spec":{"resources":{"requests":{"storage":"`+size+`"}}}}`), metav1.PatchOptions{})
		return err
	}
	boundClaim("fixed", "fixed")
	boundClaim("growable", "growable")

	t.Run("a claim of a class without allowVolumeExpansion may not grow", func(t *testing.T) {
		err := grow("fixed", "2Gi")
		want := `persistentvolumeclaims "fixed" is forbidden: only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize`
		if !apierrors.IsForbidden(err) || err.Error() != want {
			t.Fatalf("grow: %v, want 403 %q", err, want)
		}
	})
	t.Run("a claim of a class that allows it grows, and is charged the growth", func(t *testing.T) {
		if err := grow("growable", "2Gi"); err != nil {
			t.Fatal(err)
		}
		if u := used(); u != "requests.storage=3Gi,services.nodeports=0" {
			t.Fatalf("used %s, want requests.storage=3Gi", u)
		}
	})
	t.Run("a claim grown past the quota is refused", func(t *testing.T) {
		err := grow("growable", "3Gi")
		want := `persistentvolumeclaims "growable" is forbidden: exceeded quota: updates, requested: requests.storage=1Gi, used: requests.storage=3Gi, limited: requests.storage=3Gi`
		if !apierrors.IsForbidden(err) || err.Error() != want {
			t.Fatalf("grow: %v, want 403 %q", err, want)
		}
		if u := used(); u != "requests.storage=3Gi,services.nodeports=0" {
			t.Fatalf("used %s after the refused growth", u)
		}
	})
}
