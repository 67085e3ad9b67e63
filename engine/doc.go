// Package engine is cad's concrete package engine: the operations Porch's
// server performs on packages, as calls a Go program makes in-process.
//
// An [Engine] is built with [New] over a set of repositories the caller
// provides ([Repositories]; [Repos] is a fixed map), an optional render
// [github.com/configasdata/cad/pipeline.Pipeline], a logger and an author
// identity ([Options]). The runnable Example creates, edits, proposes and
// approves a package on memrepo; the Engine's methods have examples of
// their own. It offers:
//
//   - new packages and drafts: [Engine.Init], [Engine.Copy] (from a
//     published revision of the same package), [Engine.Clone] (from a
//     [CloneSource]: a revision of any registered repository, a package in
//     a plain git repository, or a Helm chart rendered by a
//     [ChartRenderer]) and [Engine.Update] (replace a draft's files,
//     render, save); a [Mutation] on Clone, Copy and Upgrade applies the
//     caller's edits before the render and the single commit;
//   - upgrades: [Engine.Upgrade] and [Engine.UpgradeDraft] (a three-way
//     merge with a new upstream, kpt's strategies), [Engine.DiscoverUpgrades],
//     [Engine.DiscoverGitUpgrades] and [Engine.DiscoverHelmUpgrades];
//   - lifecycle: [Engine.Propose], [Engine.Reject], [Engine.Approve] (the
//     next revision number, refused while a readiness gate is not
//     satisfied), [Engine.ProposeDelete], [Engine.Delete] (refused for a
//     revision another was cloned from or upgraded to) and [Engine.Adopt];
//   - readiness and metadata: [Engine.UpdateReadiness],
//     [Engine.SetReadinessGates], [Engine.SetConditions],
//     [Engine.SetMetadata], and [Readiness], the effective gates and
//     conditions (the Kptfile's merged with the revision data);
//   - dependencies: [Engine.Dependencies], [Engine.CheckDependencies] and
//     [Engine.CloneProviders] (package deps);
//   - queries: [Engine.Get], [Engine.List], [Engine.Latest] and
//     [Engine.Watch] across repositories.
//
// Live status of deployed resources is package
// github.com/configasdata/cad/live; Helm's SDK is module
// github.com/configasdata/cad/helmfn. The engine imports neither.
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
// # Concurrency and atomicity
//
// An Engine holds no mutable state and is safe for concurrent use. It takes
// no locks: every write is a compare-and-swap in the repository against
// what the operation read, so two writers never both succeed on the same
// state, in one process or many; the loser gets repository.ErrConflict,
// and [RetryOnConflict] retries for callers who want that. Each operation
// makes at most one write, so on error the repository is as it was; the
// one exception is Propose with a Pipeline, which may save the re-rendered
// draft before it proposes it.
//
// Each operation in detail (creation records, Helm upstreams), where
// readiness comes from and when it is frozen, and how Approve checks it
// atomically with the publish are in engine/DESIGN.md in the repository.
package engine
