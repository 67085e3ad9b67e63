package porchapi

import (
	configv1alpha1 "github.com/configasdata/cad/api/config/v1alpha1"
	configv1alpha2 "github.com/configasdata/cad/api/config/v1alpha2"
	porchv1alpha1 "github.com/configasdata/cad/api/porch/v1alpha1"
)

// API groups and versions served.
const (
	// Group is the group of PackageRevision and PackageRevisionResources.
	Group = porchv1alpha1.GroupName
	// ConfigGroup is the group of Repository, PackageVariant and
	// PackageVariantSet.
	ConfigGroup = configv1alpha1.GroupName
	// Version is the version of every kind but PackageVariantSet.
	Version = "v1alpha1"
	// VariantSetVersion is the version PackageVariantSet is served in.
	VariantSetVersion = "v1alpha2"
)

// Kinds of the objects in this package.
const (
	KindPackageRevision              = porchv1alpha1.KindPackageRevision
	KindPackageRevisionList          = porchv1alpha1.KindPackageRevisionList
	KindPackageRevisionResources     = porchv1alpha1.KindPackageRevisionResources
	KindPackageRevisionResourcesList = porchv1alpha1.KindPackageRevisionResourcesList
	KindRepository                   = configv1alpha1.KindRepository
	KindRepositoryList               = configv1alpha1.KindRepositoryList
	KindPackageVariant               = configv1alpha1.KindPackageVariant
	KindPackageVariantList           = configv1alpha1.KindPackageVariantList
	KindPackageVariantSet            = configv1alpha2.KindPackageVariantSet
	KindPackageVariantSetList        = configv1alpha2.KindPackageVariantSetList
)

// Resource names (the plural path segment of the REST API).
const (
	ResourcePackageRevisions         = porchv1alpha1.ResourcePackageRevisions
	ResourcePackageRevisionResources = porchv1alpha1.ResourcePackageRevisionResources
	ResourceRepositories             = configv1alpha1.ResourceRepositories
	ResourcePackageVariants          = configv1alpha1.ResourcePackageVariants
	ResourcePackageVariantSets       = configv1alpha2.ResourcePackageVariantSets
	// SubresourceApproval is the subresource of packagerevisions through
	// which a proposal is approved or rejected.
	SubresourceApproval = porchv1alpha1.SubresourceApproval
)

// Group versions, for building TypeMeta and REST paths.
var (
	// SchemeGroupVersion is porch.kpt.dev/v1alpha1.
	SchemeGroupVersion = porchv1alpha1.SchemeGroupVersion
	// ConfigGroupVersion is config.porch.kpt.dev/v1alpha1.
	ConfigGroupVersion = configv1alpha1.SchemeGroupVersion
	// VariantSetGroupVersion is config.porch.kpt.dev/v1alpha2.
	VariantSetGroupVersion = configv1alpha2.SchemeGroupVersion
)

// Labels and annotations with a meaning to the server.
const (
	// LatestRevisionLabel is set to "true", by the server only, on the
	// Published revision of a package with the highest revision number.
	LatestRevisionLabel = porchv1alpha1.LatestRevisionLabel
	// LatestRevisionValue is the value of LatestRevisionLabel.
	LatestRevisionValue = porchv1alpha1.LatestRevisionValue
	// PushOnRenderFailureAnnotation set to "true" on a PackageRevision
	// saves its resources even when the render fails.
	PushOnRenderFailureAnnotation = porchv1alpha1.PushOnRenderFailureAnnotation
)
