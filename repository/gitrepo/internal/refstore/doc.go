// Package refstore is the ref store of a git repository on disk, as cad
// reads and writes it: lookups of loose refs and packed-refs, crash-safe
// transactions over several refs, the read-only overlay of a pending
// transaction, the cross-process lock and the record of synced objects.
// Package gitrepo uses it for every repository in a directory; a
// repository in memory keeps its refs in go-git's storage instead.
//
// # Reading refs
//
// [FSRefs] reads refs as git does: a loose ref file (refs/...) wins over
// its line in packed-refs. packed-refs ("<hash> <ref>" lines, a "^<hash>"
// line after a tag's giving its peeled value, a "# pack-refs with:" header
// that says "sorted" when git wrote it sorted) is parsed once per change
// of the file (its size and modification time) into sorted names and
// hashes, so one lookup costs the same with 100 refs as with 100,000.
// Until a file has been looked up a few times (scansBeforeParse) a lookup
// binary-searches the file block by block instead of parsing it. A line
// that is not a ref line is damage: the ref it names, or every ref that
// may sort between the good lines around it, reads as a
// *[DamagedRefError] (repository.ErrCorrupt), and other refs read on.
// [RefSnap] is a sorted snapshot of the refs under some prefixes, which a
// read of package gitrepo takes once and searches by prefix. Its walk of
// the loose refs reads a file only when the file's identity (an lstat:
// PackedIdentity) is not the one its value was last read with, and never
// trusts the identity of a file changed in the last seconds (the racy
// window, as git's index): see loosecache.go.
//
// [FSRefs.SnapshotStamped] also returns a [Stamp] of the files the refs
// were read from (packed-refs, the refs' directories, the loose files
// that may be rewritten in place), by the same identities and racy rule,
// so that [FSRefs.Unchanged] tells with a few lstats that no ref changed
// since (stamp.go). [FSRefs.Digest] is a digest of how the refs under
// one prefix are stored, which changes with any of them.
//
// packedLineAt finds where the first ref at or after a name starts in a
// sorted packed-refs (a binary search a block at a time), for the exact
// lookup (searchPackedAt); it reads damage as no answer, where the
// lookup falls back to reading the lines left.
//
// # Transactions: the crash-safety protocol
//
// Every ref write of cad to a git directory goes through
// [FSRefs.Transact], never through go-git, which rewrites a loose ref in
// place (a crash leaves it empty) and changes several refs one after
// another (a crash leaves a revision in two states). A transaction is a
// list of [RefUpdate]s, each a compare-and-swap from an old value (zero:
// must not exist) to a new one (zero: delete). It runs under the
// exclusive cross-process lock (cad.lock, see below), after the objects it
// refers to are written:
//
//  0. the loose objects the refs will name are synced, with their
//     directories (objects in packs were synced when the pack was
//     written; loose objects this process synced already are skipped, see
//     below);
//  1. the intent, cad-journal.lock, is written and synced: a header line
//     "cad-journal v1" and one line "<old> <new> <ref>" per update;
//  2. each ref is locked as git locks it, by creating <ref>.lock
//     exclusively; a lock that exists belongs to another program (the git
//     CLI), and the transaction backs out with an error matching
//     [ErrRetry];
//  3. when asked to check, each ref is compared with its expected old
//     value ([ErrConflictRef], matching repository.ErrConflict, when it
//     differs); each lock file gets the new value and is synced;
//  4. the commit point: the intent is renamed to cad-journal;
//  5. the lock files are renamed over the refs. Deletions rewrite
//     packed-refs before the loose file is removed, so that an older
//     packed value never shows: the new content is written and synced to
//     cad-packed-refs.tmp, hard-linked as packed-refs.lock (failing, as
//     git's O_EXCL does, when that lock exists) and renamed over
//     packed-refs;
//  6. the directories are synced and the journal is removed.
//
// Recovery ([FSRefs.Recover], run by the next writer under the exclusive
// lock): a crash before step 4 leaves the refs as they were; the intent
// and the lock files it made are removed. packed-refs.lock is removed only
// when it is the same file as cad-packed-refs.tmp: a lock another program
// (git pack-refs) holds is never taken away. After step 4, the journal is
// rolled forward: every ref still at its old value is set to its new one;
// a ref at neither value was changed by another program since and is
// left as it is (with a warning). So every transaction is all or
// nothing, whatever the moment the process dies, and git reads valid refs
// at every moment. A test hook ([FaultHook]) names every step, so the
// crash tests of package gitrepo kill a writer exactly there.
//
// # Packing refs
//
// [FSRefs.PackRefs] (package gitrepo's maintenance) moves the loose refs
// its caller picks into
// packed-refs, as git pack-refs does, under the exclusive lock: the new
// packed-refs (sorted, with peeled lines when the file carries them) is
// installed as a deletion's rewrite installs it (cad-packed-refs.tmp,
// linked as packed-refs.lock, renamed); the refs to remove are listed in
// cad-pack-refs; each is locked as git locks it (<ref>.lock, created
// exclusively, holding a mark), read again and removed when it still
// holds the packed value; then the list goes. Recover removes the marked
// (or empty) lock files of the refs a dead run listed, and the list.
//
// # The read-only overlay
//
// A reader that finds a journal past its commit point ([FSRefs.Pending])
// completes it first when it may write to the git directory. One that may
// not (a read-only mount, another user's repository) reads the refs as
// the journal would complete them instead: [FSRefs.LoadOverlay] computes
// the journal's outcome once per journal file and lays it over every
// lookup, so such a reader never sees a write half done. An intent alone
// (a writer that died before its commit point) changed no ref, and
// readers leave it to the next writer.
//
// # What is synced when
//
// [SyncMode] chooses. SyncFiles (the default) syncs every file before it
// is renamed into place: the loose objects of step 0, the intent, each
// ref's lock file and packed-refs' replacement, as git does with
// core.fsync=committed. SyncAll also syncs each directory whose entries
// changed (objects, refs, the git directory after the renames), so a
// write survives a power loss on any POSIX file system. SyncNone syncs
// nothing: a write is still all or nothing when the process dies, but not
// on a power loss. The process remembers the loose objects it synced, by
// hash and file identity (device, inode, size, modification time), and
// does not sync them again while the same file is in place; where the
// identity of a file is not known (off unix, see fileID) every object is
// synced. [ObjectSyncHook] lets tests see which objects are synced.
//
// # The cross-process lock
//
// Every cross-process lock cad takes on a repository is in one file of
// the git directory, cad.lock ([LockName]): a [FileLock] is an advisory
// record lock (fcntl(2)) on one byte of it, its [LockRole]'s: byte 0 the
// storage (shared for readers, exclusive for a writer), 1 maintenance, 2
// a write to a remote, 3 a staged fetch, each exclusive and independent
// of the others. The file stays empty: a lock on a byte past the end of a
// file is valid. On Linux the locks are open file description locks
// (F_OFD_SETLK); elsewhere they are POSIX process locks (F_SETLK), which
// belong to the process and are all released when it closes any
// descriptor of the file, so a process opens each cad.lock once, shares
// it among its FileLocks and counts its own holders of each role (the
// same on Linux). A process's readers share one lock. The kernel releases
// every lock of a process that dies.
//
// cad v0.1.0 and before took an flock(2) on the whole of cad.lock for the
// storage, and on cad-maintenance.lock, cad-push.lock and cad-fetch.lock
// for the other roles. Those three files are left where they are (an
// older process may hold one; removing it would let two older processes
// in at once) and never opened. On Linux, on a local file system (ext4,
// xfs, btrfs, tmpfs, overlayfs, zfs, f2fs: localFS), where flock and
// record locks do not see each other, the storage's role is also taken
// as an flock on cad.lock, so an older process's readers and writers and
// this one's keep each other out as before (on a network file system an
// flock may be carried out as a record lock on the whole file, which
// would conflict with the other roles' bytes); an older process's maintenance, push or
// fetch and this one's may overlap, which costs duplicate work (or an
// error from one of two maintenance runs) and never a wrong result:
// maintenance removes only what it merged into a pack already in place,
// a push is a compare-and-swap on the remote, and a staged fetch sets the
// mirror's refs only when they are as it found them.
// Other file systems and systems do not get the flock (where flock and
// record locks are one set of locks, as on the BSDs and macOS, it would
// conflict with the process's own record locks, and an older process's
// flock there may already conflict with this one's record locks): there,
// stop older processes before a new one uses the repository.
//
// [LockFile] takes an flock on an open data file (appends to
// cad-paths), so that two processes do not append the same records.
//
// The lock exists only on unix. Elsewhere (Windows, plan9, wasm)
// [CrossProcessLock] is false, FileLock and LockFile do nothing, and
// package gitrepo refuses every write to a git directory on disk with
// repository.ErrNotSupported (reads work): without the lock, processes
// sharing the directory would not be kept out of each other's
// transactions.
//
// # Concurrency
//
// An FSRefs is used under the lock of its repository's store: lookups
// under the shared lock (they may run together; FSRefs guards its parsed
// packed-refs with its own mutex), transactions and recovery under the
// exclusive one.
package refstore
