package storage

import (
	"bytes"
	"encoding/json"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A list item made from the stored bytes is byte for byte the decoded
// object's Marshal, for namespaced and cluster-scoped kinds, objects with
// and without fields after the resourceVersion, and any revision.
func TestItemProtobufFromStoredBytesIsTheDecodedObjects(t *testing.T) {
	created := metav1.Date(2026, 11, 28, 7, 0, 0, 0, metav1.Now().Location())
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default", UID: "0f7b1d0e", Generation: 3,
			CreationTimestamp: created, Labels: map[string]string{"app": "web"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate,
				FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{}}`)}}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.0.7"},
	}
	cases := []struct {
		name string
		gr   schema.GroupResource
		obj  runtime.Object
		new  func() runtime.Object
	}{
		{"pod", corev1.Resource("pods"), pod, func() runtime.Object { return &corev1.Pod{} }},
		{"node (cluster-scoped)", corev1.Resource("nodes"), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}},
			func() runtime.Object { return &corev1.Node{} }},
		{"config map, only a name", corev1.Resource("configmaps"), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Data: map[string]string{"k": "v"}},
			func() runtime.Object { return &corev1.ConfigMap{} }},
		{"deployment", appsv1.Resource("deployments"), &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "ns", Generation: 7,
			Annotations: map[string]string{"a": "b"}}}, func() runtime.Object { return &appsv1.Deployment{} }},
	}
	for _, tc := range cases {
		s := &Store{gr: tc.gr, newObj: tc.new}
		stored, err := s.encode(tc.obj)
		if err != nil {
			t.Fatal(err)
		}
		for _, rev := range []int64{1, 9, 10, 123456789, 1 << 40} {
			want, err := s.decodeProtobuf(stored, rev)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := appendItemProtobuf([]byte("prefix"), stored, rev)
			if !ok || !bytes.Equal(got[len("prefix"):], want) {
				t.Errorf("%s at %d: ok %v\n got %x\nwant %x", tc.name, rev, ok, got, want)
			}
		}
	}
}

// Metadata that holds no resourceVersion field (another encoder's, which
// leaves empty strings out) gets one in field order.
func TestItemProtobufInsertsAMissingResourceVersion(t *testing.T) {
	s := &Store{gr: corev1.Resource("pods"), newObj: func() runtime.Object { return &corev1.Pod{} }}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Generation: 2}}
	stored, err := s.encode(pod)
	if err != nil {
		t.Fatal(err)
	}
	// Drop the empty resourceVersion (tag 6, length 0) from the metadata.
	raw, _ := unknownRaw(stored)
	meta, n := protowire.ConsumeBytes(raw[1:])
	stripped := bytes.Replace(meta, []byte{0x32, 0x00}, nil, 1)
	if len(stripped) != len(meta)-2 {
		t.Fatalf("no empty resourceVersion in %x", meta)
	}
	item := protowire.AppendTag(nil, metadataField, protowire.BytesType)
	item = protowire.AppendBytes(item, stripped)
	item = append(item, raw[1+n:]...)
	var u runtime.Unknown
	if err := u.Unmarshal(stored[len(storageMagic):]); err != nil {
		t.Fatal(err)
	}
	u.Raw = item
	data, err := u.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	data = append(append([]byte(nil), storageMagic...), data...)

	got, ok := appendItemProtobuf(nil, data, 42)
	want, err := s.decodeProtobuf(stored, 42)
	if err != nil {
		t.Fatal(err)
	}
	if !ok || !bytes.Equal(got, want) {
		t.Errorf("ok %v\n got %x\nwant %x", ok, got, want)
	}
}

// Objects stored as JSON (by an earlier minik) are not read this way.
func TestItemProtobufRefusesJSON(t *testing.T) {
	data, _ := json.Marshal(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}})
	for _, d := range [][]byte{data, append([]byte("k8s\x00"), 0xff), nil} {
		if _, ok := appendItemProtobuf(nil, d, 5); ok {
			t.Errorf("%q read as protobuf", d)
		}
	}
}

// A whole list's protobuf items equal the decoded items' Marshal, also
// for an object stored as JSON and one whose stored bytes hold a field
// this build does not know (both decoded instead).
func TestEachProtobufMatchesTheDecodedItems(t *testing.T) {
	s := newPodStore(t, nil, 100)
	s.create(t, makePod("a").Label("app", "web").Obj())
	asJSON, _ := json.Marshal(makePod("b").Obj())
	if _, err := s.client.Put(ctxT(t), s.Key("ns", "b"), string(asJSON)); err != nil {
		t.Fatal(err)
	}
	stored, err := s.encode(makePod("c").Obj())
	if err != nil {
		t.Fatal(err)
	}
	var u runtime.Unknown
	if err := u.Unmarshal(stored[len(storageMagic):]); err != nil {
		t.Fatal(err)
	}
	u.Raw = protowire.AppendString(protowire.AppendTag(u.Raw, 99, protowire.BytesType), "from another version")
	extra, _ := u.Marshal()
	resp, err := s.client.Put(ctxT(t), s.Key("ns", "c"), string(append(append([]byte(nil), storageMagic...), extra...)))
	if err != nil {
		t.Fatal(err)
	}
	s.waitSeen(t, resp.Header.Revision)

	page, err := s.ServeList(ctxT(t), ListOptions{Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	var want [][]byte
	if err := page.Each(func(obj runtime.Object) error {
		data, err := obj.(protoObject).Marshal()
		want = append(want, data)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var got [][]byte
	if err := page.EachProtobuf()(func(data []byte) error {
		got = append(got, bytes.Clone(data))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || len(want) != 3 {
		t.Fatalf("got %d items, decoded %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("item %d:\n got %x\nwant %x", i, got[i], want[i])
		}
	}
}
