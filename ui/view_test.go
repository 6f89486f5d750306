package ui

import (
	"encoding/json"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	kptr "k8s.io/utils/ptr"
)

func TestViewService(t *testing.T) {
	for _, tc := range []struct {
		name string
		svc  corev1.Service
		want serviceView
	}{{
		name: "a NodePort Service with a named target port",
		svc: corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}, Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeNodePort, ClusterIP: "10.96.0.20", Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromString("http"), NodePort: 30080}}}},
		want: serviceView{Namespace: "default", Name: "web", Type: "NodePort", ClusterIP: "10.96.0.20", Selector: map[string]string{"app": "web"},
			Ports: []servicePortView{{Name: "http", Protocol: "TCP", Port: 80, TargetPort: "http", NodePort: 30080}}},
	}, {
		name: "defaults: ClusterIP type, TCP, the target port is the port",
		svc: corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db"}, Spec: corev1.ServiceSpec{ClusterIP: "None",
			Ports: []corev1.ServicePort{{Port: 5432}, {Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(5353)}}}},
		want: serviceView{Namespace: "ns", Name: "db", Type: "ClusterIP", ClusterIP: "None",
			Ports: []servicePortView{{Protocol: "TCP", Port: 5432, TargetPort: "5432"}, {Protocol: "UDP", Port: 53, TargetPort: "5353"}}},
	}, {
		name: "ExternalName: no ports, no selector",
		svc: corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ext"}, Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeExternalName, ExternalName: "example.org"}},
		want: serviceView{Namespace: "ns", Name: "ext", Type: "ExternalName", ExternalName: "example.org"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if got := viewService(&tc.svc); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestViewSlice(t *testing.T) {
	labels := map[string]string{discoveryv1.LabelServiceName: "web"}
	pod := func(name string) *corev1.ObjectReference {
		return &corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: name}
	}
	for _, tc := range []struct {
		name  string
		slice discoveryv1.EndpointSlice
		want  sliceView
	}{{
		name:  "no endpoints",
		slice: discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-x", Labels: labels}},
		want:  sliceView{Namespace: "default", Name: "web-x", Service: "web", Endpoints: []endpointView{}},
	}, {
		name: "ready, not ready, and terminating but still serving",
		slice: discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-x", Labels: labels}, Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"10.0.1.5"}, NodeName: kptr.To("n1"), TargetRef: pod("web-a"),
				Conditions: discoveryv1.EndpointConditions{Ready: kptr.To(true), Serving: kptr.To(true), Terminating: kptr.To(false)}},
			{Addresses: []string{"10.0.2.7"}, NodeName: kptr.To("n2"), TargetRef: pod("web-b"),
				Conditions: discoveryv1.EndpointConditions{Ready: kptr.To(false), Serving: kptr.To(false), Terminating: kptr.To(false)}},
			{Addresses: []string{"10.0.2.8"}, NodeName: kptr.To("n2"), TargetRef: pod("web-c"),
				Conditions: discoveryv1.EndpointConditions{Ready: kptr.To(false), Serving: kptr.To(true), Terminating: kptr.To(true)}},
		}},
		want: sliceView{Namespace: "default", Name: "web-x", Service: "web", Endpoints: []endpointView{
			{Addresses: []string{"10.0.1.5"}, Pod: "web-a", Node: "n1", Ready: true, Serving: true},
			{Addresses: []string{"10.0.2.7"}, Pod: "web-b", Node: "n2"},
			{Addresses: []string{"10.0.2.8"}, Pod: "web-c", Node: "n2", Serving: true, Terminating: true},
		}},
	}, {
		// Unset conditions read as the API says: ready, serving as ready,
		// not terminating. A target that is not a pod names none.
		name: "unset conditions, a target that is not a pod, no node",
		slice: discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "manual", Labels: labels}, Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"192.0.2.1"}, TargetRef: &corev1.ObjectReference{Kind: "Node", Name: "n1"}},
			{Addresses: []string{"192.0.2.2"}, Conditions: discoveryv1.EndpointConditions{Ready: kptr.To(false)}},
		}},
		want: sliceView{Namespace: "default", Name: "manual", Service: "web", Endpoints: []endpointView{
			{Addresses: []string{"192.0.2.1"}, Ready: true, Serving: true},
			{Addresses: []string{"192.0.2.2"}},
		}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if got := viewSlice(&tc.slice); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestViewClaimAndVolume(t *testing.T) {
	local := "local-path"
	storage := func(q string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(q)}
	}
	now := metav1.Now()
	claims := []struct {
		name  string
		claim corev1.PersistentVolumeClaim
		want  claimView
	}{{
		name: "waiting for its first consumer",
		claim: corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "data"},
			Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &local, Resources: corev1.VolumeResourceRequirements{Requests: storage("16Mi")}}},
		want: claimView{Namespace: "default", Name: "data", Phase: "Pending", Class: "local-path", Request: "16Mi"},
	}, {
		name: "bound on the node the scheduler chose, being deleted",
		claim: corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "data", DeletionTimestamp: &now,
			Annotations: map[string]string{"volume.kubernetes.io/selected-node": "n2"}},
			Spec:   corev1.PersistentVolumeClaimSpec{StorageClassName: &local, VolumeName: "pvc-1", Resources: corev1.VolumeResourceRequirements{Requests: storage("1Gi")}},
			Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}},
		want: claimView{Namespace: "default", Name: "data", Phase: "Bound", Class: "local-path", Request: "1Gi", Volume: "pvc-1", SelectedNode: "n2", Deleting: true},
	}, {
		name: "the beta class annotation wins over the field",
		claim: corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "old",
			Annotations: map[string]string{corev1.BetaStorageClassAnnotation: "slow"}}, Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &local}},
		want: claimView{Namespace: "default", Name: "old", Phase: "Pending", Class: "slow"},
	}}
	for _, tc := range claims {
		t.Run("claim: "+tc.name, func(t *testing.T) {
			if got := viewClaim(&tc.claim); got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}

	hostIn := func(key string, values ...string) *corev1.VolumeNodeAffinity {
		return &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}}}}}}
	}
	volumes := []struct {
		name string
		pv   corev1.PersistentVolume
		want volumeView
	}{{
		name: "a local volume bound to its claim, on one node",
		pv: corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pvc-1"}, Spec: corev1.PersistentVolumeSpec{
			Capacity: storage("16Mi"), PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete, StorageClassName: "local-path",
			ClaimRef: &corev1.ObjectReference{Namespace: "default", Name: "data"}, NodeAffinity: hostIn(corev1.LabelHostname, "n2")},
			Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound}},
		want: volumeView{Name: "pvc-1", Capacity: "16Mi", Phase: "Bound", Reclaim: "Delete", Class: "local-path", Claim: "default/data", Node: "n2"},
	}, {
		name: "a volume any of two nodes reaches names no node",
		pv: corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "shared"}, Spec: corev1.PersistentVolumeSpec{
			Capacity: storage("1Gi"), PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain, NodeAffinity: hostIn(corev1.LabelHostname, "n1", "n2")},
			Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeAvailable}},
		want: volumeView{Name: "shared", Capacity: "1Gi", Phase: "Available", Reclaim: "Retain"},
	}, {
		name: "a node affinity by zone names no node; no phase yet is Pending",
		pv:   corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "zonal"}, Spec: corev1.PersistentVolumeSpec{NodeAffinity: hostIn(corev1.LabelTopologyZone, "a")}},
		want: volumeView{Name: "zonal", Phase: "Pending"},
	}}
	for _, tc := range volumes {
		t.Run("volume: "+tc.name, func(t *testing.T) {
			if got := viewVolume(&tc.pv); got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestViewClass(t *testing.T) {
	wffc, retain := storagev1.VolumeBindingWaitForFirstConsumer, corev1.PersistentVolumeReclaimRetain
	for _, tc := range []struct {
		name  string
		class storagev1.StorageClass
		want  classView
	}{{
		name: "the default local-path class",
		class: storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "local-path", Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}},
			Provisioner: "minik.io/local-path", VolumeBindingMode: &wffc},
		want: classView{Name: "local-path", Provisioner: "minik.io/local-path", BindingMode: "WaitForFirstConsumer", Default: true},
	}, {
		name:  "unset binding mode is Immediate",
		class: storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "manual"}, Provisioner: "kubernetes.io/no-provisioner", ReclaimPolicy: &retain},
		want:  classView{Name: "manual", Provisioner: "kubernetes.io/no-provisioner", BindingMode: "Immediate", Reclaim: "Retain"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if got := viewClass(&tc.class); got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// A pod card names the claims it mounts (a StatefulSet's claim template
// and a generic ephemeral volume both end as claims), and nothing else.
func TestViewPodClaims(t *testing.T) {
	for _, tc := range []struct {
		name    string
		volumes []corev1.Volume
		want    []string
	}{
		{name: "no volumes"},
		{name: "an emptyDir is no claim", volumes: []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}},
		{name: "a claim and an ephemeral volume", volumes: []corev1.Volume{
			{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-web-0"}}},
			{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}},
		}, want: []string{"data-web-0", "web-0-scratch"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-0"}, Spec: corev1.PodSpec{Volumes: tc.volumes}}
			v := viewPod(p)
			if !reflect.DeepEqual(v.Claims, tc.want) {
				t.Errorf("claims %q, want %q", v.Claims, tc.want)
			}
			// Without claims the card's JSON has no claims key.
			b, _ := json.Marshal(v)
			var m map[string]any
			_ = json.Unmarshal(b, &m)
			if _, ok := m["claims"]; ok != (len(tc.want) > 0) {
				t.Errorf("claims key in %s", b)
			}
		})
	}
}

// The caches keep what the panels and explanations read: the selected
// node and default-class annotations stay, managed fields and kubectl's
// last-applied copy go.
func TestTrim(t *testing.T) {
	c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data",
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
		Annotations: map[string]string{corev1.LastAppliedConfigAnnotation: `{"big":"copy"}`,
			"volume.kubernetes.io/selected-node": "n1"}}}
	trim(c)
	if c.ManagedFields != nil || !reflect.DeepEqual(c.Annotations, map[string]string{"volume.kubernetes.io/selected-node": "n1"}) {
		t.Errorf("trimmed: %+v %v", c.ManagedFields, c.Annotations)
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	trim(n) // no annotations: nothing to do
	if n.Annotations != nil {
		t.Errorf("annotations %v", n.Annotations)
	}
}
