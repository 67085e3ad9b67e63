package porchapi

import "k8s.io/apimachinery/pkg/runtime/schema"

// API groups and versions served.
const (
	// Group is the group of PackageRevision and PackageRevisionResources.
	Group = "porch.kpt.dev"
	// ConfigGroup is the group of Repository, PackageVariant and
	// PackageVariantSet.
	ConfigGroup = "config.porch.kpt.dev"
	// Version is the version of every kind but PackageVariantSet.
	Version = "v1alpha1"
	// VariantSetVersion is the version PackageVariantSet is served in.
	VariantSetVersion = "v1alpha2"
)

// Kinds of the objects in this package.
const (
	KindPackageRevision              = "PackageRevision"
	KindPackageRevisionList          = "PackageRevisionList"
	KindPackageRevisionResources     = "PackageRevisionResources"
	KindPackageRevisionResourcesList = "PackageRevisionResourcesList"
	KindRepository                   = "Repository"
	KindRepositoryList               = "RepositoryList"
	KindPackageVariant               = "PackageVariant"
	KindPackageVariantList           = "PackageVariantList"
	KindPackageVariantSet            = "PackageVariantSet"
	KindPackageVariantSetList        = "PackageVariantSetList"
)

// Resource names (the plural path segment of the REST API).
const (
	ResourcePackageRevisions         = "packagerevisions"
	ResourcePackageRevisionResources = "packagerevisionresources"
	ResourceRepositories             = "repositories"
	ResourcePackageVariants          = "packagevariants"
	ResourcePackageVariantSets       = "packagevariantsets"
	// SubresourceApproval is the subresource of packagerevisions through
	// which a proposal is approved or rejected.
	SubresourceApproval = "approval"
)

// Group versions, for building TypeMeta and REST paths.
var (
	// SchemeGroupVersion is porch.kpt.dev/v1alpha1.
	SchemeGroupVersion = schema.GroupVersion{Group: Group, Version: Version}
	// ConfigGroupVersion is config.porch.kpt.dev/v1alpha1.
	ConfigGroupVersion = schema.GroupVersion{Group: ConfigGroup, Version: Version}
	// VariantSetGroupVersion is config.porch.kpt.dev/v1alpha2.
	VariantSetGroupVersion = schema.GroupVersion{Group: ConfigGroup, Version: VariantSetVersion}
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
