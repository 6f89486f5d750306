package apiserver

import (
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	sigsjson "sigs.k8s.io/json"

	"minik/apiserver/registry"
)

// Field validation modes of the fieldValidation query parameter.
const (
	fieldValidationStrict = "Strict"
	fieldValidationWarn   = "Warn"
	fieldValidationIgnore = "Ignore"
)

func fieldValidation(r *http.Request) (string, error) {
	switch v := r.URL.Query().Get("fieldValidation"); v {
	case "":
		return fieldValidationWarn, nil
	case fieldValidationStrict, fieldValidationWarn, fieldValidationIgnore:
		return v, nil
	default:
		return "", apierrors.NewBadRequest(fmt.Sprintf("fieldValidation parameter unsupported: %q (must be Ignore, Warn or Strict)", v))
	}
}

// bodyTypes are the media types of whole-object request bodies.
var bodyTypes = []string{"application/json", "application/yaml", protobufMediaType}

// decodeRequest reads and decodes a whole-object request body (create,
// update, reviews) under the request's fieldValidation mode.
func decodeRequest(w http.ResponseWriter, r *http.Request, res *registry.Resource) (runtime.Object, error) {
	mode, err := fieldValidation(r)
	if err != nil {
		return nil, err
	}
	data, mediaType, err := readBody(r, bodyTypes...)
	if err != nil {
		return nil, err
	}
	return decodeInto(res, data, mediaType, mode, w)
}

// decodeInto decodes a request body (JSON, or protobuf when mediaType says
// so) into a new object of res's kind. Unknown or duplicate JSON fields
// fail the request under Strict and become warnings under Warn.
// apiVersion and kind, when present, must be res's.
func decodeInto(res *registry.Resource, data []byte, mediaType, mode string, w http.ResponseWriter) (runtime.Object, error) {
	if res.Custom != nil {
		return decodeCustom(res, data, mediaType, mode, w)
	}
	if mediaType == protobufMediaType {
		return decodeProtobufInto(res, data)
	}
	obj := res.New()
	strictErrs, err := sigsjson.UnmarshalStrict(data, obj, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized or malformed: %v", err))
	}
	if err := strictProblems(errorMessages(strictErrs), mode, w); err != nil {
		return nil, err
	}
	return checkTypeMeta(res, obj)
}

func errorMessages(errs []error) []string {
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return msgs
}

// strictProblems fails a Strict request with the decoding problems, and
// turns them into warnings under Warn.
func strictProblems(msgs []string, mode string, w http.ResponseWriter) error {
	if len(msgs) == 0 {
		return nil
	}
	switch mode {
	case fieldValidationStrict:
		return apierrors.NewBadRequest("strict decoding error: " + strings.Join(msgs, ", "))
	case fieldValidationWarn:
		for _, m := range msgs {
			w.Header().Add("Warning", fmt.Sprintf("299 - %q", m))
		}
	}
	return nil
}

// decodeCustom decodes a custom object and prunes the fields its schema
// does not know; they are reported as unknown fields, as upstream does.
func decodeCustom(res *registry.Resource, data []byte, mediaType, mode string, w http.ResponseWriter) (runtime.Object, error) {
	if mediaType == protobufMediaType {
		return nil, statusError(http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType,
			"custom resources cannot be sent as "+protobufMediaType)
	}
	var m map[string]any
	strictErrs, err := sigsjson.UnmarshalStrict(data, &m, sigsjson.DisallowDuplicateFields)
	if err != nil || m == nil {
		if err == nil {
			err = fmt.Errorf("not a JSON object")
		}
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized or malformed: %v", err))
	}
	obj := &unstructured.Unstructured{Object: m}
	if _, err := checkTypeMeta(res, obj); err != nil {
		return nil, err
	}
	msgs := errorMessages(strictErrs)
	for _, path := range res.Custom.Prune(m) {
		msgs = append(msgs, fmt.Sprintf("unknown field %q", path))
	}
	if err := strictProblems(msgs, mode, w); err != nil {
		return nil, err
	}
	return obj, nil
}

// checkTypeMeta requires apiVersion and kind, when present, to be res's,
// and sets them.
func checkTypeMeta(res *registry.Resource, obj runtime.Object) (runtime.Object, error) {
	ta, err := meta.TypeAccessor(obj)
	if err != nil {
		return nil, err
	}
	if v := ta.GetAPIVersion(); v != "" && v != res.APIVersion() {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", v, res.APIVersion()))
	}
	if k := ta.GetKind(); k != "" && k != res.Kind {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the kind in the data (%s) does not match the expected kind (%s)", k, res.Kind))
	}
	ta.SetAPIVersion(res.APIVersion())
	ta.SetKind(res.Kind)
	return obj, nil
}
