package v1alpha2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of this package's kinds.
const GroupName = "porch.kpt.dev"

// SchemeGroupVersion is porch.kpt.dev/v1alpha2.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha2"}

// Kinds and resource of this package.
const (
	KindPackageRevision      = "PackageRevision"
	KindPackageRevisionList  = "PackageRevisionList"
	ResourcePackageRevisions = "packagerevisions"
)

// Finalizer, labels and annotations with a meaning to the controller.
const (
	// Finalizer is the finalizer the controller puts on every
	// PackageRevision it manages, so that deleting the object of a
	// published revision goes through DeletionProposed before git is
	// touched.
	Finalizer = "porch.kpt.dev/packagerevisions"
	// LatestRevisionLabel is "true" on the Published revision of a package
	// with the highest revision number, and, as Porch does, "false" on a
	// revision that had it and lost it; the controller sets it.
	LatestRevisionLabel = "porch.kpt.dev/latest-revision"
	// RepositoryLabel carries the name of the revision's Repository, so
	// that the revisions of one repository are listed by label.
	RepositoryLabel = "porch.kpt.dev/repository"
)

// Types of the controller's conditions in status.conditions.
const (
	// ConditionReady is True when the object's spec is realised in the
	// repository: the source applied and the lifecycle reached.
	ConditionReady = "Ready"
	// ConditionRendered is True when the last render of the revision's
	// pipeline succeeded.
	ConditionRendered = "Rendered"
)

// Reasons of the controller's conditions.
const (
	ReasonReady        = "Ready"
	ReasonPending      = "Pending"
	ReasonFailed       = "Failed"
	ReasonRendered     = "Rendered"
	ReasonRenderFailed = "RenderFailed"
)

// AddToScheme registers PackageRevision and PackageRevisionList, and the
// metav1 options kinds, in s under SchemeGroupVersion. It returns nil; its
// error result is that of a runtime.SchemeBuilder function.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion, &PackageRevision{}, &PackageRevisionList{})
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return nil
}
