// Package v1alpha1 holds config.porch.kpt.dev/v1alpha1: Repository and
// PackageVariant with their lists, with Porch's JSON. Their CRD manifests
// are under crds/ in this module.
//
// A Repository registers a package repository (git or OCI); its name is the
// spec.repository of the PackageRevisions in it. A PackageVariant keeps a
// downstream package a specialised copy of an upstream revision; its spec
// and status are kept as the JSON they were given, because cad's variant
// package (github.com/configasdata/cad/variant) owns their meaning and
// decodes them (its PackageVariant type has the same JSON), and because that
// keeps fields this module does not know, such as cad's bindings.
//
// The types are plain data: not safe for concurrent mutation, safe to share
// once built. DeepCopy gives a value that shares nothing with the original.
//
// +kubebuilder:object:generate=true
// +groupName=config.porch.kpt.dev
package v1alpha1
