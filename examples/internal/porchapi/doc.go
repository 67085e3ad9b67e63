// Package porchapi connects Porch's API types to cad: the types themselves
// (porch.kpt.dev/v1alpha1 PackageRevision and PackageRevisionResources,
// config.porch.kpt.dev/v1alpha1 Repository and PackageVariant, and
// config.porch.kpt.dev/v1alpha2 PackageVariantSet) live in the api module,
// github.com/configasdata/cad/api, and are aliased here under the names the
// server and the CLI use.
//
// This package holds the conversions between them and cad's revision,
// repository, engine and variant types (functions, since the types are not
// local: MetadataOf, CreationTask, RepositoryToSpec, TypedVariant,
// ...), and Porch's object naming: a PackageRevision
// (and its PackageRevisionResources) is named
//
//	<repository>.<package path with "/" replaced by ".">.<workspace>
//
// for example "blueprints.net.istio.ws1" for package net/istio, workspace
// ws1 of repository blueprints. Repository names, package path segments and
// workspaces are DNS-1123 labels, which hold no dots, so a name resolves back
// unambiguously (ParseName). The placeholder revision of a package (the
// package as it stands on the repository's branch, revision -1) has the
// branch name as its workspace: "blueprints.net.istio.main".
//
// What cad stores differs from Porch in one respect that shows in these
// types: cad keeps no task list. A PackageRevision is created from the single
// creation task of spec.tasks (init, clone, edit or upgrade), which is not
// stored; objects read back carry no tasks.
//
// The package is used by the reference server (examples/server) and the CLI
// (examples/cadctl). It is internal to the examples module and does no I/O.
// The values are plain data: not safe for concurrent mutation, safe to share
// once built.
package porchapi
