// Package variant keeps downstream packages specialised copies of an
// upstream: Porch's PackageVariant and PackageVariantSet, as a
// framework-free, idempotent sync over an Engine (an *engine.Engine, or a
// wrapper of one).
//
// A [PackageVariant] (Porch's config.porch.kpt.dev/v1alpha1 JSON; read it
// with [Decode] or [DecodeLimits], check it with [Validate]) names an
// upstream package revision and a downstream package. [Sync] makes the
// downstream match the spec and returns a [Result]: what it did (created,
// upgraded, copied, updated, adopted, deleted, orphaned or unchanged), the
// draft or revision it stands for, and Porch's Stalled and Ready
// conditions. Calling Sync again with nothing changed writes nothing. Sync
// never proposes or approves: publishing stays the caller's decision.
// [Remove] releases what a variant owns per its deletionPolicy. The
// runnable ExampleSync syncs a variant on memrepo.
//
// The mutations run in Porch's order (the package context, the spec's
// pipeline functions, injection, then [Binding]s) as the engine's
// Mutation, before its render and single commit, so a downstream draft is
// only ever written fully specialised. Injected and bound objects come
// from the caller's [ObjectSource] (a Kubernetes client in a controller,
// [Objects] in a test). Ownership is kept in the downstream revision's
// metadata (the annotation [OwnerAnnotation]), so the downstream
// repository must implement repository.MetadataWriter.
//
// A [PackageVariantSet] (config.porch.kpt.dev/v1alpha2) unrolls targets
// into PackageVariants through a template of CEL expressions, bounded in
// cost, value size and time ([Options]); [Unroll] shows the variants,
// [SyncSet] syncs them and removes those no longer generated, and
// [RemoveSet] releases them all.
//
// # Errors
//
// A spec that does not validate is a *[ValidationError]; a CEL expression
// that fails is an *[ExprError] ([ErrCostLimit] over its cost bound, and
// revision.ErrLimit over any bound); both match repository.ErrInvalidInput.
// Engine errors are returned wrapped and match the repository package's
// sentinels with errors.Is; on a repository that keeps no metadata, Sync
// fails with repository.ErrNotSupported. A file over the Engine's YAML
// bounds fails the sync with a *revision.YAMLLimitError, writing nothing.
//
// # Concurrency
//
// Sync, Remove and SyncSet are safe to call concurrently, from one process
// or many, on the same variants: every write is the repository's
// compare-and-swap, a sync that loses a race re-reads and tries again
// (Options.Attempts), and concurrent syncs of one spec converge on one
// downstream. Objects is safe for concurrent use; an ObjectSource must be.
//
// Ownership and adoption, injection and bindings, dependencies, and how a
// set's variants are found and upgraded are described in detail in
// variant/DESIGN.md in the repository.
package variant
