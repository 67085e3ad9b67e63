// Package v1alpha1 holds config.porch.kpt.dev/v1alpha1: Repository and
// PackageVariant with their lists, with Porch's JSON. Their CRD manifests
// are under crds/ in this module.
//
// A Repository registers a package repository (git or OCI); its name is the
// spec.repository of the PackageRevisions in it. A PackageVariant keeps a
// downstream package a specialised copy of an upstream revision. Its
// fields are typed here, with the JSON of Porch's (and of cad's variant
// package, github.com/configasdata/cad/variant, which syncs it and whose
// PackageVariant type decodes the same JSON); cad's bindings are a cad
// extension of the spec.
//
// The types are plain data: not safe for concurrent mutation, safe to share
// once built. DeepCopy gives a value that shares nothing with the original.
//
// +kubebuilder:object:generate=true
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=com.github.configasdata.cad.api.config.v1alpha1
// +groupName=config.porch.kpt.dev
package v1alpha1
