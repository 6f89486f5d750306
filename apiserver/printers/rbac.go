package printers

import (
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

var roleColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Created At", Type: "date", Description: objectMetaDoc["creationTimestamp"]},
}

var roleBindingColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Role", Type: "string", Description: rbacv1.RoleBinding{}.SwaggerDoc()["roleRef"]},
	ageColumn,
	{Name: "Users", Type: "string", Priority: 1, Description: "Users in the roleBinding"},
	{Name: "Groups", Type: "string", Priority: 1, Description: "Groups in the roleBinding"},
	{Name: "ServiceAccounts", Type: "string", Priority: 1, Description: "ServiceAccounts in the roleBinding"},
}

// roleRow prints NAME CREATED-AT for Roles and ClusterRoles.
func roleRow(obj runtime.Object, _ time.Time) (metav1.TableRow, error) {
	var m metav1.ObjectMeta
	switch o := obj.(type) {
	case *rbacv1.Role:
		m = o.ObjectMeta
	case *rbacv1.ClusterRole:
		m = o.ObjectMeta
	}
	return row(m.Name, m.CreationTimestamp.UTC().Format(time.RFC3339)), nil
}

// roleBindingRow prints NAME ROLE AGE USERS GROUPS SERVICEACCOUNTS, the
// role as Kind/name.
func roleBindingRow(obj runtime.Object, now time.Time) (metav1.TableRow, error) {
	var m metav1.ObjectMeta
	var ref rbacv1.RoleRef
	var subjects []rbacv1.Subject
	switch o := obj.(type) {
	case *rbacv1.RoleBinding:
		m, ref, subjects = o.ObjectMeta, o.RoleRef, o.Subjects
	case *rbacv1.ClusterRoleBinding:
		m, ref, subjects = o.ObjectMeta, o.RoleRef, o.Subjects
	}
	var users, groups, sas []string
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.UserKind:
			users = append(users, s.Name)
		case rbacv1.GroupKind:
			groups = append(groups, s.Name)
		case rbacv1.ServiceAccountKind:
			sas = append(sas, s.Namespace+"/"+s.Name)
		}
	}
	return row(m.Name, ref.Kind+"/"+ref.Name, since(m.CreationTimestamp.Time, now),
		strings.Join(users, ", "), strings.Join(groups, ", "), strings.Join(sas, ", ")), nil
}
