package apiserver

import (
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
)

// protobufMediaType is what client-go and kubectl send for built-in types.
const protobufMediaType = "application/vnd.kubernetes.protobuf"

var protoScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme,
		coordinationv1.AddToScheme, eventsv1.AddToScheme, policyv1.AddToScheme, schedulingv1.AddToScheme, autoscalingv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err) // a programming error in the list above
		}
	}
	return s
}()

var protoSerializer = protobuf.NewSerializer(protoScheme, protoScheme)

// protobufToJSON decodes a Kubernetes protobuf body (the "k8s\0" envelope
// around a runtime.Unknown) and re-encodes it as JSON, so that the rest of
// the request path has one format to handle.
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
