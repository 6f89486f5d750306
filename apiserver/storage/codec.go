package storage

import (
	"bytes"
	"encoding/json"
	"fmt"

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
