package volume

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/internal/volumeutil"
)

func TestProvisionLocalPath(t *testing.T) {
	lp := class("local-path", volumeutil.LocalPathProvisioner, storagev1.VolumeBindingWaitForFirstConsumer)
	t.Run("the volume is a directory in the node's local-path dir, pinned to it, as large as the request, pre-bound", func(t *testing.T) {
		pv, err := ProvisionLocalPath(claim("data", "2Gi").class("local-path").obj(), lp, node("n1"), "n1")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := pv.Spec.Local.Path, "/var/lib/minik/n1/local-path/pvc-uid-data"; got != want {
			t.Errorf("path %q, want %q", got, want)
		}
		if q := pv.Spec.Capacity[corev1.ResourceStorage]; q.String() != "2Gi" {
			t.Errorf("capacity %s, want 2Gi", q.String())
		}
		if pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete || pv.Spec.StorageClassName != "local-path" {
			t.Errorf("reclaim %s class %s, want Delete local-path", pv.Spec.PersistentVolumeReclaimPolicy, pv.Spec.StorageClassName)
		}
		if !volumeutil.NodeAffinityMatches(pv, node("n1")) || volumeutil.NodeAffinityMatches(pv, node("n2")) {
			t.Error("the volume must be reachable from n1 only")
		}
		if r := pv.Spec.ClaimRef; r == nil || r.Name != "data" || r.UID != "uid-data" {
			t.Errorf("claimRef %+v, want default/data uid-data", r)
		}
		if volumeutil.LocalPathNode(pv) != "n1" {
			t.Errorf("LocalPathNode %q, want n1", volumeutil.LocalPathNode(pv))
		}
	})
	failures := []struct {
		name  string
		claim *corev1.PersistentVolumeClaim
		node  *corev1.Node
		sel   string
		want  string
	}{
		{"no selected node", claim("data", "1Gi").obj(), nil, "", "no node was specified"},
		{"the selected node is gone", claim("data", "1Gi").obj(), nil, "n9", `node "n9" not found`},
		{"the node publishes no directory", claim("data", "1Gi").obj(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, "n1", "does not publish its local-path directory"},
		{"a ReadWriteMany claim", claim("data", "1Gi").modes(corev1.ReadWriteMany).obj(), node("n1"), "n1", "only the ReadWriteOnce and ReadWriteOncePod access modes"},
	}
	for _, tt := range failures {
		t.Run("refused: "+tt.name, func(t *testing.T) {
			_, err := ProvisionLocalPath(tt.claim, lp, tt.node, tt.sel)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestProtectionPlan(t *testing.T) {
	deleting := func(c *corev1.PersistentVolumeClaim) *corev1.PersistentVolumeClaim {
		c.DeletionTimestamp = &metav1.Time{Time: t0}
		c.Finalizers = []string{volumeutil.PVCProtectionFinalizer}
		return c
	}
	pod := func(node string, phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
			Spec: corev1.PodSpec{NodeName: node, Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}},
			Status: corev1.PodStatus{Phase: phase}}
	}
	deletingVol := func(p corev1.PersistentVolumePhase) *corev1.PersistentVolume {
		v := vol("pv1", "1Gi").phase(p).obj()
		v.DeletionTimestamp = &metav1.Time{Time: t0}
		v.Finalizers = []string{volumeutil.PVProtectionFinalizer}
		return v
	}
	tests := []struct {
		name    string
		claims  []*corev1.PersistentVolumeClaim
		volumes []*corev1.PersistentVolume
		pods    []*corev1.Pod
		want    string
	}{
		{"a deleted claim a running pod uses keeps its finalizer", []*corev1.PersistentVolumeClaim{deleting(claim("data", "1Gi").obj())}, nil,
			[]*corev1.Pod{pod("n1", corev1.PodRunning)}, ""},
		{"a deleted claim whose pod has ended loses its finalizer", []*corev1.PersistentVolumeClaim{deleting(claim("data", "1Gi").obj())}, nil,
			[]*corev1.Pod{pod("n1", corev1.PodSucceeded)}, `UpdateClaim default/data volume="" phase=Pending`},
		{"an unscheduled pod does not hold a deleted claim", []*corev1.PersistentVolumeClaim{deleting(claim("data", "1Gi").obj())}, nil,
			[]*corev1.Pod{pod("", corev1.PodPending)}, `UpdateClaim default/data volume="" phase=Pending`},
		{"a claim not being deleted is left alone", []*corev1.PersistentVolumeClaim{claim("data", "1Gi").obj()}, nil, nil, ""},
		{"a deleted Bound volume keeps its finalizer", nil, []*corev1.PersistentVolume{deletingVol(corev1.VolumeBound)}, nil, ""},
		{"a deleted Released volume loses its finalizer", nil, []*corev1.PersistentVolume{deletingVol(corev1.VolumeReleased)}, nil, `UpdateVolume pv1 claim="" phase=Released`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			acts := ProtectionPlan(tt.claims, tt.volumes, tt.pods)
			if got := summary(acts); got != tt.want {
				t.Errorf("actions:\n%s\nwant:\n%s", got, tt.want)
			}
			for _, a := range acts {
				if (a.Claim != nil && len(a.Claim.Finalizers) != 0) || (a.Volume != nil && len(a.Volume.Finalizers) != 0) {
					t.Errorf("%s still has finalizers", a)
				}
			}
		})
	}
}
