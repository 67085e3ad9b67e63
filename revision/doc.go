// Package revision is cad's data model for package revisions. It does no I/O.
//
// A package is a directory of files, usually Kubernetes resources, with or
// without a Kptfile at its root. A package revision is one version of a package in one
// repository, identified by a [Key] and in one [Lifecycle] state. The
// numbering follows Porch: drafts and proposals have revision 0, published
// revisions are numbered 1, 2, ... and the package as it stands on the
// repository's branch is the placeholder revision -1.
//
// A [PackageRevision] is an immutable view of a revision; a [Draft] is a
// mutable overlay over one that becomes visible only when committed. Both
// expose the package content as [Files], an immutable value that implements
// [io/fs.FS] and only ever holds safe, package-relative paths.
//
// Backends do not have to implement the interfaces from scratch: [New] builds
// a PackageRevision from its [Meta] and a loader of its files, and
// [NewDraft] builds a Draft from its base files and a commit function.
//
// [Metadata] is what a repository keeps beside a revision rather than in
// its files: labels, annotations, and the revision-level readiness gates
// and conditions, which [Info.WithReadiness] merges with the Kptfile's and
// [ProjectReadiness] writes into it. [Creation] records how a revision was
// created (init, clone, copy, upgrade), the one fact of Porch's task list
// that cad keeps.
//
// [Kptfile] models the kpt.dev/v1 Kptfile, read and written faithfully:
// comments and field order survive a round trip. A package needs no
// Kptfile: [PackageFile] is cad's own small resource (cadpackage.yaml,
// cad.configasdata.dev/v1alpha1 Package) that records the upstream, lock,
// pipeline and readiness of a package without one; a Kptfile, when there
// is one, wins (see [InfoFromFiles]). The package file also holds a
// package's [Dependencies] (spec.requires, spec.provides), with or
// without a Kptfile; [DependenciesFromFiles] reads them and adds the APIs
// the package's CustomResourceDefinitions provide.
//
// User YAML is hostile until measured: [CheckYAML] holds a file to
// [YAMLLimits] (size, documents, nesting, nodes, the nodes its aliases
// and merge keys expand to, keys of one mapping) without expanding
// anything, and returns a [*YAMLLimitError] matching [ErrInvalid] for a
// file over a bound. The Kptfile and package file parsers apply it, and
// so do the engine and the pipeline to every YAML file they are given.
package revision
