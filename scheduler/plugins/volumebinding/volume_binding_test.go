package volumebinding

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/internal/volumeutil"
	"minik/scheduler/cache"
	"minik/scheduler/framework"
	"minik/scheduler/internal/st"
)

func node(name string, localPath bool) *framework.NodeInfo {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}}}
	if localPath {
		n.Annotations = map[string]string{volumeutil.AnnLocalPathDir: "/var/lib/minik/local-path"}
	}
	ni := framework.NewNodeInfo()
	ni.SetNode(n)
	return ni
}

func claim(name, class, volume string, ann ...string) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class, VolumeName: volume,
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	for i := 0; i+1 < len(ann); i += 2 {
		metav1.SetMetaDataAnnotation(&c.ObjectMeta, ann[i], ann[i+1])
	}
	return c
}

func volumeOn(name, class, node string) *corev1.PersistentVolume {
	v := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{StorageClassName: class, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeAvailable}}
	if node != "" {
		v.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}}}
	}
	return v
}

func sc(name, provisioner string, mode storagev1.VolumeBindingMode) *storagev1.StorageClass {
	return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: provisioner, VolumeBindingMode: &mode}
}

func podWithClaims(names ...string) *corev1.Pod {
	p := st.MakePod().Name("web").Namespace("default").Obj()
	for _, n := range names {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: n, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: n}}})
	}
	return p
}

type patch struct{ ns, name, body string }
type fakePatcher struct{ patches []patch }

func (f *fakePatcher) PatchClaim(_ context.Context, ns, name string, body []byte) error {
	f.patches = append(f.patches, patch{ns, name, string(body)})
	return nil
}

