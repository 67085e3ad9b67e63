// Package v1alpha1 holds porch.kpt.dev/v1alpha1: PackageRevision,
// PackageRevisionResources and their lists, with Porch's JSON, so that data
// and clients move between Porch and cad unchanged.
//
// These kinds are served by an aggregated API server (Porch's, or cad's
// reference server in examples/server), not stored as custom resources:
// this package has no CRD manifest. A PackageRevision (and its
// PackageRevisionResources) is named
//
//	<repository>.<package path with "/" replaced by ".">.<workspace>
//
// for example "blueprints.net.istio.ws1". cad keeps no task list: a
// PackageRevision is created from the single creation task of spec.tasks.
//
// The types are plain data: not safe for concurrent mutation, safe to share
// once built. DeepCopy gives a value that shares nothing with the original.
//
// +kubebuilder:object:generate=true
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=com.github.configasdata.cad.api.porch.v1alpha1
// +groupName=porch.kpt.dev
package v1alpha1
