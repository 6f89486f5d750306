package client

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
)

// TestProtobuf checks the client's protobuf against apimachinery's own
// serializers, the ones Kubernetes' apiserver and client-go use: what the
// client sends, they decode; what they encode, the client decodes.
func TestProtobuf(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	codecs := serializer.NewCodecFactory(scheme)
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), protobufMediaType)
	if !ok {
		t.Fatal("apimachinery has no protobuf serializer")
	}
	encode := func(t *testing.T, obj runtime.Object) []byte {
		var buf bytes.Buffer
		if err := info.Serializer.Encode(obj, &buf); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	answer := func(w http.ResponseWriter, code int, data []byte) {
		w.Header().Set("Content-Type", protobufMediaType)
		w.WriteHeader(code)
		_, _ = w.Write(data)
	}
	withKind := func(obj runtime.Object, kind string) runtime.Object {
		obj.GetObjectKind().SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(kind))
		return obj
	}

	t.Run("a create goes as protobuf that apimachinery decodes, and the answer decodes with its kind", func(t *testing.T) {
		var sent runtime.Object
		var accept string
		var reqs <-chan request
		c, reqs := newServer(t, func(w http.ResponseWriter, r *http.Request) {
			accept = r.Header.Get("Accept")
			body := (<-reqs).body // newServer read it
			obj, _, err := info.Serializer.Decode([]byte(body), nil, nil)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			sent = obj
			p := obj.(*corev1.Pod).DeepCopy()
			p.ResourceVersion = "7"
			answer(w, http.StatusCreated, encode(t, withKind(p, "Pod")))
		}, Config{})
		p := pod("ns", "a", "")
		p.Labels = map[string]string{"app": "web"}
		got, err := c.Pods().Create(t.Context(), p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(accept, protobufMediaType) {
			t.Errorf("Accept %q, want protobuf first", accept)
		}
		if sp, ok := sent.(*corev1.Pod); !ok || sp.Name != "a" || sp.Labels["app"] != "web" {
			t.Fatalf("server decoded %#v", sent)
		}
		if got.Name != "a" || got.ResourceVersion != "7" || got.Kind != "Pod" || got.APIVersion != "v1" {
			t.Fatalf("client decoded %s/%s rv %s kind %s/%s", got.Namespace, got.Name, got.ResourceVersion, got.APIVersion, got.Kind)
		}
	})

	t.Run("a list decodes its metadata and every item", func(t *testing.T) {
		list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "12", Continue: "next"},
			Items: []corev1.Pod{*pod("ns", "a", "10"), *pod("ns", "b", "11")}}
		c, _ := newServer(t, func(w http.ResponseWriter, r *http.Request) {
			answer(w, http.StatusOK, encode(t, withKind(list, "PodList")))
		}, Config{})
		got, err := c.Pods().List(t.Context(), "ns", metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.ResourceVersion != "12" || got.Continue != "next" || len(got.Items) != 2 ||
			got.Items[1].Name != "b" || got.Items[1].ResourceVersion != "11" || got.Items[0].Kind != "Pod" {
			t.Fatalf("decoded %+v", got)
		}
	})

	t.Run("an error Status in protobuf becomes a StatusError", func(t *testing.T) {
		c, _ := newServer(t, func(w http.ResponseWriter, r *http.Request) {
			answer(w, http.StatusConflict, encode(t, status(409, metav1.StatusReasonConflict, "stale")))
		}, Config{})
		_, err := c.Pods().Get(t.Context(), "ns", "a", metav1.GetOptions{})
		if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "stale") {
			t.Fatalf("err %v, want the Conflict", err)
		}
	})

	t.Run("a protobuf watch stream decodes event by event", func(t *testing.T) {
		c, _ := newServer(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", protobufMediaType+";stream=watch")
			enc := streaming.NewEncoder(info.StreamSerializer.Framer.NewFrameWriter(w), info.StreamSerializer.Serializer)
			send := func(typ watch.EventType, obj runtime.Object) {
				ev := &metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: encode(t, obj)}}
				if err := enc.Encode(ev); err != nil {
					t.Error(err)
				}
				w.(http.Flusher).Flush()
			}
			send(watch.Added, withKind(pod("ns", "a", "5"), "Pod"))
			send(watch.Modified, withKind(pod("ns", "a", "6"), "Pod"))
			send(watch.Error, status(410, metav1.StatusReasonExpired, "too old"))
		}, Config{})
		w, err := c.Pods().Watch(t.Context(), "ns", metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		var got []string
		for ev := range w.Events() {
			if ev.Type == watch.Error {
				if !IsGone(ev.Err()) {
					t.Errorf("error event %v, want 410", ev.Err())
				}
				got = append(got, "ERROR")
				continue
			}
			got = append(got, string(ev.Type)+" "+ev.Object.ResourceVersion+" "+ev.Object.Kind)
		}
		if err := w.Err(); err != nil {
			t.Fatal(err)
		}
		if want := "ADDED 5 Pod,MODIFIED 6 Pod,ERROR"; strings.Join(got, ",") != want {
			t.Fatalf("events %v, want %s", got, want)
		}
	})
}
