package history

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

var owner = &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "kv", Namespace: "default", UID: "uid"}}

func template(image string) *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "kv"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "kv", Image: image}}}}
}

func want(image string, collisions *int32) Want {
	data, _ := Patch(template(image))
	h := Hash(data, collisions)
	return Want{Owner: owner, APIVersion: "apps/v1", Kind: "StatefulSet", Name: Name("kv", h), Hash: h, Labels: map[string]string{"app": "kv"}, Data: data}
}

func rev(w Want, n int64) *appsv1.ControllerRevision {
	return New(w.Owner, w.APIVersion, w.Kind, w.Name, w.Hash, w.Labels, w.Data, n)
}

func TestSync(t *testing.T) {
	v1, v2 := want("kv:1", nil), want("kv:2", nil)
	cases := []struct {
		name                        string
		revs                        []*appsv1.ControllerRevision
		want                        Want
		create, renumber, collision bool
		wantRevision                int64
	}{
		{name: "the first template makes revision 1", want: v1, create: true, wantRevision: 1},
		{name: "the newest revision with the same data is reused", revs: []*appsv1.ControllerRevision{rev(v1, 1)}, want: v1, wantRevision: 1},
		{name: "a new template makes the next revision", revs: []*appsv1.ControllerRevision{rev(v1, 1)}, want: v2, create: true, wantRevision: 2},
		{name: "going back to an older template renumbers its revision as the newest",
			revs: []*appsv1.ControllerRevision{rev(v1, 1), rev(v2, 2)}, want: v1, renumber: true, wantRevision: 3},
		{name: "a revision of that name with other data is a collision",
			revs: []*appsv1.ControllerRevision{func() *appsv1.ControllerRevision { r := rev(v1, 1); r.Name = v2.Name; return r }()},
			want: v2, collision: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := Sync(tc.revs, tc.want)
			if (p.Create != nil) != tc.create || (p.Renumber != nil) != tc.renumber || p.Collision != tc.collision {
				t.Fatalf("plan %+v", p)
			}
			if !tc.collision && p.Update.Revision != tc.wantRevision {
				t.Errorf("revision %d, want %d", p.Update.Revision, tc.wantRevision)
			}
		})
	}
}

func TestPatchRoundTripsAndHashIsStable(t *testing.T) {
	w := want("kv:1", nil)
	got, err := Template(rev(w, 1))
	if err != nil || got.Spec.Containers[0].Image != "kv:1" {
		t.Fatalf("template %+v, %v", got, err)
	}
	if Hash(w.Data, nil) == Hash(w.Data, ptr.To[int32](1)) {
		t.Error("the collision count does not change the hash")
	}
	if string(w.Data[:31]) != `{"spec":{"template":{"$patch":"` {
		t.Errorf("data starts %s", w.Data[:31])
	}
}

func TestPruneKeepsLiveAndNewest(t *testing.T) {
	var revs []*appsv1.ControllerRevision
	for i := int64(1); i <= 5; i++ {
		revs = append(revs, &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: string(rune('a' + i))}, Revision: i})
	}
	got := Prune(revs, map[string]bool{"b": true, "f": true}, 2) // b=1 and f=5 live
	if len(got) != 1 || got[0].Name != "c" {
		t.Errorf("pruned %v, want only c (revision 2)", got)
	}
}
