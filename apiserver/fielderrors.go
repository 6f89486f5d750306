package apiserver

import "k8s.io/apimachinery/pkg/util/validation/field"

func fieldRequired(path string) field.ErrorList {
	return field.ErrorList{field.Required(field.NewPath(path), "")}
}

func fieldInvalid(path string, value any, msg string) field.ErrorList {
	return field.ErrorList{field.Invalid(field.NewPath(path), value, msg)}
}
