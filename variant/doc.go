// Package variant keeps downstream packages specialised copies of an
// upstream: Porch's PackageVariant and PackageVariantSet, as a
// framework-free, idempotent sync over an Engine (an *engine.Engine, or a
// wrapper of one).
//
// # PackageVariant
//
// A PackageVariant (Porch's config.porch.kpt.dev/v1alpha1 JSON) names an
// upstream package revision and a downstream package. Sync makes the
// downstream match the spec and returns a Result per downstream: what it did
// (created, upgraded, copied, updated, adopted, deleted, orphaned or
// unchanged), the draft or revision it stands for, and Porch's Stalled and
// Ready conditions with reasons. Calling Sync again with nothing changed
// writes nothing. Sync never proposes or approves: publishing stays the
// caller's decision.
//
// The upstream is chosen explicitly: a pinned revision number, the
// published revision of a workspace, or (neither) the latest published
// revision. The branch placeholder is never an upstream.
//
// The mutations run in Porch's order: the package context (data of the
// kptfile.kpt.dev ConfigMap), the spec's pipeline functions prepended to the
// Kptfile's mutators and validators as PackageVariant.<pv>.<fn>.<i> (re-owned
// on every sync; the user's functions stay), injection, then bindings. They
// run as the engine's Mutation, before its render and single commit, so a
// downstream draft is only ever written fully specialised and rendered:
// there is no window in which a half-mutated draft could be approved.
//
// A package without a Kptfile stays without one: its pipeline functions,
// conditions and readiness gates go into cad's package file
// (revision.PackageFileName, created when needed) under the same names and
// ownership rules.
//
// # Ownership
//
// Porch marks a downstream PackageRevision as its PackageVariant's with an
// owner reference. cad keeps the same fact in the repository, in the
// downstream revision's Metadata (revision.Metadata, written with the
// revision by the engine's Metadata options and changed by
// Engine.SetMetadata): the annotation config.porch.kpt.dev/packagevariant
// names the owner ("<namespace>/<name>"), beside the variant's own labels
// and annotations. Metadata rather than the Kptfile, because ownership is a
// fact about one revision, not about the package content: like an owner
// reference it can be added (adoption) and removed (orphaning) on a
// published, immutable revision without a new revision; it is not inherited
// by a copy someone else makes; and it never ends up in what is deployed. The
// cost is that the downstream repository must keep metadata (implement
// repository.MetadataWriter); on one that does not, Sync fails with an error
// matching repository.ErrNotSupported.
//
// Adoption (adoptExisting) takes over the downstream package's revisions
// that no variant owns. An adopted draft that records no upstream lock
// (made by hand, or registered with Engine.Adopt) starts tracking the
// upstream in place, keeping its files and edits: it is upgraded from the
// upstream to itself, which writes the upstream record and the mutations
// only. Remove (or Sync of a variant with a
// DeletionTimestamp) releases what a variant owns per its deletionPolicy:
// delete deletes drafts and proposes published revisions for deletion;
// orphan only removes the ownership.
//
// # Injection and bindings
//
// Injection works as in Porch: a resource annotated
// kpt.dev/config-injection: required|optional is an injection point; the
// first injector that applies to its kind names the object, read from the
// caller's ObjectSource (a Kubernetes client in a controller, Objects in a
// test), whose data (ConfigMap) or spec replaces the point's; the point gets
// the Kptfile condition config.injection.<Kind>.<name>, and required points
// are readiness gates, so Engine.Approve refuses the draft until they are
// filled.
//
// Bindings are cad's version of the binding points of the PackageVariant
// Redux proposal. A binding point is a named set of resources
// (config.kpt.dev/binding: <name>); a Binding fills it from exactly one of
// the ObjectSource (by name or label selector), inline resources, or the
// resources of another package revision. One source may yield several
// resources of the point's kind. The point's declaration in the upstream is
// its default: a binding merges over it, so values it does not set survive
// every clone and upgrade, and removing the binding restores it.
//
// The files Sync parses itself (resources with injection or binding
// points, the package context, the resources a binding reads from
// another revision) are held to the Engine's YAML bounds (its
// YAMLLimits()), as the engine holds the files it reads: a file of the
// package over a bound fails the sync with a *revision.YAMLLimitError,
// writing nothing; one of a binding's source revision sets the binding's
// condition False with that error. DecodeLimits reads variant objects
// with the same bounds.
//
// # Dependencies
//
// A variant with spec.dependencies (a cad extension) acts on what its
// downstream package requires (package deps): on every sync while the
// downstream is a draft, it clones the missing providers from
// providerRepos into the downstream repository, each once, as drafts it
// does not own (engine.CloneProviders), and records the resolution on the
// draft as the readiness condition deps.cad.configasdata.dev/satisfied
// (engine.CheckDependencies); with gate, the draft also gets that readiness
// gate, so it is approved only after a sync has found every requirement
// satisfied by published revisions. A controller that resyncs its
// variants therefore keeps the condition current.
//
// # PackageVariantSet
//
// A PackageVariantSet (Porch's config.porch.kpt.dev/v1alpha2 JSON) unrolls
// targets (repositories and package names, a label selector over the
// repositories' specs, or a selector over objects of the ObjectSource) into
// PackageVariants through a template whose *Expr fields are CEL
// expressions over Porch's variables repoDefault, packageDefault,
// upstream, repository and target, bounded in cost, value size and time
// (Options.CostLimit, MaxCELValueBytes and CELTimeout; see the Bounds of
// package fnruntime/celfn). SyncSet syncs every
// generated variant, a bounded number at once, and removes the variants it
// no longer generates; they are found by the label
// config.porch.kpt.dev/packagevariantset on their downstream revisions, so
// nothing needs to be remembered between calls.
//
// A downstream draft whose upstream moved is upgraded in place
// (Engine.UpgradeDraft): its edits survive the three-way merge, as with
// Porch's controller. Only a draft whose old upstream cannot be read (its
// lock names no revision of a known repository) is replaced: by a draft
// upgraded from the latest published downstream, or cloned anew.
//
// # Concurrency
//
// Sync, Remove and SyncSet are safe to call concurrently, from one process
// or many, on the same variants: every write is the repository's
// compare-and-swap, a sync that loses a race re-reads and tries again
// (Options.Attempts), and concurrent syncs of one spec converge on one
// downstream. Objects is safe for concurrent use; an ObjectSource must be.
package variant
