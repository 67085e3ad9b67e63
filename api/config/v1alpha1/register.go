package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of this package's kinds.
const GroupName = "config.porch.kpt.dev"

// SchemeGroupVersion is config.porch.kpt.dev/v1alpha1.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

// Kinds and resources of this package.
const (
	KindRepository          = "Repository"
	KindRepositoryList      = "RepositoryList"
	KindPackageVariant      = "PackageVariant"
	KindPackageVariantList  = "PackageVariantList"
	ResourceRepositories    = "repositories"
	ResourcePackageVariants = "packagevariants"
)

// AddToScheme registers Repository, PackageVariant and their lists, and
// the metav1 options kinds, in s under SchemeGroupVersion. It returns nil;
// its error result is that of a runtime.SchemeBuilder function.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion,
		&Repository{}, &RepositoryList{},
		&PackageVariant{}, &PackageVariantList{},
	)
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return nil
}
