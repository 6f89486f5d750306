package defaults

import (
	rbacv1 "k8s.io/api/rbac/v1"
)

// RoleBinding defaults roleRef.apiGroup to rbac.authorization.k8s.io and
// each subject's apiGroup, as upstream's rbac/v1 SetDefaults_RoleBinding
// and SetDefaults_Subject.
func RoleBinding(b *rbacv1.RoleBinding) {
	roleRef(&b.RoleRef)
	subjects(b.Subjects)
}

// ClusterRoleBinding defaults as RoleBinding does.
func ClusterRoleBinding(b *rbacv1.ClusterRoleBinding) {
	roleRef(&b.RoleRef)
	subjects(b.Subjects)
}

func roleRef(r *rbacv1.RoleRef) {
	if r.APIGroup == "" {
		r.APIGroup = rbacv1.GroupName
	}
}

// subjects gives users and groups the RBAC group; a service account keeps
// the core group ("").
func subjects(list []rbacv1.Subject) {
	for i := range list {
		if s := &list[i]; s.APIGroup == "" && (s.Kind == rbacv1.UserKind || s.Kind == rbacv1.GroupKind) {
			s.APIGroup = rbacv1.GroupName
		}
	}
}
