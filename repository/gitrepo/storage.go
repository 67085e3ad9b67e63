package gitrepo

import "github.com/configasdata/cad/repository/gitrepo/internal/refstore"

// DamagedRefError reports a ref whose file, or whose line in packed-refs,
// cannot be read; it matches repository.ErrCorrupt. Reads of other refs
// go on; List warns about it, and a write that needs the damaged name to
// be free fails with it, so that no revision number is handed out twice.
// Removing or repairing the ref (git pack-refs rewrites packed-refs)
// repairs it. See package internal/refstore for how damage is found.
type DamagedRefError = refstore.DamagedRefError

// SyncMode says what a write to a repository on disk flushes to the disk
// before it counts as done (Options.Sync). Every mode is safe against a
// process killed at any moment; they differ on a power loss or a kernel
// crash.
type SyncMode = refstore.SyncMode

const (
	// SyncFiles, the default, syncs every file a write creates before it
	// is renamed into place: the new loose objects, the journal and each
	// ref (git's core.fsync=committed). On file systems that order
	// metadata (ext4 with data=ordered, xfs) it survives a power loss.
	SyncFiles = refstore.SyncFiles
	// SyncAll also syncs every directory whose entries changed, so that a
	// write survives a power loss on any POSIX file system, at several
	// times the cost of SyncFiles.
	SyncAll = refstore.SyncAll
	// SyncNone syncs nothing: a write is still all or nothing when the
	// process dies, but a power loss may lose or damage recent writes.
	// For tests and repositories on tmpfs.
	SyncNone = refstore.SyncNone
)
