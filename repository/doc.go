// Package repository is the contract between cad and the stores that hold
// packages: git repositories, OCI registries, memory.
//
// A backend implements the small [Repository] interface: list, get, create
// and open drafts, change lifecycle, delete, close. Lifecycle rules that
// protect the data are the backend's (a published revision is immutable,
// only [revision.Transitions] are allowed, no two revisions of a package
// ever hold the same revision number); package operations such as clone
// and upgrade live in
// the engine. Optional capabilities are separate interfaces with helpers
// that fall back to [ErrNotSupported]: [Watcher] with [Watch], [Versioner]
// with [Version], [MetadataWriter] with [SetMetadata], and [Adopter] with
// [Adopt], which registers content already in the repository (a directory
// at a commit, tag or branch) as a package revision without rewriting it.
// [RangeLister] lists one revision at a time (an iter.Seq2), so that a
// caller that does not keep them all does not hold a whole list of a large
// repository in memory; its helper [Range] falls back to List, since every
// backend can list. [Batcher] begins a [Batch], a write batch as an
// explicit value (as database/sql's *Tx): a Repository whose writes are
// held until its Commit writes them all at once, or its Discard drops
// them; its helper [BeginBatch] returns ErrNotSupported for a backend
// that cannot batch, and never pretends to. [Maintainer] runs the upkeep
// a backend's storage wants (gitrepo packs objects and refs) for callers
// that schedule it; its helper [Maintain] returns ErrNotSupported for
// backends without it.
//
// A package needs no Kptfile: a backend stores any non-empty set of files.
// Where a backend discovers packages by scanning (the git branch), a
// directory is a package when it holds a Kptfile or cad's package file
// (revision.PackageFileName), found by name; revisions the backend
// registers itself (drafts, tags, adoptions) need neither.
//
// # Errors
//
// Every error a backend returns is a *[Error] naming the operation,
// repository and key, and wraps one of the sentinels below together with
// the backend's native cause, so both errors.Is(err, ErrConflict) and
// errors.As(err, &nativeErr) work.
//
// Damage is reported, never hidden and never spread: a revision whose ref
// or tag cannot be read is an error matching [ErrCorrupt] for that
// revision alone, and List returns the other revisions with a
// *[DamageError] (matching [ErrDamaged]) naming what it left out, so that
// a damaged repository never reads as an empty one (see
// Repository.List).
//
// # Concurrency
//
// Every Repository is safe for concurrent use by many goroutines, and
// backends over shared storage (git, OCI) are safe for use by many
// processes: every write is a compare-and-swap, and of two writers racing
// from the same state exactly one succeeds while the other gets
// [ErrConflict] and leaves nothing behind.
//
// The conformance suite in repository/repotest checks all of this for any
// backend.
package repository
