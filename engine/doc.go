// Package engine is cad's concrete package engine: the operations Porch's
// server performs on packages, as calls a Go program makes in-process.
//
// An [Engine] is built with [New] over a set of repositories the caller
// provides ([Repositories]; [Repos] is a fixed map), an optional render
// [github.com/configasdata/cad/pipeline.Pipeline], a logger and an author
// identity. It offers:
//
//   - package operations: [Engine.Init] (a new package as kpt pkg init
//     writes it), [Engine.Copy] (a new draft from a published revision of
//     the same package) and [Engine.Update] (replace a draft's files, keeping
//     their resources' comments, render, save);
//   - [Engine.Clone]: a new package from an upstream [CloneSource] (a
//     published revision of any registered repository, git or OCI, or a
//     package in an unregistered git repository), with Kptfile upstream,
//     lock and merge keys (for an upstream without a Kptfile, upstream and
//     lock go into cad's package file, revision.PackageFileName, and no
//     Kptfile is added unless [CloneOptions].Kptfile asks);
//   - [Engine.Upgrade]: a new draft three-way merging local with a new
//     upstream (kpt's update strategies), and [Engine.DiscoverUpgrades],
//     which packages have a newer upstream (porchctl upgrade --discover);
//     for packages cloned from a plain git URL, [Ref].Git upstreams and
//     [Engine.DiscoverGitUpgrades] (newer tags, or a moved branch, listed
//     with an [UpstreamLister]). An upstream in a repository that is not
//     git (OCI, see repository.Locator) is recorded as kpt's generic
//     upstream lock;
//   - Helm charts as upstreams: [CloneSource].Helm clones a package from
//     a chart in a chart repository (index.yaml over HTTP) or an OCI
//     registry, at a version or semver constraint, with values, rendered
//     by a [ChartRenderer]; the package holds the rendered resources, and
//     its upstream and lock (type helm, cad's own: kpt does not know it)
//     record the chart, the version asked for and resolved, the archive's
//     digest, the release name, namespace and values. [Ref].Helm upgrades
//     it to another version and/or other values as a three-way merge like
//     any upstream (original: the locked version rendered with the
//     recorded values), so local edits of rendered resources survive, and
//     [Engine.DiscoverHelmUpgrades] lists newer chart versions with a
//     [ChartLister]. The engine imports no Helm code: module
//     github.com/configasdata/cad/helmfn implements both interfaces
//     (helmfn.Charts) on Helm's SDK;
//   - a record of how each new draft was created (revision.Creation: init
//     with its description, clone with its upstream, copy with its source,
//     upgrade with its upstreams and local revision), passed to the
//     repository with the first commit; gitrepo writes it as the creation
//     task of Porch's kpt: annotation, which Porch's readers need, and
//     every backend that records it returns it as Meta.Creation. It is one
//     record, not a task list: later edits do not add to it;
//   - a [Mutation] on Clone, Copy and Upgrade: the caller's edits applied
//     before the render and the single commit, so that a specialised
//     package is never seen half done (the variant package uses it);
//   - lifecycle: [Engine.Propose], [Engine.Reject], [Engine.Approve] (which
//     assigns the next revision number and refuses while a readiness gate is
//     not satisfied), [Engine.ProposeDelete] and [Engine.Delete] (which,
//     as Porch, refuses a revision another one was cloned from or upgraded
//     to; [Options].ProtectKptfileUpstreams also counts Kptfile upstreams);
//   - readiness: [Engine.UpdateReadiness], [Engine.SetReadinessGates] and
//     [Engine.SetConditions] set readiness gates and conditions of a Draft
//     or Proposed revision as revision data, so that a checker can set a
//     condition on a proposal without touching its files; [Readiness]
//     reads the effective gates and conditions (see "Readiness" below);
//   - [Engine.Adopt]: a revision that points at an existing directory at a
//     commit, tag or branch (repository.Adopter), Published or Draft,
//     without rewriting its files, Kptfile or not;
//   - dependencies: [Engine.Dependencies] resolves what a revision
//     requires against the latest published revisions of its repository
//     (the deps package), and [Engine.CheckDependencies] records the
//     outcome as the readiness condition deps.ConditionType, adding its
//     gate when asked, so that Approve waits for the providers;
//     [Engine.CloneProviders] clones the missing providers from source
//     repositories as drafts;
//   - metadata: [Engine.SetMetadata] and the Metadata of the options of
//     Init, Clone, Copy and Upgrade: labels and annotations kept in the
//     repository beside the revision (repository.MetadataWriter);
//   - queries: [Engine.Get], [Engine.Latest], the latest published revision
//     of a package (never the placeholder), and [Engine.Watch], a stream of
//     changes across repositories;
//   - live status: the status in a Kubernetes cluster of a deployed
//     revision's resources is computed by package
//     github.com/configasdata/cad/live (live.RevisionStatus reads the
//     revision through an Engine), outside this package so that the engine
//     stays free of Kubernetes libraries.
//
// # Readiness
//
// A revision's readiness gates and conditions come from two places: its
// root Kptfile (info.readinessGates, status.conditions: content, as kpt
// and Porch write it), or for a package without a Kptfile cad's package
// file (spec.readinessGates, status.conditions), and its revision data (revision.Metadata's
// ReadinessGates and Conditions, kept by the repository beside the
// revision like labels and annotations). The effective readiness, which
// Approve checks and [Readiness] returns, is their merge
// (revision.Info.WithReadiness): the gates are the union, and a
// revision-level condition overrides the Kptfile's condition of the same
// type.
//
// Revision data can change while the revision is a Draft or Proposed; a
// Published or DeletionProposed revision's readiness is frozen
// (repository.ErrImmutable): it records what the revision was published
// with. Whenever the Engine writes a draft's content (Init, Clone, Copy,
// Upgrade, UpgradeDraft, Update, UpdateReadiness on a Draft, Propose) it
// projects the revision data into the Kptfile (revision.ProjectReadiness),
// before the render, so that kpt, Porch and the functions of the pipeline
// (which see the Kptfile in their ResourceList) see them too; Init, Clone,
// Copy and Upgrade project after their render, so the next render sees
// them. A condition set on a Proposed revision stays revision data only,
// as the content of a proposal is immutable: Porch, reading the
// repository, does not see it. A gate recorded in the Kptfile can only be
// removed by editing a Draft (SetReadinessGates replaces the Kptfile's
// gates too).
//
// Approve's check and the publish are one compare-and-swap against the
// Version it read, which covers the revision data: a condition flipped
// concurrently, by another process too, makes Approve fail with
// repository.ErrConflict, and a retry checks again. No revision is
// published with a gate that was unsatisfied at publish time.
//
// SetMetadata and UpdateOptions.Metadata change labels and annotations
// only, and keep the readiness; the Metadata given to Init, Clone, Copy
// and Upgrade is the new revision's whole revision data, readiness
// included.
//
// # Errors
//
// Errors wrap the repository package's sentinels (repository.ErrNotFound,
// ErrAlreadyExists, ErrConflict, ErrImmutable, ErrInvalidTransition,
// ErrInvalidInput), test them with errors.Is; each message names the
// operation and the revision. Typed errors carry detail: *[GatesError]
// (matching [ErrNotReady]), *[PlaceholderError] and *[ReferencedError]; a
// failed render wraps the *pipeline.RenderError with its results.
//
// # Concurrency
//
// An Engine holds no mutable state and is safe for concurrent use. It takes
// no locks: every write is a compare-and-swap in the repository against
// what the operation read, so two writers never both succeed on the same
// state, whether in one process or many. The loser gets an error matching
// repository.ErrConflict; [RetryOnConflict] retries an operation for
// callers who want that.
//
// # Atomicity
//
// Each operation makes at most one write, so on error the repository is as
// it was: a failed render saves nothing, and Init and Copy render before
// they create the draft. The one exception is Propose with a Pipeline,
// which may save the re-rendered draft before it proposes it; if proposing
// then fails, the revision is still a Draft, with rendered content.
package engine
