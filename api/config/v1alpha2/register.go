package v1alpha2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of this package's kinds.
const GroupName = "config.porch.kpt.dev"

// SchemeGroupVersion is config.porch.kpt.dev/v1alpha2.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha2"}

// Kinds and resource of this package.
const (
	KindPackageVariantSet      = "PackageVariantSet"
	KindPackageVariantSetList  = "PackageVariantSetList"
	ResourcePackageVariantSets = "packagevariantsets"
)

// AddToScheme registers PackageVariantSet and its list, and the metav1
// options kinds, in s under SchemeGroupVersion. It returns nil; its error
// result is that of a runtime.SchemeBuilder function.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion, &PackageVariantSet{}, &PackageVariantSetList{})
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return nil
}
