package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of this package's kinds.
const GroupName = "porch.kpt.dev"

// SchemeGroupVersion is porch.kpt.dev/v1alpha1.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

// Kinds of this package.
const (
	KindPackageRevision              = "PackageRevision"
	KindPackageRevisionList          = "PackageRevisionList"
	KindPackageRevisionResources     = "PackageRevisionResources"
	KindPackageRevisionResourcesList = "PackageRevisionResourcesList"
)

// Resource names (the plural path segment of the REST API).
const (
	ResourcePackageRevisions         = "packagerevisions"
	ResourcePackageRevisionResources = "packagerevisionresources"
	// SubresourceApproval is the subresource of packagerevisions through
	// which a proposal is approved or rejected.
	SubresourceApproval = "approval"
)

// Labels and annotations with a meaning to the server.
const (
	// LatestRevisionLabel is set to "true", by the server only, on the
	// Published revision of a package with the highest revision number.
	LatestRevisionLabel = "kpt.dev/latest-revision"
	// LatestRevisionValue is the value of LatestRevisionLabel.
	LatestRevisionValue = "true"
	// PushOnRenderFailureAnnotation set to "true" on a PackageRevision
	// saves its resources even when the render fails.
	PushOnRenderFailureAnnotation = "porch.kpt.dev/push-on-render-failure"
)

// AddToScheme registers this package's kinds, and the metav1 options kinds,
// in s under SchemeGroupVersion. It returns an error only when s already
// holds a different type under one of these kinds.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion,
		&PackageRevision{}, &PackageRevisionList{},
		&PackageRevisionResources{}, &PackageRevisionResourcesList{},
	)
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return nil
}