func TestVolumeBinding(t *testing.T) {
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	classes := []*storagev1.StorageClass{
		sc("local-path", volumeutil.LocalPathProvisioner, wffc),
		sc("manual", "kubernetes.io/no-provisioner", wffc),
		sc("now", "example.com/disk", storagev1.VolumeBindingImmediate),
	}
	tests := []struct {
		name      string
		pod       *corev1.Pod
		claims    []*corev1.PersistentVolumeClaim
		volumes   []*corev1.PersistentVolume
		preFilter string // "" passes, "skip" skips, else the rejection
		want      map[string]string
	}{
		{name: "a pod without claims is not this plugin's business", pod: podWithClaims(), preFilter: "skip"},
		{name: "a missing claim rejects the pod everywhere", pod: podWithClaims("data"), preFilter: `persistentvolumeclaim "data" not found`},
		{name: "an unbound Immediate claim waits for the binder", pod: podWithClaims("data"),
			claims: []*corev1.PersistentVolumeClaim{claim("data", "now", "")}, preFilter: ErrReasonUnboundImmediate},
		{name: "a bound local volume keeps the pod on its node", pod: podWithClaims("data"),
			claims:  []*corev1.PersistentVolumeClaim{claim("data", "local-path", "pv1")},
			volumes: []*corev1.PersistentVolume{volumeOn("pv1", "local-path", "n2")},
			want:    map[string]string{"n1": ErrReasonNodeConflict, "n2": "", "n3": ErrReasonNodeConflict}},
		{name: "a claim bound to a volume that does not exist: every node says so, as upstream counts it", pod: podWithClaims("data"),
			claims: []*corev1.PersistentVolumeClaim{claim("data", "local-path", "gone")},
			want:   map[string]string{"n1": ErrReasonPVNotExist, "n2": ErrReasonPVNotExist, "n3": ErrReasonPVNotExist}},
		{name: "each reason that holds is given, in upstream's order", pod: podWithClaims("a", "b"),
			claims:  []*corev1.PersistentVolumeClaim{claim("a", "local-path", "pv1"), claim("b", "local-path", "gone")},
			volumes: []*corev1.PersistentVolume{volumeOn("pv1", "local-path", "n2")},
			want: map[string]string{"n1": ErrReasonNodeConflict + ", " + ErrReasonPVNotExist, "n2": ErrReasonPVNotExist,
				"n3": ErrReasonNodeConflict + ", " + ErrReasonPVNotExist}},
		{name: "an unbound local-path claim fits every node that publishes its local-path dir", pod: podWithClaims("data"),
			claims: []*corev1.PersistentVolumeClaim{claim("data", "local-path", "")},
			want:   map[string]string{"n1": "", "n2": "", "n3": ErrReasonBindConflict}},
		{name: "a claim already given a node fits only that node", pod: podWithClaims("data"),
			claims: []*corev1.PersistentVolumeClaim{claim("data", "local-path", "", volumeutil.AnnSelectedNode, "n2")},
			want:   map[string]string{"n1": ErrReasonBindConflict, "n2": "", "n3": ErrReasonBindConflict}},
		{name: "a class without provisioner fits only where a free volume matches", pod: podWithClaims("data"),
			claims:  []*corev1.PersistentVolumeClaim{claim("data", "manual", "")},
			volumes: []*corev1.PersistentVolume{volumeOn("pv1", "manual", "n1")},
			want:    map[string]string{"n1": "", "n2": ErrReasonBindConflict, "n3": ErrReasonBindConflict}},
		{name: "two claims cannot share one free volume", pod: podWithClaims("a", "b"),
			claims:  []*corev1.PersistentVolumeClaim{claim("a", "manual", ""), claim("b", "manual", "")},
			volumes: []*corev1.PersistentVolume{volumeOn("pv1", "manual", "n1")},
			want:    map[string]string{"n1": ErrReasonBindConflict, "n2": ErrReasonBindConflict, "n3": ErrReasonBindConflict}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nodes := []*framework.NodeInfo{node("n1", true), node("n2", true), node("n3", false)}
			snap := cache.NewSnapshot(nodes, nil)
			snap.SetStorage(framework.NewStaticStorage(tt.claims, tt.volumes, classes))
			patcher := &fakePatcher{}
			pl := New(patcher)
			cs := framework.NewCycleState()
			s := pl.PreFilter(cs, tt.pod, snap)
			switch {
			case tt.preFilter == "skip":
				if !s.IsSkip() {
					t.Fatalf("PreFilter %v, want Skip", s)
				}
				return
			case tt.preFilter != "":
				if s.IsSuccess() || s.Message() != tt.preFilter {
					t.Fatalf("PreFilter %v, want rejection %q", s, tt.preFilter)
				}
				return
			case !s.IsSuccess():
				t.Fatalf("PreFilter %v, want success", s)
			}
			for _, ni := range nodes {
				got := ""
				if st := pl.Filter(cs, tt.pod, ni); !st.IsSuccess() {
					got = st.Message()
				}
				if got != tt.want[ni.Node().Name] {
					t.Errorf("node %s: %q, want %q", ni.Node().Name, got, tt.want[ni.Node().Name])
				}
			}
		})
	}
}

func TestPreBindRecordsTheNodeOnWaitingClaims(t *testing.T) {
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	snap := cache.NewSnapshot([]*framework.NodeInfo{node("n1", true)}, nil)
	snap.SetStorage(framework.NewStaticStorage([]*corev1.PersistentVolumeClaim{claim("new", "local-path", ""), claim("old", "local-path", "pv1")},
		[]*corev1.PersistentVolume{volumeOn("pv1", "local-path", "n1")}, []*storagev1.StorageClass{sc("local-path", volumeutil.LocalPathProvisioner, wffc)}))
	patcher := &fakePatcher{}
	pl := New(patcher)
	cs := framework.NewCycleState()
	pod := podWithClaims("new", "old")
	if s := pl.PreFilter(cs, pod, snap); !s.IsSuccess() {
		t.Fatal(s)
	}
	if s := pl.PreBind(context.Background(), cs, pod, "n1"); !s.IsSuccess() {
		t.Fatal(s)
	}
	want := `{"metadata":{"annotations":{"volume.kubernetes.io/selected-node":"n1"}}}`
	if len(patcher.patches) != 1 || patcher.patches[0] != (patch{"default", "new", want}) {
		t.Errorf("patches %+v, want only the unbound claim with %s", patcher.patches, want)
	}
}
