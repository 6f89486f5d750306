package framework

import (
	"sort"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/version"

	"minik/client"
)

// CRDs is the resource of CustomResourceDefinitions.
var CRDs = client.Resource{Group: apiextv1.GroupName, Version: "v1", Resource: "customresourcedefinitions"}

// CustomResource is what a served CRD looks like to the controllers.
type CustomResource struct {
	API  client.Resource
	Kind string
}

// ServedCustomResource picks the version a controller reads an
// established CRD through: its preferred (highest) served version.
func ServedCustomResource(c *apiextv1.CustomResourceDefinition) (CustomResource, bool) {
	if c.DeletionTimestamp != nil && len(c.Finalizers) == 0 || c.Status.AcceptedNames.Plural == "" {
		return CustomResource{}, false
	}
	established := false
	for _, cond := range c.Status.Conditions {
		if cond.Type == apiextv1.Established && cond.Status == apiextv1.ConditionTrue {
			established = true
		}
	}
	var versions []string
	for _, v := range c.Spec.Versions {
		if v.Served {
			versions = append(versions, v.Name)
		}
	}
	if !established || len(versions) == 0 {
		return CustomResource{}, false
	}
	sort.Slice(versions, func(i, j int) bool { return version.CompareKubeAwareVersionStrings(versions[i], versions[j]) > 0 })
	return CustomResource{
		API: client.Resource{Group: c.Spec.Group, Version: versions[0], Resource: c.Status.AcceptedNames.Plural,
			Namespaced: c.Spec.Scope == apiextv1.NamespaceScoped},
		Kind: c.Status.AcceptedNames.Kind,
	}, true
}
