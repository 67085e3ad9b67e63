// Package v1alpha2 holds config.porch.kpt.dev/v1alpha2 PackageVariantSet
// and its list, with Porch's JSON. Its CRD manifest is under crds/ in this
// module.
//
// A PackageVariantSet unrolls one upstream and a set of targets into
// PackageVariants through a template whose *Expr fields are CEL
// expressions. It shares the upstream, pipeline and binding types of
// config/v1alpha1; cad's variant package unrolls and syncs it.
//
// The types are plain data: not safe for concurrent mutation, safe to share
// once built. DeepCopy gives a value that shares nothing with the original.
//
// +kubebuilder:object:generate=true
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=com.github.configasdata.cad.api.config.v1alpha2
// +groupName=config.porch.kpt.dev
package v1alpha2
