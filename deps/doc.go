// Package deps resolves package dependencies: what a package requires and
// what packages provide, as kpt#3448 asks for.
//
// A package declares its dependencies in cad's package file
// (revision.PackageFileName, cadpackage.yaml), with or without a Kptfile:
//
//	apiVersion: cad.configasdata.dev/v1alpha1
//	kind: Package
//	metadata:
//	  name: web
//	spec:
//	  requires:
//	  - api: {group: cert-manager.io, version: v1, kind: Certificate}  # implicit: whoever provides it
//	  - capability: ingress
//	  - capability: dns
//	    package: {name: external-dns}                                # explicit: pinned provider
//	  - package: {repository: blueprints, name: base, revision: ">=2"} # another package
//	  provides:
//	  - capability: web
//
// A CustomResourceDefinition in a package provides its API (group, kind,
// each served version) without being declared (see
// revision.DependenciesFromFiles).
//
// [Resolve] binds each requirement of one package to providers among a
// universe of packages, normally the latest published revision of every
// package of a deployment repository ([Latest] loads it), and reports
// what is missing, what is ambiguous (several providers: the first in a
// documented order is chosen) and the cycles of requirements. [Result]
// has a String for a terminal and a [Result.Condition] for the readiness
// machinery.
//
// # Enforcement
//
// engine.Engine.Dependencies resolves a revision in its repositories, and
// engine.Engine.CheckDependencies writes the outcome as the readiness
// condition [ConditionType] on a Draft or Proposed revision, adding the
// readiness gate of that type when asked to. A revision with that gate
// (added by CheckDependencies, or declared in its Kptfile or package file)
// cannot be approved until the condition is True, which a later
// CheckDependencies sets once the providers are published.
// engine.Engine.CloneProviders brings the missing providers in: it clones
// the first package of given source repositories (blueprints, catalogs)
// that satisfies each missing requirement into the deployment repository
// as a draft.
//
// # Concurrency
//
// Resolve is a pure function; Results and Packages are plain values.
package deps
