package volume

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik/internal/volumeutil"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type claimB struct{ c *corev1.PersistentVolumeClaim }

func claim(name, size string) *claimB {
	return &claimB{&corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(t0)},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: new(string),
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}}},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}}}
}
func (b *claimB) class(c string) *claimB  { b.c.Spec.StorageClassName = &c; return b }
func (b *claimB) noClass() *claimB        { b.c.Spec.StorageClassName = nil; return b }
func (b *claimB) volume(v string) *claimB { b.c.Spec.VolumeName = v; return b }
func (b *claimB) ann(k, v string) *claimB {
	metav1.SetMetaDataAnnotation(&b.c.ObjectMeta, k, v)
	return b
}
func (b *claimB) modes(m ...corev1.PersistentVolumeAccessMode) *claimB {
	b.c.Spec.AccessModes = m
	return b
}
func (b *claimB) selector(k, v string) *claimB {
	b.c.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{k: v}}
	return b
}
func (b *claimB) bound() *claimB {
	b.c.Status.Phase = corev1.ClaimBound
	b.c.Annotations = map[string]string{volumeutil.AnnBindCompleted: "yes"}
	b.c.Status.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	b.c.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
	return b
}
func (b *claimB) obj() *corev1.PersistentVolumeClaim { return b.c }

type volB struct{ v *corev1.PersistentVolume }

func vol(name, size string) *volB {
	return &volB{&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Spec: corev1.PersistentVolumeSpec{Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data/" + name}}},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeAvailable}}}
}
func (b *volB) class(c string) *volB                       { b.v.Spec.StorageClassName = c; return b }
func (b *volB) phase(p corev1.PersistentVolumePhase) *volB { b.v.Status.Phase = p; return b }
func (b *volB) label(k, v string) *volB                    { b.v.Labels = map[string]string{k: v}; return b }
func (b *volB) reclaim(p corev1.PersistentVolumeReclaimPolicy) *volB {
	b.v.Spec.PersistentVolumeReclaimPolicy = p
	return b
}
func (b *volB) ann(k, v string) *volB { metav1.SetMetaDataAnnotation(&b.v.ObjectMeta, k, v); return b }
func (b *volB) claimRef(name, uid string) *volB {
	b.v.Spec.ClaimRef = &corev1.ObjectReference{Namespace: "default", Name: name, UID: types.UID(uid)}
	return b
}
func (b *volB) onNode(n string) *volB {
	b.v.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{n}}}}}}}
	return b
}
func (b *volB) obj() *corev1.PersistentVolume { return b.v }

func class(name, provisioner string, mode storagev1.VolumeBindingMode) *storagev1.StorageClass {
	del := corev1.PersistentVolumeReclaimDelete
	return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: provisioner, ReclaimPolicy: &del, VolumeBindingMode: &mode}
}

func node(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name},
		Annotations: map[string]string{volumeutil.AnnLocalPathDir: "/var/lib/minik/" + name + "/local-path"}}}
}

// summary renders actions one a line, for readable expectations.
func summary(acts []Action) string {
	var lines []string
	for _, a := range acts {
		lines = append(lines, a.String())
	}
	return strings.Join(lines, "\n")
}

