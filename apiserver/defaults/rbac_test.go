package defaults

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestRBACBindings(t *testing.T) {
	ref := func(group string) rbacv1.RoleRef {
		return rbacv1.RoleRef{APIGroup: group, Kind: "ClusterRole", Name: "view"}
	}
	subject := func(kind, group string) rbacv1.Subject { return rbacv1.Subject{Kind: kind, APIGroup: group, Name: "x"} }
	tests := []struct {
		name string
		in   runtime.Object
		want runtime.Object
	}{
		{
			name: "a role binding without a roleRef group gets RBAC's, its users and groups too, a service account none",
			in: &rbacv1.RoleBinding{RoleRef: ref(""), Subjects: []rbacv1.Subject{
				subject(rbacv1.UserKind, ""), subject(rbacv1.GroupKind, ""), subject(rbacv1.ServiceAccountKind, "")}},
			want: &rbacv1.RoleBinding{RoleRef: ref(rbacv1.GroupName), Subjects: []rbacv1.Subject{
				subject(rbacv1.UserKind, rbacv1.GroupName), subject(rbacv1.GroupKind, rbacv1.GroupName), subject(rbacv1.ServiceAccountKind, "")}},
		},
		{
			name: "a cluster role binding is defaulted the same way",
			in:   &rbacv1.ClusterRoleBinding{RoleRef: ref(""), Subjects: []rbacv1.Subject{subject(rbacv1.UserKind, "")}},
			want: &rbacv1.ClusterRoleBinding{RoleRef: ref(rbacv1.GroupName), Subjects: []rbacv1.Subject{subject(rbacv1.UserKind, rbacv1.GroupName)}},
		},
		{
			name: "groups the client set are kept, for validation to judge",
			in:   &rbacv1.RoleBinding{RoleRef: ref("example.com"), Subjects: []rbacv1.Subject{subject(rbacv1.UserKind, "example.com")}},
			want: &rbacv1.RoleBinding{RoleRef: ref("example.com"), Subjects: []rbacv1.Subject{subject(rbacv1.UserKind, "example.com")}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			Object(tt.in)
			assertEqual(t, tt.want, tt.in)
		})
	}
}
