package apiserver

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"

	"minik/apiserver/registry"
)

// Kubernetes' protobuf wire format, which client-go uses when a component
// sets ContentType to protobuf (minik's own components do):
//
//	object:  "k8s\x00" + runtime.Unknown{apiVersion, kind, Raw: the object's protobuf}
//	watch:   Content-Type "application/vnd.kubernetes.protobuf;stream=watch",
//	         frames of a 4-byte big-endian length + metav1.WatchEvent whose
//	         object.Raw is an object in the form above.
//
// Tables, discovery and OpenAPI stay JSON, as in Kubernetes.
const (
	protobufMediaType   = "application/vnd.kubernetes.protobuf"
	protobufWatchStream = protobufMediaType + ";stream=watch"
)

var protobufMagic = []byte("k8s\x00")

// protoObject is what the generated code of every k8s.io/api type offers.
type protoObject interface {
	runtime.Object
	Marshal() ([]byte, error)
	Unmarshal([]byte) error
}

var protoScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	// Every built-in group minik serves: each also registers DeleteOptions,
	// which client-go sends in the group of the object it deletes.
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme,
		coordinationv1.AddToScheme, discoveryv1.AddToScheme, eventsv1.AddToScheme, policyv1.AddToScheme, schedulingv1.AddToScheme,
		autoscalingv1.AddToScheme, autoscalingv2.AddToScheme, storagev1.AddToScheme, rbacv1.AddToScheme, resourcev1.AddToScheme,
		networkingv1.AddToScheme, admissionregistrationv1.AddToScheme, authenticationv1.AddToScheme, authorizationv1.AddToScheme, apiextv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err) // a programming error in the list above
		}
	}
	return s
}()

var protoSerializer = protobuf.NewSerializer(protoScheme, protoScheme)

// wantsProtobuf reports whether the client prefers protobuf: the first media
// type in Accept that minik can serve for this object is protobuf. A
// protobuf type with parameters such as as=Table is not one minik serves.
func wantsProtobuf(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		switch mt {
		case protobufMediaType:
			if len(params) == 0 {
				return true
			}
		case "application/json", "application/yaml", "*/*", "application/*":
			return false
		}
	}
	return false
}

// encodeProtobuf wraps obj in the k8s envelope. ok is false for objects
// that have no protobuf form (the caller answers JSON instead).
func encodeProtobuf(obj runtime.Object) (data []byte, ok bool, err error) {
	po, isProto := obj.(protoObject)
	if !isProto {
		return nil, false, nil
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Kind == "" {
		gvks, _, err := protoScheme.ObjectKinds(obj)
		if err != nil || len(gvks) == 0 {
			return nil, false, nil
		}
		gvk = gvks[0]
	}
	raw, err := po.Marshal()
	if err != nil {
		return nil, true, err
	}
	unknown := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind}, Raw: raw}
	out := make([]byte, len(protobufMagic)+unknown.Size())
	copy(out, protobufMagic)
	if _, err := unknown.MarshalToSizedBuffer(out[len(protobufMagic):]); err != nil {
		return nil, true, err
	}
	return out, true, nil
}

// decodeProtobufEnvelope unwraps the k8s envelope of a request body.
func decodeProtobufEnvelope(data []byte) (*runtime.Unknown, error) {
	if !bytes.HasPrefix(data, protobufMagic) {
		return nil, apierrors.NewBadRequest("the object provided is unrecognized or malformed: the protobuf body lacks the k8s prefix")
	}
	var unknown runtime.Unknown
	if err := unknown.Unmarshal(data[len(protobufMagic):]); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized or malformed: %v", err))
	}
	return &unknown, nil
}

// decodeProtobufInto decodes a protobuf body into a new object of res's
// kind, with the same apiVersion and kind checks as JSON bodies.
func decodeProtobufInto(res *registry.Resource, data []byte) (runtime.Object, error) {
	unknown, err := decodeProtobufEnvelope(data)
	if err != nil {
		return nil, err
	}
	if unknown.APIVersion != "" && unknown.APIVersion != res.APIVersion() {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", unknown.APIVersion, res.APIVersion()))
	}
	if unknown.Kind != "" && unknown.Kind != res.Kind {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the kind in the data (%s) does not match the expected kind (%s)", unknown.Kind, res.Kind))
	}
	obj := res.New()
	if err := unmarshalProtobuf(unknown.Raw, obj); err != nil {
		return nil, err
	}
	obj.GetObjectKind().SetGroupVersionKind(res.GroupVersion().WithKind(res.Kind))
	return obj, nil
}

func unmarshalProtobuf(raw []byte, into any) error {
	po, ok := into.(interface{ Unmarshal([]byte) error })
	if !ok {
		return statusError(http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType,
			fmt.Sprintf("%T cannot be sent as %s", into, protobufMediaType))
	}
	if err := po.Unmarshal(raw); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized or malformed: %v", err))
	}
	return nil
}

// protobufWatchFrame is one length-prefixed frame of a protobuf watch.
func protobufWatchFrame(typ string, obj runtime.Object) ([]byte, error) {
	data, ok, err := encodeProtobuf(obj)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%T has no protobuf form", obj)
	}
	ev := metav1.WatchEvent{Type: typ, Object: runtime.RawExtension{Raw: data}}
	frame := make([]byte, 4+ev.Size())
	binary.BigEndian.PutUint32(frame, uint32(ev.Size()))
	if _, err := ev.MarshalToSizedBuffer(frame[4:]); err != nil {
		return nil, err
	}
	return frame, nil
}

// protobufToJSON decodes a Kubernetes protobuf body of any built-in kind and
// re-encodes it as JSON, for the few handlers (delete options, scale) that
// read JSON only; the hot paths decode protobuf directly.
func protobufToJSON(data []byte) ([]byte, error) {
	obj, _, err := protoSerializer.Decode(data, nil, nil)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized or malformed: %v", err))
	}
	gvks, _, err := protoScheme.ObjectKinds(obj)
	if err == nil && len(gvks) > 0 {
		obj.GetObjectKind().SetGroupVersionKind(gvks[0])
	}
	return json.Marshal(obj)
}
