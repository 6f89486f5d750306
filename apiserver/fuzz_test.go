package apiserver

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/apiserver/defaults"
	"minik/apiserver/registry"
	"minik/apiserver/validation"
)

// Fuzz targets for what a client controls: request bodies in every media
// type, and patches of every type. None may panic the server. `go test`
// runs the seeds (and any crasher kept under testdata/fuzz); `make fuzz`
// runs each target for a bounded time.

var fuzzResources = func() []*registry.Resource {
	var out []*registry.Resource
	for _, r := range registry.All() {
		if r.NewList != nil {
			out = append(out, r)
		}
	}
	return out
}()

var mediaTypes = []string{"application/json", "application/yaml", protobufMediaType}

func FuzzDecodeAndAdmit(f *testing.F) {
	f.Add([]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"default"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`), uint8(2), uint8(0))
	f.Add([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: b\n"), uint8(5), uint8(1))
	f.Add([]byte(`{"metadata":{"name":"x","labels":{"a":"b"}},"spec":{"replicas":-1,"selector":{"matchLabels":{"a":"b"}}}}`), uint8(9), uint8(0))
	f.Add([]byte("k8s\x00\x0a\x04\x0a\x02v1\x12\x03Pod"), uint8(2), uint8(2))
	f.Add([]byte(`{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"x","resources":{"limits":{"cpu":"1e400"}}}]}}}}`), uint8(10), uint8(0))
	f.Fuzz(func(t *testing.T, body []byte, kind, media uint8) {
		defer slowInput(body)()
		res := fuzzResources[int(kind)%len(fuzzResources)]
		mt := mediaTypes[int(media)%len(mediaTypes)]
		r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
		r.Header.Set("Content-Type", mt)
		data, mediaType, err := readBody(r, bodyTypes...)
		if err != nil {
			return
		}
		obj, err := decodeInto(res, data, mediaType, fieldValidationStrict, httptest.NewRecorder())
		if err != nil {
			return
		}
		defaults.Object(obj)
		_ = validation.Create(obj, res.Namespaced)
		_ = validation.Update(obj, obj.DeepCopyObject(), res.Namespaced)
	})
}

func FuzzPatch(f *testing.F) {
	f.Add([]byte(`[{"op":"copy","from":"/metadata","path":"/metadata/labels"}]`), uint8(0))
	f.Add([]byte(`[{"op":"add","path":"/spec/containers/-","value":{"name":"d","image":"x"}}]`), uint8(0))
	f.Add([]byte(`{"metadata":{"labels":{"a":null}},"spec":{"containers":null}}`), uint8(1))
	f.Add([]byte(`{"spec":{"containers":[{"name":"c","$patch":"delete"}],"$setElementOrder/containers":[{"name":"c"}]}}`), uint8(2))
	f.Add([]byte(`{"$patch":"replace","spec":{}}`), uint8(2))
	f.Add([]byte(`{"spec":{"$retainKeys":["containers"],"volumes":[{"name":"v","$patch":"merge"}]}}`), uint8(2))
	types := []string{jsonPatchType, mergePatchType, strategicMergePatchType}
	podRes := fuzzResources[0]
	for _, r := range fuzzResources {
		if r.Resource == "pods" {
			podRes = r
		}
	}
	f.Fuzz(func(t *testing.T, patch []byte, pt uint8) {
		defer slowInput(patch)()
		pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", Labels: map[string]string{"a": "b"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
				Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}}}
		out, err := applyPatch(types[int(pt)%len(types)], pod, patch)
		if err != nil {
			return
		}
		obj, err := decodeInto(podRes, out, "application/json", fieldValidationIgnore, httptest.NewRecorder())
		if err != nil {
			return
		}
		defaults.Object(obj)
		_ = validation.Update(obj, pod, true)
	})
}

// slowInput crashes the fuzz worker when one input takes seconds, so that
// the fuzzer keeps it as a crasher: a request that slow is a denial of
// service.
func slowInput(input []byte) (stop func()) {
	t := time.AfterFunc(3*time.Second, func() { panic(fmt.Sprintf("input took over 3s: %q", input)) })
	return func() { t.Stop() }
}
