package storage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
)

// Objects are stored as Kubernetes stores them: the magic bytes "k8s\x00",
// then a protobuf runtime.Unknown holding apiVersion, kind and the object's
// own protobuf encoding. Protobuf is several times cheaper than JSON to
// encode and decode, and every write is encoded once and decoded again by
// the watch cache. Objects written as JSON by earlier minik versions still
// decode; the next update rewrites them as protobuf.
var storageMagic = []byte("k8s\x00")

// protoObject is what the generated code of every k8s.io/api type offers.
type protoObject interface {
	runtime.Object
	Marshal() ([]byte, error)
	Unmarshal([]byte) error
}

// encode returns the stored form of obj, without its resourceVersion
// (etcd's ModRevision is the resourceVersion).
func (s *Store) encode(obj runtime.Object) ([]byte, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	rv := m.GetResourceVersion()
	m.SetResourceVersion("")
	defer m.SetResourceVersion(rv)
	po, ok := obj.(protoObject)
	if !ok {
		return json.Marshal(obj)
	}
	raw, err := po.Marshal()
	if err != nil {
		return nil, fmt.Errorf("encoding %s for storage: %w", s.gr, err)
	}
	unknown := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: s.gvk.GroupVersion().String(), Kind: s.gvk.Kind}, Raw: raw}
	out := make([]byte, len(storageMagic)+unknown.Size())
	copy(out, storageMagic)
	if _, err := unknown.MarshalToSizedBuffer(out[len(storageMagic):]); err != nil {
		return nil, fmt.Errorf("encoding %s for storage: %w", s.gr, err)
	}
	return out, nil
}

// decode turns stored bytes (protobuf, or JSON from older versions) into a
// new typed object with apiVersion and kind set.
func (s *Store) decode(data []byte) (runtime.Object, error) {
	obj := s.newObj()
	if bytes.HasPrefix(data, storageMagic) {
		var unknown runtime.Unknown
		if err := unknown.Unmarshal(data[len(storageMagic):]); err != nil {
			return nil, fmt.Errorf("decoding %s from storage: %w", s.gr, err)
		}
		po, ok := obj.(protoObject)
		if !ok {
			return nil, fmt.Errorf("decoding %s from storage: %T has no protobuf form", s.gr, obj)
		}
		if err := po.Unmarshal(unknown.Raw); err != nil {
			return nil, fmt.Errorf("decoding %s from storage: %w", s.gr, err)
		}
	} else if err := json.Unmarshal(data, obj); err != nil {
		return nil, fmt.Errorf("decoding %s from storage: %w", s.gr, err)
	}
	obj.GetObjectKind().SetGroupVersionKind(s.gvk)
	return obj, nil
}

// decodeProtobuf is appendItemProtobuf's way for data in no form it
// reads: decode, then encode.
func (s *Store) decodeProtobuf(data []byte, rev int64) ([]byte, error) {
	obj, err := s.Decode(data, rev)
	if err != nil {
		return nil, err
	}
	po, ok := obj.(protoObject)
	if !ok {
		return nil, fmt.Errorf("%s has no protobuf form", s.gr)
	}
	return po.Marshal()
}

// Field numbers the stored protobuf form is read by: runtime.Unknown's
// raw, every top-level kind's metadata, and ObjectMeta's resourceVersion.
const (
	unknownRawField      = 2
	metadataField        = 1
	resourceVersionField = 6
)

// appendItemProtobuf appends the object's own protobuf, as a list item
// carries it, with its resourceVersion set to rev, made from the stored
// bytes without decoding them: the resourceVersion field of the
// metadata (field 1) is replaced, and the metadata's length with it. The
// result is byte for byte what Marshal gives for the decoded object. ok
// is false when data is not in that form (stored as JSON, or not shaped
// as a kind with metadata); the caller then decodes.
func appendItemProtobuf(buf, data []byte, rev int64) (out []byte, ok bool) {
	raw, ok := unknownRaw(data)
	if !ok {
		return buf, false
	}
	num, typ, n := protowire.ConsumeTag(raw)
	if n < 0 || num != metadataField || typ != protowire.BytesType {
		return buf, false
	}
	meta, m := protowire.ConsumeBytes(raw[n:])
	if m < 0 {
		return buf, false
	}
	rest := raw[n+m:]
	// Where the resourceVersion goes in the metadata: in place of the one
	// stored (empty: Marshal writes every string field), or before the
	// first field numbered after it.
	start, end := len(meta), len(meta)
	for at := 0; at < len(meta); {
		num, typ, n := protowire.ConsumeTag(meta[at:])
		if n < 0 {
			return buf, false
		}
		size := protowire.ConsumeFieldValue(num, typ, meta[at+n:])
		if size < 0 {
			return buf, false
		}
		if num >= resourceVersionField {
			start, end = at, at
			if num == resourceVersionField {
				end = at + n + size
			}
			break
		}
		at += n + size
	}
	var rv [20]byte
	rvText := strconv.AppendInt(rv[:0], rev, 10)
	field := protowire.SizeTag(resourceVersionField) + protowire.SizeBytes(len(rvText))
	metaLen := start + field + len(meta) - end
	buf = protowire.AppendTag(buf, metadataField, protowire.BytesType)
	buf = protowire.AppendVarint(buf, uint64(metaLen))
	buf = append(buf, meta[:start]...)
	buf = protowire.AppendTag(buf, resourceVersionField, protowire.BytesType)
	buf = protowire.AppendBytes(buf, rvText)
	buf = append(buf, meta[end:]...)
	return append(buf, rest...), true
}

// unknownRaw returns the object's protobuf from its stored form: the raw
// field of the runtime.Unknown after the magic bytes (with no content
// encoding).
func unknownRaw(data []byte) ([]byte, bool) {
	if !bytes.HasPrefix(data, storageMagic) {
		return nil, false
	}
	var raw []byte
	found := false
	for b := data[len(storageMagic):]; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, false
		}
		b = b[n:]
		size := protowire.ConsumeFieldValue(num, typ, b)
		if size < 0 {
			return nil, false
		}
		switch {
		case num == unknownRawField && typ == protowire.BytesType:
			raw, _ = protowire.ConsumeBytes(b)
			found = true
		case num == 3 && typ == protowire.BytesType: // contentEncoding
			if v, _ := protowire.ConsumeBytes(b); len(v) > 0 {
				return nil, false
			}
		}
		b = b[size:]
	}
	return raw, found
}
