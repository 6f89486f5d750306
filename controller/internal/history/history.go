// Package history keeps the ControllerRevisions of StatefulSets and
// DaemonSets: one revision per distinct pod template, numbered in the order
// the templates were last used, as upstream's controller history does.
// `kubectl rollout history` lists them and `kubectl rollout undo` patches
// the owner with a revision's data.
package history

import (
	"cmp"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
)

// HashLabel is the label naming a revision (and, on pods, the revision
// they were made from).
const HashLabel = appsv1.ControllerRevisionHashLabelKey

// Patch returns a revision's data for template: the strategic merge
// patch {"spec":{"template":{..., "$patch":"replace"}}}, which `kubectl
// rollout undo` applies to the owner as it is.
func Patch(template *corev1.PodTemplateSpec) ([]byte, error) {
	raw, err := json.Marshal(template)
	if err != nil {
		return nil, err
	}
	var t map[string]any
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, err
	}
	t["$patch"] = "replace"
	return json.Marshal(map[string]any{"spec": map[string]any{"template": t}})
}

// Template decodes the pod template a revision holds.
func Template(rev *appsv1.ControllerRevision) (*corev1.PodTemplateSpec, error) {
	var p struct {
		Spec struct {
			Template corev1.PodTemplateSpec `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(rev.Data.Raw, &p); err != nil {
		return nil, fmt.Errorf("revision %s: %w", rev.Name, err)
	}
	return &p.Spec.Template, nil
}

// Hash is upstream's HashControllerRevision: FNV-32 over the data, then
// the collision count in decimal, rendered with SafeEncodeString.
func Hash(data []byte, collisionCount *int32) string {
	h := fnv.New32()
	h.Write(data)
	if collisionCount != nil {
		h.Write([]byte(strconv.FormatInt(int64(*collisionCount), 10)))
	}
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// Name is "<prefix>-<hash>", the prefix cut to 223 characters so the name
// stays a valid object name.
func Name(prefix, hash string) string {
	if len(prefix) > 223 {
		prefix = prefix[:223]
	}
	return prefix + "-" + hash
}

// New returns a revision of owner (kind at apiVersion) holding data,
// labelled with the template's labels and hash.
func New(owner metav1.Object, apiVersion, kind, name, hash string, templateLabels map[string]string, data []byte, revision int64) *appsv1.ControllerRevision {
	labels := map[string]string{}
	for k, v := range templateLabels {
		labels[k] = v
	}
	labels[HashLabel] = hash
	t := true
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: owner.GetNamespace(), Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: owner.GetName(),
				UID: owner.GetUID(), Controller: &t, BlockOwnerDeletion: &t}}},
		Data:     runtime.RawExtension{Raw: data},
		Revision: revision,
	}
}

// Want is what Sync should make the newest revision.
type Want struct {
	Owner      metav1.Object
	APIVersion string
	Kind       string
	// Name and Hash of the revision for the current template; Data its
	// content.
	Name, Hash string
	Labels     map[string]string
	Data       []byte
}

// Plan is what Sync decided.
type Plan struct {
	// Update is the revision the owner's template maps to (new or found).
	Update *appsv1.ControllerRevision
	// Create is set when Update must be created; Renumber when an older
	// revision with the same data must become the newest (a rollback).
	Create, Renumber *appsv1.ControllerRevision
	// Collision is true when a revision with Update's name holds other
	// data: the owner's collisionCount must grow and the name be made
	// again.
	Collision bool
}

// Sync finds or makes the revision for want among revs (the owner's).
func Sync(revs []*appsv1.ControllerRevision, want Want) Plan {
	maxRev := int64(0)
	for _, r := range revs {
		maxRev = max(maxRev, r.Revision)
	}
	for _, r := range revs {
		if !equalData(r.Data, want.Data) {
			continue
		}
		if r.Revision == maxRev {
			return Plan{Update: r}
		}
		cp := r.DeepCopy()
		cp.Revision = maxRev + 1
		return Plan{Update: cp, Renumber: cp}
	}
	for _, r := range revs {
		if r.Name == want.Name {
			return Plan{Collision: true}
		}
	}
	rev := New(want.Owner, want.APIVersion, want.Kind, want.Name, want.Hash, want.Labels, want.Data, maxRev+1)
	return Plan{Update: rev, Create: rev}
}

func equalData(a runtime.RawExtension, b []byte) bool {
	if string(a.Raw) == string(b) {
		return true
	}
	// Stored bytes may be re-encoded: compare as JSON values.
	var x, y any
	if json.Unmarshal(a.Raw, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return equality.Semantic.DeepEqual(x, y)
}

// Prune returns the revisions to delete so that at most limit revisions
// that are not live remain, oldest first.
func Prune(revs []*appsv1.ControllerRevision, live map[string]bool, limit int32) []*appsv1.ControllerRevision {
	var old []*appsv1.ControllerRevision
	for _, r := range revs {
		if !live[r.Name] {
			old = append(old, r)
		}
	}
	if len(old) <= int(limit) {
		return nil
	}
	slices.SortFunc(old, func(a, b *appsv1.ControllerRevision) int {
		if a.Revision != b.Revision {
			return cmp.Compare(a.Revision, b.Revision)
		}
		return a.CreationTimestamp.Compare(b.CreationTimestamp.Time)
	})
	return old[:len(old)-int(limit)]
}
