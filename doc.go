// Package cad is configuration as data as a Go library: the core of Porch,
// the package orchestrator of kpt and Nephio, that a controller, a CLI, a
// server or a unit test calls in-process.
//
// A package is a directory of Kubernetes resources (KRM), with or without
// a Kptfile at its root (see "Packages without a Kptfile"). cad keeps packages in repositories (git, OCI, or
// memory), gives every package revision a lifecycle (Draft, Proposed,
// Published, DeletionProposed) with numbered, immutable published
// revisions, and writes the same git layout Porch writes, so repositories
// move between Porch and cad unchanged.
//
// # Getting started
//
// Open a repository, create a draft, commit files, propose and approve it
// (dir is an existing bare git repository; README.md's first program makes
// one):
//
//	repo, err := gitrepo.Open(ctx, cad.Spec{Name: "blueprints", Type: repository.TypeGit,
//		Git: &repository.GitSpec{Repo: dir, Branch: "main", CreateBranch: true}}, nil)
//	key := cad.Key{Package: "net/istio", Workspace: "ws1"}
//	d, err := repo.CreateDraft(ctx, key, repository.CreateDraftOptions{})
//	err = d.SetFile("Kptfile", kptfile)
//	_, err = d.Commit(ctx, revision.CommitOptions{Message: "first draft"})
//	_, err = repo.UpdateLifecycle(ctx, key, cad.LifecycleProposed, repository.UpdateOptions{})
//	pub, err := repo.UpdateLifecycle(ctx, key, cad.LifecyclePublished, repository.UpdateOptions{})
//	// pub.Meta().Key.Revision == 1; in git: tag net/istio/v1 on main.
//
// That is the repository contract alone. Most programs go through an
// *engine.Engine over several repositories instead, which adds package
// operations and rendering. go run ./examples/quickstart shows that: in a
// temporary directory it makes two bare repositories, blueprints and
// deployments, and with one engine initialises a package, edits it (the
// save renders its Kptfile pipeline), publishes it, clones it into
// deployments and specialises the clone, publishes a new upstream
// revision and upgrades the clone by three-way merge, and holds a
// revision back by a dependency readiness gate until a provider is
// published; then it prints the refs each repository holds, as git sees
// them.
//
// # Packages
//
//   - revision: the data model, no I/O. Key, Lifecycle and its allowed
//     transitions, the PackageRevision and Draft interfaces, the package's
//     Files (an fs.FS of validated paths) and the Kptfile, read and written
//     faithfully.
//   - repository: the Repository contract every backend implements, its
//     optional capabilities (Watcher, Versioner), the repository Spec,
//     sentinel errors and the typed *repository.Error.
//   - repository/memrepo: a real in-memory backend for examples and tests.
//   - repository/gitrepo: git through go-git, local, bare, in-memory or
//     remote over https and ssh, in Porch's ref layout.
//   - repository/ocirepo: OCI registries through go-containerregistry, a
//     package revision as an image and lifecycle changes as tags.
//   - repository/repotest: the conformance suite every backend passes, and
//     Intercept for error injection in users' tests.
//   - pipeline: the ResourceList, the Function, Pipeline and Resolver
//     interfaces, and the Kptfile render with the semantics of kpt fn
//     render; pipeline/pipelinetest tests functions against golden
//     directories.
//   - fnruntime: a Registry that resolves pipeline steps to builtin Go
//     implementations of catalog functions, exec functions and container
//     functions; fnruntime/celfn adds CEL conditions, inputs and
//     validation, and fnruntime/stdfn wires both into the standard
//     Kptfile renderer (stdfn.Kptfile), as cad's binaries render.
//   - engine: the concrete *engine.Engine over any set of repositories:
//     init, clone, copy, upgrade (three-way merge), edit with render,
//     propose, approve (with readiness gates), reject, propose deletion,
//     delete, latest.
//   - variant: PackageVariant and PackageVariantSet, synced over the
//     engine without a controller framework.
//   - live: the status of a deployed revision's resources in a Kubernetes
//     cluster (kstatus: Current, InProgress, Failed, NotFound, ...) and a
//     per-package summary, read through a one-method Reader the caller
//     implements over its own client.
//   - deps: package dependencies (required and provided APIs,
//     capabilities and packages) resolved against a deployment
//     repository; engine.Dependencies and engine.CheckDependencies, which
//     turns an unsatisfied requirement into a readiness condition.
//
// # Packages without a Kptfile
//
// kpt is optional: any non-empty directory can be a package. A revision the
// repository registered (written by cad or Porch, or adopted with
// Engine.Adopt) is a package whatever its files; where packages are found by
// scanning, a directory is one when it holds a Kptfile or cad's package file,
// cadpackage.yaml (revision.PackageFileName). A package's upstream, pipeline
// and readiness gates come from the API, else the root Kptfile, else the
// package file; the two files are never merged. DESIGN.md at the root of the
// repository has the rules.
//
// This package itself holds only aliases for the types most programs use
// and [Open], which opens a repository from a Spec with the backends the
// caller supplies; it imports no backend.
//
// # Errors
//
// Backends return a *repository.Error that names the operation, the
// repository and the revision, and wraps a sentinel (repository.ErrNotFound,
// ErrAlreadyExists, ErrConflict, ErrInvalidInput, ErrInvalidTransition,
// ErrImmutable, ErrNotSupported, ErrClosed, ErrUnavailable) together with
// the backend's native cause. Test with errors.Is and errors.As. Bad input
// changes nothing, and no error or log line contains a credential.
//
// # Concurrency
//
// Repositories are safe for concurrent use. Every write is a
// compare-and-swap on the refs it changes: of two writers racing from the
// same state exactly one wins, and the other gets ErrConflict, retries from
// a fresh read, and has left nothing behind. No two approvals get the same
// revision number, across goroutines and across processes sharing one git
// repository. As in Porch, the number is one more than the highest
// revision of the package that exists: deleting the highest published
// revision frees its number for the next approval (upstream locks also
// record the commit, and Engine.Delete refuses a revision that another
// names as upstream). A Draft is used by one goroutine at a time.
//
// # Testing
//
// Use memrepo in unit tests; it behaves like the git backend. Wrap any
// repository with repotest.Intercept to inject failures. A new backend
// proves itself with repotest.Run.
package cad
