// Package v1alpha2 holds porch.kpt.dev/v1alpha2 PackageRevision, the
// package revision as a custom resource, in the shape Porch's v1alpha2 CRD
// gives it. Its CRD manifest is crds/porch.kpt.dev_packagerevisions.yaml in
// this module.
//
// A PackageRevision object points into a repository: the revision's content
// and lifecycle live in git (or OCI), and the object is the handle through
// which a controller acts on them. cad's operator (examples/operator)
// reconciles these objects:
//
//   - spec.source (exactly one of init, cloneFrom, copyFrom, upgrade;
//     immutable) creates the revision once, through cad's engine;
//   - spec.lifecycle drives the transitions Draft → Proposed → Published →
//     DeletionProposed (and back from Proposed to Draft, and from
//     DeletionProposed to Published); approval waits until every readiness
//     gate's condition is True in status.packageConditions;
//   - the status reports what git holds: revision, upstreamLock, selfLock,
//     publishedBy/At, creationSource, packageConditions (the Kptfile's
//     conditions), and the controller's own Ready and Rendered conditions
//     with observedGeneration;
//   - deleting the object deletes a Draft, Proposed or DeletionProposed
//     revision from git; as in Porch, the object of a Published revision
//     stays (marked for deletion) until its spec.lifecycle is
//     DeletionProposed.
//
// The CRD declares the selectable fields Porch's clients select on:
// spec.packageName, spec.repository, spec.workspaceName, spec.lifecycle
// and status.revision.
//
// The object of a revision is named as in v1alpha1:
// <repository>.<package path with "/" replaced by ".">.<workspace>.
//
// The types are plain data: not safe for concurrent mutation, safe to share
// once built. DeepCopy gives a value that shares nothing with the original.
//
// +kubebuilder:object:generate=true
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=com.github.configasdata.cad.api.porch.v1alpha2
// +groupName=porch.kpt.dev
package v1alpha2
