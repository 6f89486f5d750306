package apiserver

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
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
	obj, err := decodeInto(res, data, mediaType, mode, w)
	return obj, requestBodyError(res, data, err)
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
		return nil, malformed(err)
	}
	if err := strictProblems(errorMessages(strictErrs), mode, w); err != nil {
		return nil, err
	}
	return checkTypeMeta(res, obj)
}

// bodyError is a JSON body that did not decode into its kind (decodeErr
// says why), or that named unknown or duplicate fields under Strict: a
// 400 in the decoder's words, which callers word as kube-apiserver does
// for a request body (requestBodyError) or a patch (patchError).
type bodyError struct {
	*apierrors.StatusError
	decodeErr error
}

func malformed(err error) error {
	return &bodyError{StatusError: apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized or malformed: %v", err)), decodeErr: err}
}

// requestBodyError is kube-apiserver's 400 for a request body that does
// not decode into res's kind (its transformDecodeError): "Pod in version
// "v1" cannot be handled as a Pod: strict decoding error: unknown field
// "spec.bogus"", naming the kind and version the body gives (res's where
// it gives none); a body that is not JSON at all is "unrecognized", with
// its start. Other errors are returned as they are.
func requestBodyError(res *registry.Resource, data []byte, err error) error {
	var be *bodyError
	if !errors.As(err, &be) {
		return err
	}
	var tm metav1.TypeMeta
	if jsonErr := json.Unmarshal(data, &tm); jsonErr != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): couldn't get version/kind; json parse error: %v (%s)",
			res.Kind, jsonErr, summarizeBody(data, 30)))
	}
	kind, version := res.Kind, res.Version
	if tm.Kind != "" {
		kind = tm.Kind
	}
	if gv, err := schema.ParseGroupVersion(tm.APIVersion); err == nil && gv.Version != "" {
		version = gv.Version
	}
	why := be.ErrStatus.Message
	if be.decodeErr != nil {
		why = be.decodeErr.Error()
	}
	return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %s", kind, version, res.Kind, why))
}

// patchError is kube-apiserver's answer to a patched object that does not
// decode: unknown fields under Strict stay a 400, and a value of the
// wrong type is a 422 on the patch.
func patchError(patched []byte, err error) error {
	var be *bodyError
	if !errors.As(err, &be) || be.decodeErr == nil {
		return err
	}
	return apierrors.NewInvalid(schema.GroupKind{}, "", field.ErrorList{field.Invalid(field.NewPath("patch"), string(patched), be.decodeErr.Error())})
}

// summarizeBody is the start of a body for an error message.
func summarizeBody(data []byte, max int) string {
	switch {
	case len(data) == 0:
		return "<empty>"
	case data[0] == '{':
		if len(data) > max {
			return string(data[:max]) + " ..."
		}
		return string(data)
	case len(data) > max:
		return hex.EncodeToString(data[:max]) + " ..."
	default:
		return hex.EncodeToString(data)
	}
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
		return &bodyError{StatusError: apierrors.NewBadRequest("strict decoding error: " + strings.Join(msgs, ", "))}
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
		return nil, malformed(err)
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
