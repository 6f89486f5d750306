package client

import (
	"bytes"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"google.golang.org/protobuf/encoding/protowire"
)

// Kubernetes' protobuf wire format, which minik's components speak by
// default (as Kubernetes' own components do) because it costs both sides
// several times less CPU than JSON:
//
//	object: "k8s\x00" + runtime.Unknown{apiVersion, kind, Raw: the object's protobuf}
//	list:   the same envelope around a List message: metadata = field 1,
//	        items = field 2 (repeated), for every k8s.io/api list type
//	watch:  frames of a 4-byte big-endian length + metav1.WatchEvent whose
//	        object.Raw is an object envelope
const (
	jsonMediaType     = "application/json"
	protobufMediaType = "application/vnd.kubernetes.protobuf"
	// acceptProtobuf still lets the server answer JSON for anything that
	// has no protobuf form.
	acceptProtobuf = protobufMediaType + ", " + jsonMediaType
)

var protobufMagic = []byte("k8s\x00")

// maxProtobufFrame bounds one watch frame, so a corrupt length cannot make
// the client allocate without limit.
const maxProtobufFrame = 64 << 20

type protoMarshaler interface{ Marshal() ([]byte, error) }
type protoUnmarshaler interface{ Unmarshal([]byte) error }

// encodeProtobuf wraps body in the k8s envelope. ok is false when body has
// no protobuf form or no kind to name in the envelope; it then goes as JSON.
func encodeProtobuf(body any) (data []byte, ok bool, err error) {
	pm, isProto := body.(protoMarshaler)
	ro, isObject := body.(runtime.Object)
	if !isProto || !isObject {
		return nil, false, nil
	}
	gvk := ro.GetObjectKind().GroupVersionKind()
	if gvk.Kind == "" {
		return nil, false, nil
	}
	raw, err := pm.Marshal()
	if err != nil {
		return nil, true, fmt.Errorf("client: encode request: %w", err)
	}
	unknown := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind}, Raw: raw}
	out := make([]byte, len(protobufMagic)+unknown.Size())
	copy(out, protobufMagic)
	if _, err := unknown.MarshalToSizedBuffer(out[len(protobufMagic):]); err != nil {
		return nil, true, fmt.Errorf("client: encode request: %w", err)
	}
	return out, true, nil
}

// protoListUnmarshaler is implemented by *List[T].
type protoListUnmarshaler interface {
	unmarshalProtobufList(raw []byte, gvk schema.GroupVersionKind) error
}

// decodeProtobuf decodes an envelope into out: a k8s.io/api object, a
// *List[T] or a *metav1.Status. apiVersion and kind come from the envelope,
// since the protobuf form of an object does not repeat them.
func decodeProtobuf(data []byte, out any) error {
	if !bytes.HasPrefix(data, protobufMagic) {
		return fmt.Errorf("protobuf answer lacks the k8s prefix")
	}
	var unknown runtime.Unknown
	if err := unknown.Unmarshal(data[len(protobufMagic):]); err != nil {
		return err
	}
	gvk := schema.FromAPIVersionAndKind(unknown.APIVersion, unknown.Kind)
	switch o := out.(type) {
	case protoListUnmarshaler:
		return o.unmarshalProtobufList(unknown.Raw, gvk)
	case protoUnmarshaler:
		if err := o.Unmarshal(unknown.Raw); err != nil {
			return err
		}
		if ro, ok := out.(runtime.Object); ok {
			ro.GetObjectKind().SetGroupVersionKind(gvk)
		}
		return nil
	default:
		return fmt.Errorf("%T has no protobuf form", out)
	}
}

// unmarshalProtobufList reads a k8s.io/api List message field by field:
// the list metadata and each item, decoded straight into T.
func (l *List[T]) unmarshalProtobufList(raw []byte, gvk schema.GroupVersionKind) error {
	l.APIVersion, l.Kind = gvk.GroupVersion().String(), gvk.Kind
	defer l.fillItemKinds()
	for len(raw) > 0 {
		num, typ, n := protowire.ConsumeTag(raw)
		if n < 0 {
			return protowire.ParseError(n)
		}
		raw = raw[n:]
		if typ != protowire.BytesType {
			n = protowire.ConsumeFieldValue(num, typ, raw)
			if n < 0 {
				return protowire.ParseError(n)
			}
			raw = raw[n:]
			continue
		}
		field, n := protowire.ConsumeBytes(raw)
		if n < 0 {
			return protowire.ParseError(n)
		}
		raw = raw[n:]
		switch num {
		case 1:
			if err := l.ListMeta.Unmarshal(field); err != nil {
				return fmt.Errorf("list metadata: %w", err)
			}
		case 2:
			var item T
			if err := any(&item).(protoUnmarshaler).Unmarshal(field); err != nil {
				return fmt.Errorf("list item %d: %w", len(l.Items), err)
			}
			l.Items = append(l.Items, item)
		}
	}
	return nil
}

// decodeProtobufStatus reads a Status answer; ok is false if data is not one.
func decodeProtobufStatus(data []byte) (st metav1.Status, ok bool) {
	if err := decodeProtobuf(data, &st); err != nil || st.Kind != "Status" {
		return st, false
	}
	return st, true
}
