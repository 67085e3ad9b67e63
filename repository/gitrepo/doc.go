// Package gitrepo is the git backend of cad: a [repository.Repository]
// over go-git, in exactly the layout Porch writes, so that Porch and cad
// can share a repository and a repository written by either reads the
// same in the other. The library never runs the git binary.
//
// [Open] takes a repository.Spec of type git. Its git.repo is [MemoryURL]
// (a repository in memory), a local path or file:// URL of a bare or
// working repository, or a remote over http(s) or ssh, which is kept in a
// local clone (in memory, or in Options.CacheDir). [Options] sets the
// credentials, committer, cache and read bounds; its zero value (or nil)
// means the documented defaults. The runnable Example creates, proposes,
// approves and lists a package in memory.
//
// The layout, in short: a Draft is the branch drafts/<path>/<workspace>,
// a Proposed revision proposed/<path>/<workspace>, a Published revision
// the tag <path>/v<N> (approval merges the proposal into the registered
// branch and tags it, in one write), and every package on the branch
// head is a placeholder revision (revision -1, workspace <branch>).
// Labels, annotations and revision-level readiness live on the ref
// refs/cad/metadata, which Porch ignores.
//
// Beyond the contract, a *[Repository] offers [Repository.Adopt]
// (register an existing directory at a commit, branch or tag),
// [Repository.SetMetadata], [Repository.Range] (a list that holds one
// batch of refs at a time), [Repository.Watch] (polls the refs),
// [Repository.Changed] (a push webhook's hint to read the remote at once)
// and [Repository.Maintain] (packs objects and refs as git maintenance
// does; writes run it by themselves unless Options.NoAutoMaintain).
// [Fetcher] reads packages from plain git URLs for the engine's Clone and
// Upgrade.
//
// # Concurrency
//
// A Repository is safe for concurrent use, and any number of Repositories
// in any number of processes may share one repository: every write is a
// compare-and-swap of the refs it changes (an atomic push on a remote),
// all or nothing. Of two writers racing from the same state exactly one
// wins; the other gets an error matching repository.ErrConflict (or
// ErrAlreadyExists for a second draft with the same workspace). On disk a
// write survives a process killed at any instant, and with the default
// Options.Sync a power loss. Off unix (no flock) a repository on disk is
// read-only: writes fail with repository.ErrNotSupported.
//
// # Errors
//
// Errors match the repository package's sentinels with errors.Is. Open
// refuses a repository format or extension cad does not implement (such
// as SHA-256 objects or reftable refs) with a *[FormatError] matching
// repository.ErrNotSupported. A revision holding a symbolic link fails
// with an *[UnsupportedFileError] (ErrNotSupported). A damaged ref is a
// *[DamagedRefError] matching repository.ErrCorrupt for the revisions it
// holds only: List returns the others along with a *repository.Error
// wrapping a *repository.DamageError. A read over Options.MaxFileBytes or
// MaxPackageBytes fails with a *revision.LimitError (revision.ErrLimit).
// A server without atomic pushes cannot take a write of several refs:
// ErrUnavailable.
//
// # Design
//
// The on-disk layout and commit annotations byte by byte, repository
// formats and alternates, the concurrency and crash-safety protocols, how
// reads, the persistent index (cad-paths) and maintenance
// work, and what they cost are in repository/gitrepo/DESIGN.md in the
// repository. The storage mechanisms are packages under internal/, each
// documented at its top.
package gitrepo