func TestPlan(t *testing.T) {
	localPath := class("local-path", volumeutil.LocalPathProvisioner, storagev1.VolumeBindingWaitForFirstConsumer)
	tests := []struct {
		name    string
		claims  []*corev1.PersistentVolumeClaim
		volumes []*corev1.PersistentVolume
		classes []*storagev1.StorageClass
		want    []string // action lines, in order
	}{
		{
			name:    "a claim binds the smallest volume that fits, both sides, then the claim's status",
			claims:  []*corev1.PersistentVolumeClaim{claim("data", "1Gi").obj()},
			volumes: []*corev1.PersistentVolume{vol("big", "10Gi").obj(), vol("small", "500Mi").obj(), vol("fit", "2Gi").obj()},
			want: []string{
				`UpdateVolume fit claim="default/data" phase=Available`,
				`UpdateVolumeStatus fit claim="default/data" phase=Bound`,
				`UpdateClaim default/data volume="fit" phase=Pending`,
				`UpdateClaimStatus default/data volume="fit" phase=Bound`,
			},
		},
		{
			name:    "access modes, class and selector must all match",
			claims:  []*corev1.PersistentVolumeClaim{claim("data", "1Gi").modes(corev1.ReadWriteMany).selector("tier", "db").obj()},
			volumes: []*corev1.PersistentVolume{vol("rwo", "1Gi").label("tier", "db").obj(), vol("other-class", "1Gi").class("fast").label("tier", "db").obj()},
			want:    []string{`Event Normal default/data FailedBinding: no persistent volumes available for this claim and no storage class is set`},
		},
		{
			name:   "a claim of a WaitForFirstConsumer class waits for the scheduler's node",
			claims: []*corev1.PersistentVolumeClaim{claim("data", "1Gi").class("local-path").obj()}, classes: []*storagev1.StorageClass{localPath},
			want: []string{`Event Normal default/data WaitForFirstConsumer: waiting for first consumer to be created before binding`},
		},
		{
			name:   "with the selected node, local-path hands the claim to its provisioner and makes the volume",
			claims: []*corev1.PersistentVolumeClaim{claim("data", "2Gi").class("local-path").ann(volumeutil.AnnSelectedNode, "n1").obj()}, classes: []*storagev1.StorageClass{localPath},
			want: []string{
				`UpdateClaim default/data volume="" phase=Pending`,
				`CreateVolume pvc-uid-data claim="default/data" phase=`,
				`Event Normal default/data ProvisioningSucceeded: Successfully provisioned volume pvc-uid-data`,
			},
		},
		{
			name:    "with the selected node, a free volume on that node is bound before provisioning",
			claims:  []*corev1.PersistentVolumeClaim{claim("data", "1Gi").class("local-path").ann(volumeutil.AnnSelectedNode, "n2").obj()},
			volumes: []*corev1.PersistentVolume{vol("on-n1", "1Gi").class("local-path").onNode("n1").obj(), vol("on-n2", "5Gi").class("local-path").onNode("n2").obj()},
			classes: []*storagev1.StorageClass{localPath},
			want: []string{
				`UpdateVolume on-n2 claim="default/data" phase=Available`,
				`UpdateVolumeStatus on-n2 claim="default/data" phase=Bound`,
				`UpdateClaim default/data volume="on-n2" phase=Pending`,
				`UpdateClaimStatus default/data volume="on-n2" phase=Bound`,
			},
		},
		{
			name:    "an Immediate class of another provisioner is handed off and waited for",
			claims:  []*corev1.PersistentVolumeClaim{claim("data", "1Gi").class("nfs").obj()},
			classes: []*storagev1.StorageClass{class("nfs", "example.com/nfs", storagev1.VolumeBindingImmediate)},
			want: []string{
				`UpdateClaim default/data volume="" phase=Pending`,
				`Event Normal default/data ExternalProvisioning: Waiting for a volume to be created either by the external provisioner 'example.com/nfs' or manually by the system administrator. If volume creation is delayed, please verify that the provisioner is running and correctly registered.`,
			},
		},
		{
			name:    "local-path with Immediate binding fails to provision: it needs a node",
			claims:  []*corev1.PersistentVolumeClaim{claim("data", "1Gi").class("lp-now").ann(volumeutil.AnnStorageProvisioner, volumeutil.LocalPathProvisioner).ann(volumeutil.AnnBetaStorageProvisioner, volumeutil.LocalPathProvisioner).obj()},
			classes: []*storagev1.StorageClass{class("lp-now", volumeutil.LocalPathProvisioner, storagev1.VolumeBindingImmediate)},
			want:    []string{`Event Warning default/data ProvisioningFailed: configuration error, no node was specified: the lp-now class needs volumeBindingMode WaitForFirstConsumer`},
		},
		{
			name:    "a provisioned volume pre-bound to its claim is bound without searching",
			claims:  []*corev1.PersistentVolumeClaim{claim("data", "1Gi").class("local-path").obj()},
			volumes: []*corev1.PersistentVolume{vol("pvc-uid-data", "1Gi").class("local-path").claimRef("data", "uid-data").phase(corev1.VolumePending).obj()},
			classes: []*storagev1.StorageClass{localPath},
			want: []string{
				`UpdateVolumeStatus pvc-uid-data claim="default/data" phase=Bound`,
				`UpdateClaim default/data volume="pvc-uid-data" phase=Pending`,
				`UpdateClaimStatus default/data volume="pvc-uid-data" phase=Bound`,
			},
		},
		{
			name:    "a bound pair that is consistent needs nothing",
			claims:  []*corev1.PersistentVolumeClaim{claim("data", "1Gi").volume("pv1").bound().obj()},
			volumes: []*corev1.PersistentVolume{vol("pv1", "1Gi").claimRef("data", "uid-data").phase(corev1.VolumeBound).obj()},
		},
		{
			name:   "a claim whose volume is gone is Lost",
			claims: []*corev1.PersistentVolumeClaim{claim("data", "1Gi").volume("pv1").bound().obj()},
			want: []string{
				`UpdateClaimStatus default/data volume="pv1" phase=Lost`,
				`Event Warning default/data ClaimLost: Bound claim has lost its PersistentVolume. Data on the volume is lost!`,
			},
		},
		{
			name:    "a volume whose claim is gone is Released and, with Retain, kept",
			volumes: []*corev1.PersistentVolume{vol("pv1", "1Gi").claimRef("data", "uid-data").phase(corev1.VolumeBound).obj()},
			want:    []string{`UpdateVolumeStatus pv1 claim="default/data" phase=Released`},
		},
		{
			name: "a released local-path volume with Delete waits for its kubelet to delete it",
			volumes: []*corev1.PersistentVolume{vol("pv1", "1Gi").claimRef("data", "uid-data").phase(corev1.VolumeBound).
				reclaim(corev1.PersistentVolumeReclaimDelete).ann(volumeutil.AnnProvisionedBy, volumeutil.LocalPathProvisioner).obj()},
			want: []string{`UpdateVolumeStatus pv1 claim="default/data" phase=Released`},
		},
		{
			name: "a hand-made volume with Delete has no deleter and fails",
			volumes: []*corev1.PersistentVolume{vol("pv1", "1Gi").claimRef("data", "uid-data").phase(corev1.VolumeReleased).
				reclaim(corev1.PersistentVolumeReclaimDelete).obj()},
			want: []string{
				`UpdateVolumeStatus pv1 claim="default/data" phase=Failed`,
				`Event Warning pv1 VolumeFailedDelete: error getting deleter volume plugin for volume "pv1": no deletable volume plugin matched`,
			},
		},
		{
			name:    "a new volume becomes Available",
			volumes: []*corev1.PersistentVolume{vol("pv1", "1Gi").phase(corev1.VolumePending).obj()},
			want:    []string{`UpdateVolumeStatus pv1 claim="" phase=Available`},
		},
		{
			name: "two claims do not take the same volume: the older one wins",
			claims: []*corev1.PersistentVolumeClaim{claim("b", "1Gi").obj(), func() *corev1.PersistentVolumeClaim {
				c := claim("a", "1Gi").obj()
				c.CreationTimestamp = metav1.NewTime(t0.Add(-time.Minute))
				return c
			}()},
			volumes: []*corev1.PersistentVolume{vol("pv1", "1Gi").obj()},
			want: []string{
				`UpdateVolume pv1 claim="default/a" phase=Available`,
				`UpdateVolumeStatus pv1 claim="default/a" phase=Bound`,
				`UpdateClaim default/a volume="pv1" phase=Pending`,
				`UpdateClaimStatus default/a volume="pv1" phase=Bound`,
				`Event Normal default/b FailedBinding: no persistent volumes available for this claim and no storage class is set`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Snapshot{Claims: tt.claims, Volumes: tt.volumes, Classes: map[string]*storagev1.StorageClass{}, Nodes: map[string]*corev1.Node{"n1": node("n1"), "n2": node("n2")}}
			for _, c := range tt.classes {
				s.Classes[c.Name] = c
			}
			got := summary(Plan(s).Actions)
			if want := strings.Join(tt.want, "\n"); got != want {
				t.Errorf("actions:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}
