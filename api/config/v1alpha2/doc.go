// Package v1alpha2 holds config.porch.kpt.dev/v1alpha2 PackageVariantSet
// and its list, with Porch's JSON. Its CRD manifest is under crds/ in this
// module.
//
// A PackageVariantSet unrolls one upstream and a set of targets into
// PackageVariants. Its spec and status are kept as the JSON they were
// given, as PackageVariant's are (see config/v1alpha1): cad's variant
// package owns their meaning and decodes them.
//
// The types are plain data: not safe for concurrent mutation, safe to share
// once built. DeepCopy gives a value that shares nothing with the original.
//
// +kubebuilder:object:generate=true
// +groupName=config.porch.kpt.dev
package v1alpha2
