// Package gitrepo is the git backend of cad: a [repository.Repository]
// over go-git, in exactly the layout Porch writes, so that Porch and cad
// can share a repository and a repository written by either reads the
// same in the other.
//
// [Open] takes a repository.Spec of type git. Its git.repo is "mem://"
// (a repository in memory), a local path or file:// URL of a bare or
// working repository, or a remote over http(s) or ssh, which is kept in a
// local clone (in memory, or in Options.CacheDir). The library never runs
// the git binary.
//
// # Repository formats
//
// cad reads and writes objects and refs itself, so it opens only
// repositories in a format it implements, and checks before it reads or
// writes anything there (a local repository, and a remote's mirror in
// Options.CacheDir): core.repositoryformatversion 0 or 1, with no
// extensions.* setting but noop, and in version 1 noop-v1 and
// objectformat = sha1. Names are case insensitive, as in git. Anything
// else is refused by Open with a [*FormatError] matching
// repository.ErrNotSupported that names the setting, such as
// "extensions.objectformat = sha256" (cad would write SHA-1 objects into
// a SHA-256 repository, which git then reads as damaged) or
// "extensions.refstorage = reftable" (refs cad cannot read or update).
// The list is go-git v5's (noop and noop-v1) plus SHA-1 named
// explicitly; so worktreeconfig, preciousobjects, partialclone (objects
// missing locally, fetched from a promisor remote cad does not know) and
// unknown names are refused, in version 0 too, where git would ignore an
// unknown name. A remote that advertises an object-format other than
// sha1 is refused in the same way before anything is fetched or pushed.
// The format is read once, by Open.
//
// Objects borrowed from other repositories through objects/info/alternates
// (git clone --shared or --reference) are read as git reads them:
// absolute paths, and relative ones from the object directory that names
// them, alternates of alternates down to git's depth of 5, each
// directory once, their packs after the repository's own and their
// loose objects last. Writes never go into an alternate: a new object is
// written into the repository itself, unless an alternate already holds
// it, as git does. An alternate that does not exist is an error of Open
// matching repository.ErrCorrupt naming the file and the directory (the
// objects are missing); deeper nesting matches ErrNotSupported.
//
// A package's files (revision.Files) hold paths and contents, no modes.
// A symbolic link in a package would be read as a file holding its
// target and written back as a regular file, so reading the files of a
// revision that holds one, or opening it as a draft, fails with an
// [*UnsupportedFileError] naming it (matching ErrNotSupported), and
// nothing is written from it. A submodule (a gitlink) is skipped when
// the files are read, with a warning, and a draft's commit keeps the
// gitlinks of the package directory it replaces, unless its files take
// their paths. Executable files are read as files and written back as
// regular files.
//
// In a working repository whose registered branch is checked out, cad
// moves the branch as a push does and never writes the index or the
// working tree, which stay at the old commit: git status then shows the
// new commits' changes as staged changes undoing them, until git reset
// --hard (or a checkout) catches up. Open warns of it.
//
// # Layout
//
// Package paths are relative to spec.git.directory; below, <path> is the
// full path in the repository (directory/package) and <branch> the
// registered branch (spec.git.branch, default main).
//
//   - On the branch, a package is a directory holding a package marker
//     (a regular file): a Kptfile, or cad's package file
//     (revision.PackageFileName) for a package without a Kptfile. Markers
//     are found by name in the trees, never by reading a file. Discovery
//     does not descend into a package, so nested Kptfiles are subpackages
//     of their parent.
//   - A draft, proposal or tag names its package path in the ref, and its
//     directory is a package revision when it holds a marker or when it is
//     registered: the kpt: line of the ref's commit (or, for an annotated
//     tag, of the tag's message) names that path. Every commit cad (and
//     Porch) writes carries that line, so packages without a Kptfile work
//     through the whole lifecycle; a hand-made tag on a plain directory is
//     still ignored, as Porch ignores it. A tag its commit registers is
//     listed (and found by Get) from its ref and commit alone: its package
//     tree is looked up in the root tree on the first read of its files,
//     or found in cad-index or cad-paths. On Porch's flat layout every
//     approval's root tree holds every package, and a list of a new
//     process reads none of them; a registered tag whose commit has no
//     directory at its path is listed, and reading it fails with a
//     DamagedRefError. An empty package cannot be
//     committed (git keeps no empty directory). Porch itself lists only
//     packages with a Kptfile: it reads cad's Kptfile packages, adopted
//     ones included, and skips the others.
//   - A Draft is the branch drafts/<path>/<workspace>; each commit
//     replaces the whole package directory of its parent's tree, the
//     first commit's parent being the branch head (none in an empty
//     repository). The message is CommitOptions.Message, by default
//     "Intermediate commit", followed as in Porch by "\n\n\n" and the line
//     kpt:{"package":"<path>","workspaceName":"<workspace>","revision":"0","task":<task>}.
//     <task> is the creation task as Porch writes it (porch.kpt.dev/v1alpha1
//     Task JSON) from revision.CommitOptions.Creation, which the engine sets
//     on a new draft: {"type":"init","init":{description, keywords, site}},
//     {"type":"clone","clone":{"upstreamRef":{"upstreamRef":{"name":<PR>}}}}
//     or {"type":"clone","clone":{"upstreamRef":{"type":"git","git":{repo,
//     ref, directory}}}}, {"type":"edit","edit":{"sourceRef":{"name":<PR>}}}
//     for a copy, {"type":"upgrade","upgrade":{oldUpstreamRef,
//     newUpstreamRef, localPackageRevisionRef, strategy}}, where <PR> is
//     Porch's PackageRevision name <repository>.<package with / as .>.<workspace>.
//     Every later commit of the draft repeats its task, so a revision's own
//     commit says how it was created (Meta.Creation). Porch writes the
//     task only on a revision's first commit ("Intermediate commit",
//     "Rendering package" and its approval carry the kpt: line without
//     it) and reads the newest annotation with a creation task in the
//     history; so does cad when a revision's commit has none: from an
//     approval merge into the proposal side, then back along the commits
//     annotated for the same revision (package and workspace, or, for
//     Porch's oldest commits, package and revision number), at most 1000
//     commits, the answer cached by commit. A draft created without a
//     Creation has no "task". The engine commits a draft's later edits,
//     and the re-render of a proposal, as "Rendering package", as Porch
//     does.
//     A draft branch with neither a marker nor that line at <path> is
//     ignored.
//   - A Proposed revision is the branch proposed/<path>/<workspace>.
//   - Approving commits onto the branch a merge of the branch head and
//     the proposal that replaces the package directory with the proposal's,
//     with the message "Approving package revision <path>/<N>", a blank
//     line and the kpt: line with "revision":"<N>" and the proposal's
//     "task"; tags it <path>/v<N>
//     (a lightweight tag); and deletes the proposal, all in one write. N
//     is one more than the package's highest v<N> tag.
//   - Every tag <path>/<ver> with a package at <path> (as above) is a
//     published revision: revision N for v<N>, else -1. The workspace of a
//     v<N> tag is the workspaceName of the tag message's kpt: line for
//     <path> (an adopted revision's), else of the tagged commit's, else
//     <ver>; the workspace of any other tag is <ver>. Porch takes the
//     commit's annotation for every tag, so a tag <path>/<name> put by
//     hand on an approval commit gets, in Porch, the workspace of the
//     v<N> tag there and the same PackageRevision name; cad gives it its
//     own name, so that no two revisions share a key or metadata. Tags
//     without a slash (release tags) are ignored. A tag's PublishedBy and
//     PublishedAt are its commit's author, for v<N> tags and the others
//     alike.
//   - Every package on the branch head is a placeholder revision:
//     revision -1, workspace <branch>, lifecycle Published. Its PublishedBy
//     and PublishedAt are the author of the newest commit, walking the
//     branch's first parents from the head (at most 5000 commits), whose
//     kpt: line names <path>: the latest approval, usually, as Porch takes
//     them.
//   - DeletionProposed is the extra branch deletionProposed/<path>/v<N>
//     (deletionProposed/<path>/<branch> for the placeholder) at the same
//     commit. Deleting such a revision deletes its tag and that branch;
//     deleting the placeholder commits "Delete <path>" removing the
//     package directory from the branch.
//   - The committer is always "Package Orchestration Service
//     <porch@kpt.dev>" (Options.CommitterName/Email); the author is the
//     one CommitOptions or UpdateOptions name, else spec.git.author and
//     email, else the committer.
//   - [Repository.Adopt] registers an existing directory at a commit,
//     branch or tag without rewriting it: as Published, the annotated tag
//     <path>/v<N> on that commit, its message "Adopting <path> at <ref>"
//     and the kpt: line; as a Draft, the branch drafts/<path>/<workspace>
//     at a new commit with the same tree, the adopted commit as parent, and
//     that message and line.
//   - A missing branch is created with spec.git.createBranch by Porch's
//     commit: README.md "Created by porch", "Initial commit: Creating main
//     branch".
//
// Labels and annotations of revisions ([Repository.SetMetadata],
// revision.CommitOptions.Metadata), which Porch keeps in Kubernetes, are
// kept in the repository beside the layout: the ref refs/cad/metadata is a
// commit history whose tree holds <path>/<workspace>.json per revision
// with metadata (canonical JSON of revision.Metadata). Writes to it are
// part of the same atomic ref update as the revision change they belong
// to (a draft's first commit, a delete); clones see it only when they
// fetch refs/cad/*, and Porch ignores it. The same blob holds the
// revision-level readiness gates and conditions. An approval moves
// refs/cad/metadata too, to a new commit with the same tree ("Update
// package revision metadata"), in the same atomic update: that makes a
// metadata change pushed by another process between the approver's read
// and its push a conflict, so that readiness is checked atomically with
// the publish. The ref is created by an approval only for a revision whose
// Kptfile has readiness gates.
//
// A revision's Meta.Version is the commit id (for the placeholder, the
// package tree id) with the lifecycle and, when it has metadata, a hash of
// that; [Repository.Version] is a hash of all the refs of the layout and
// the metadata ref.
//
// # Concurrency
//
// A Repository is safe for concurrent use, and any number of Repositories
// in any number of processes may share one repository. The refs are the
// only mutable state and every write is a compare-and-swap of the refs it
// changes, all or nothing:
//
//   - On local storage a write plans its objects and ref updates while
//     holding a lock: a read-write mutex in the process and, for a
//     repository on disk, an flock on cad.lock in the git directory (both
//     shared by readers, which run side by side, and exclusive by writers;
//     the flock is released by the kernel if the process dies). A read of
//     a remote asks the remote for its refs holding no lock, and fetches
//     only when they moved, also holding no lock while the network
//     answers: the objects the clone lacks are fetched aside (a temporary
//     file beside a clone on disk, memory for one in memory) and the write
//     lock is taken only to add them and set the refs, and only while the
//     clone's refs are still those the fetch started from (so a clone
//     never goes back to an older state of the remote). Reads that find
//     the clone behind at the same time join one fetch (on disk, a lock
//     on cad-fetch.lock keeps other processes' fetches of the clone out
//     meanwhile), and each returns when its own context ends. Within
//     Options.RemoteReadMaxAge of the last fetch (or of an ask that found
//     the clone current) a read asks nothing and reads the clone.
//     Where there is no flock (off unix, such as on Windows) nothing
//     would keep other processes out, so a repository on disk, and a
//     remote's clone in Options.CacheDir, is only read there: every write
//     fails with repository.ErrNotSupported.
//     In memory every ref is checked against its expected old value, then
//     swapped with go-git's CheckAndSetReference, and the swaps made are
//     rolled back if one fails. On disk the refs are written by cad's own
//     ref store, never by go-git (see Crash safety).
//   - On a remote a write fetches the refs, plans on them, and pushes the
//     new objects and all ref updates in one atomic push whose commands
//     carry the expected old values, so the server applies all or none.
//     If the server refuses because a ref moved, the write is planned again
//     on the new state, up to a few times; it fails with ErrConflict when
//     the revision itself changed since it was first read. A server that
//     does not offer atomic pushes cannot take a write of several refs
//     (propose, approve, delete): such writes fail with ErrUnavailable.
//     A git server writes the refs of one push one after another, so a
//     fetch can see another writer's push half applied; a write whose
//     decision rests on a ref it does not change (a metadata change, on
//     its draft or proposal) carries that ref in its push as a command
//     from its value to the same value. A push answered without the
//     report asked for is ErrUnavailable: its outcome is unknown.
//     The writes of a remote take turns (in one process, and on disk,
//     through a file lock on cad-push.lock, across the processes sharing
//     the clone), but hold the store's lock only for their local steps:
//     planning on the clone and encoding the pack, then, once the remote
//     took the push, setting the clone's refs. Reads go on while a push is
//     on the network; a push that fails or is cut short leaves the clone's
//     refs as they were (the next fetch brings in what the remote took).
//
// So of two writers racing from the same state exactly one wins; the
// other gets an error matching repository.ErrConflict (or ErrAlreadyExists
// for a second draft with the same workspace) and leaves no ref behind.
// Approvals of one package are serialised by its tag and the branch, so no
// two revisions ever hold the same number; a number is free again once
// its tag is deleted (a deleted highest revision's number is the next
// approval's, as in Porch, which also counts the existing tags). Unreferenced objects of a
// lost race may remain, as they do in git; git gc removes them.
//
// # Crash safety
//
// A repository on disk survives a process killed at any instant, and a
// power loss, in a state git and cad read: every write is all or nothing.
// A write syncs the loose objects it stored and their directories, then
// writes its intent, cad-journal.lock in the git directory, listing each
// ref's old and new value; locks each ref as git does, by creating <ref>.lock exclusively
// (a lock that exists is another program's, such as the git CLI's: the
// write backs out with ErrConflict); checks each ref's old value; writes
// and syncs the new values into the lock files; renames the intent to
// cad-journal (the commit point); renames the lock files over the refs
// (a deletion rewrites packed-refs through packed-refs.lock first, then
// removes the loose file); syncs the directories; and removes the
// journal. What a dead writer left is found by the next process: before
// the commit point no ref changed, and the next writer removes the intent
// and the lock files; after it, the next reader or writer completes the
// write, setting every ref still at its old value (a reader that may not
// write to the git directory reads the refs as the journal completes
// them, in memory, and leaves the journal to a writer). So a revision is in exactly one lifecycle state
// after any crash, and an approval retried after a crash never publishes
// twice: it either happened or it did not. TestCrash kills a child
// process at every step of init, save, propose, approve, metadata,
// propose-delete and delete, and at random moments, and checks all of
// this with git fsck. The protocol step by step, with what is synced
// when and how a reader that may not write sees a pending journal, is
// documented in package internal/refstore.
//
// A ref that is damaged all the same (empty, not an object id, or naming
// a missing object, as go-git's in-place writes or other tools can leave
// one) is a [*DamagedRefError] matching repository.ErrCorrupt for the
// revisions it holds only: List (and Range) leave them out, logging a
// warning, and return the other revisions with an *repository.Error
// wrapping a *repository.DamageError (matching repository.ErrDamaged) that
// holds one *DamagedRefError per damaged ref that can hold a revision (a
// draft, proposal or package tag, the registered branch, refs/cad/metadata)
// or whose name a damaged packed-refs line hides; Get and writes of them
// return the error, and cad never rewrites it. A damaged ref that cannot
// hold a revision (another branch) is only logged. A tag whose package's
// Kptfile does not parse is no damaged ref: it lists, and reading its
// Kptfile (Info) fails for that revision alone. A line of
// packed-refs that is not a ref line (garbage, a bad object id, or a last
// line cut short; git refuses such a file) damages the ref it names, or,
// when its name cannot be read, every ref it may have held (in a sorted
// file, the names between its neighbours'): those are reported the same
// way, and a write that needs one of those names free, such as an
// approval numbering a package whose next number the line may hold,
// fails with ErrCorrupt rather than hand out a number twice. The
// registered branch is created by spec.git.createBranch only when no ref
// of that name exists at all: a damaged branch is reported, never
// replaced. A remote's local mirror in Options.CacheDir is a cache: its
// damaged refs are dropped and fetched again. A fetch sets the mirror's
// refs through the same crash-safe ref store, after the fetched pack is
// in, and never to an object it lacks; a fetch cut short changes no ref.
//
// # Reads
//
// Reads are proportional to what is read. List reads the refs, the commits
// they point at and the trees on the path to each package (finding
// package markers by name, never reading a blob); a revision's files are
// read from its package subtree only when asked for. Trees, commits,
// package lists and package contents are cached by object id in a
// bounded LRU (Options.CacheBytes, 8 MiB by default), as they never
// change. On disk, packed objects are read by cad itself, not go-git: an
// object is looked up in its pack's .idx where it lies (go-git would
// decode every index whole before the first read), and delta chains are
// resolved through the same cache, which keeps each
// object's direct base and each chain's bottom; a list reads the refs in
// the order their objects lie in the packs, so that each tag's trees are
// a delta or two from the previous tag's. Loose objects, and packs with an index older than
// version 2, are read through go-git. A pack or index up to 1 MiB is
// mapped into memory; a larger one is read with pread until a few hundred
// objects were read from it, then mapped: a read of a few objects lying
// megabytes apart (a Get) costs a system call each instead of a page
// fault each, and a fault, which maps a window of pages, costs several
// times as much. On disk, refs are read as git reads them (a loose file,
// else packed-refs: the first lookups of a process binary-search it a
// block at a time, later ones parse it; after another writer rewrote it,
// the next few lookups search it by blocks again before it is parsed
// anew), so looking up a tag costs about the same among ten or a hundred
// thousand. A path is found in a tree by scanning its raw entries for the
// one name, not by decoding the whole tree (the root tree of an approval
// commit holds every package). A tree of 16 KiB or more stored as a delta
// is not even built: it is searched as a rope, the pieces of its delta
// chain's bottom (indexed once per chain) and of the deltas' inserted
// bytes, so that a first list of a repository with thousands of packages
// at the root costs per tag what the deltas hold, not the tree's size.
// Loose objects are written by cad, at zlib's fastest level as git
// writes them.
//
// On disk, lists also keep cad-index in the git directory: facts about
// immutable objects (a commit's tree, parents, author and message; the
// package tree under a commit's tree), appended in checksummed lines by
// the lists that learn them and read by later processes, so that a list
// in a new process does not decode every tagged commit and its trees out
// of the pack again. A list looks package trees up for drafts,
// proposals, the branch's packages and tags no commit registers; a tag
// its commit registers (every one Porch and cad write) is listed from its
// ref and commit, and its package tree is looked up by the first read of
// its files: a read resolves its own with those of the 47 listed
// revisions whose root trees lie next to its own in the pack (one delta
// chain, whose bottom is inflated once for them all) and appends them to
// cad-paths in one write. It is a
// cache of facts that never change: deleting it loses nothing, a damaged
// line is ignored, and a repository that cannot be written is listed
// without it. It is mapped into memory, and only where each record lies
// is kept, in sorted arrays; a record is parsed when asked for. Get does
// not load it: loading costs more than one read. Two processes that make
// the first list of a repository at the same time append each record
// once: the append holds an flock on the file and leaves out what the
// other appended since.
//
// Beside it, cad-paths holds cad-index's path records sorted, in records
// of a fixed width behind a fan-out table, so that Get finds where a
// package lies in a tagged commit with two reads of that file instead of
// decoding the commit's root tree (which, as Porch writes repositories,
// holds every package and comes out of a long delta chain). A list
// rebuilds it when cad-index has grown by more than an eighth of what it
// covers, merging in the records appended since; it is written to a
// temporary file and renamed, and every record and its header carry a
// checksum, so that a crash or damage costs lookups, never a wrong
// answer. Between rebuilds, records are appended to its tail (at most
// 1,024, then merged), in whole checksummed records under the file's
// lock: an approval appends where the new revision's package lies in its
// root tree, and a read that had to search a root tree (a revision no
// approval by cad and no earlier read recorded) appends what it found, so
// that only the first read of such a revision, in any process, reads the
// root tree.
// cad-paths also holds workspace records: the workspace a v<N> tag's
// object gives its package, written by approvals and by the workspace
// check of a new draft for the tags it had to read, so that the check
// (which looks at every tag of the package) reads no commit in a new
// process once the package's tags are recorded.
//
// A package of 32 tags or more also has a workspace summary,
// cad-workspaces/<hash of its path>: the workspace of each of its tags,
// for one state of its tags (the identity of packed-refs, its device,
// inode, size, modification and change times, and the package's loose
// tags and their values), written by the workspace check that passed over
// the tags. While packed-refs is the same file, a check looks at the tags
// the summary names for its workspace and at the loose tags that are new,
// moved or gone since, and no other (and writes the summary again once
// 8 loose tags changed), so that a new draft and its first commit cost
// the same with 10 revisions of the package as with 5,000. Another
// packed-refs holds the summary when its lines under the package's tag
// prefix hash as those the summary was written for (they are read by a
// binary search, not parsed with the rest of the file), and the summary
// is written again for it; a damaged file, one of another package, or
// another packed-refs with other lines is read as no summary. A tag the
// summary names is read as before, so it only spares the reads of tags
// whose workspace is another. It relies on a rewritten packed-refs
// having another identity, as every writer that replaces the file (git,
// cad) gives it, unless a new file gets a freed inode, the same size and
// the same change time within the clock's tick. Not kept on platforms
// other than Linux.
//
// Memory: List returns every revision at once, each a 160-byte value
// (some 10 MB for 60,000, on top of what listing needs) that builds its
// Meta on each call, and reads the branch's placeholders first, while
// little else is held: a cold List of 50,000 revisions (61,000 with the
// placeholders) peaks under 100 MB of resident memory, mapped files
// included, the first list of a repository (which writes cad-index and
// cad-paths) as well as later ones. Range (repository.RangeLister)
// yields them a batch of refs at a time, holding the refs and one batch,
// for a loop that keeps nothing. The mapped packs and cad-index count in
// the resident set only for the pages read; a list drops them from it
// (the kernel keeps them in its page cache) after cad-index is scanned,
// after List's placeholders, every 16,384 pack entries read, and behind
// its sweep of the refs' commits, which it reads in pack order (a page
// fault maps 64 KiB around each, most of a pack of root trees).
//
// A repository on local disk is a repository.Batcher (batch.go): the
// writes made with a batch's context are held in memory, seen only by
// reads with that context, and committed together as one pack (two
// files, two syncs) and one ref transaction, with one metadata commit;
// variant.SyncSet writes a set's downstreams so.
//
// For a remote, every read first fetches (unless within
// Options.RemoteReadMaxAge): an ls-remote, and objects only for refs
// that moved to commits not present locally. Watch polls the refs.
//
// # Bounds
//
// A revision's files are read whole into memory, so what one read may
// cost is bounded, checked from the sizes in the objects' headers (a
// loose object's header, a pack entry's, or for a delta the result size
// in the delta's own header) before any file of the package is
// inflated. A read over a bound fails with a *revision.LimitError
// (matching revision.ErrLimit and revision.ErrInvalid) that names the
// file, wrapped in the error naming the revision; lists, which never
// read a file's content, and every other package are unaffected.
//
//   - Options.MaxFileBytes, default DefaultMaxFileBytes (32 MiB): one
//     file of a package (Files, Info's Kptfile, a draft's files). A
//     revision metadata blob over it is ignored with a warning.
//   - Options.MaxPackageBytes, default DefaultMaxPackageBytes (256 MiB):
//     the files of one package revision in all.
//
// A repository in memory (mem://, or a remote's mirror in memory) holds
// its objects already; the bound spares the copy a read would make. A
// pack whose index predates version 2 is read by go-git, which inflates
// an object to learn its size.
//
// # Maintenance
//
// Every write batch and every fetch into a mirror on disk adds a pack,
// and single writes add loose objects and loose tags; a reader looks an
// object up pack by pack, and a ref in its own file before packed-refs.
// [Repository.Maintain] keeps this in bounds, as git maintenance and git
// repack --geometric=2 do, on a repository on disk (in memory there is
// nothing to do):
//
//   - Packs: sorted by their number of objects, the smallest are merged
//     with every loose object into one new pack, so that each remaining
//     pack holds at least twice the objects of all smaller ones together
//     and a repository of n objects keeps at most log2(n) packs
//     (MaintainOptions.Full merges them all, as git gc). Entries are
//     copied as they are stored, compressed, each checked against the
//     CRC-32 its index gives (an offset delta gets its new distance to
//     its base; a delta on a base named by id is stored whole), an object
//     two packs hold is written once, and a loose object is checked
//     against its id. Packs with a .keep or .promisor file, or an index
//     older than version 2, are left alone. No delta is computed: a
//     repository cad wrote is as large after as the objects it held.
//   - Refs: loose tags (refs/tags/, the published revisions, written
//     once), and drafts' and proposals' refs not written for an hour
//     (MaintainOptions.IdleRefAge), are moved into packed-refs, which is
//     rewritten sorted, with the peeled values of annotated tags when the
//     file carries them. The registered branch and refs/cad/* change with
//     every write and stay loose, as do drafts being worked on: a packed
//     ref that is deleted (a proposal, at its approval) costs a rewrite
//     of packed-refs. A damaged packed-refs is left for a person (the
//     objects are packed all the same).
//   - Unreachable objects are never removed: an object leaves its loose
//     file or its old pack only once the new pack holding it is in place.
//     So no draft, proposal, tag, refs/cad/* ref or write under way can
//     miss one; what a lost race left stays until git gc prunes it.
//
// Crash safety: the new pack is written under a temporary name, synced,
// and renamed into place before its index; the pack directory is synced
// (unless SyncNone) before any merged pack (its index first) or loose
// object is removed. packed-refs' new content is written and synced to
// cad-packed-refs.tmp, linked as packed-refs.lock and renamed over
// packed-refs, as a deletion rewrites it; then each loose tag is locked
// as git locks it (<ref>.lock, created exclusively, naming cad), checked
// and removed, the tags listed in cad-pack-refs meanwhile so that the
// next writer removes the locks of a run that died. A process killed at
// any step leaves a repository git fsck accepts and cad reads whole
// (TestMaintainCrash kills one at every step). Objects are merged
// holding no lock, beside reads and writes; only the packing of refs
// takes the write lock, for milliseconds. Two runs never overlap: a run
// holds an flock on cad-maintenance.lock. A reader of this or another
// process keeps reading the packs it has open after they are removed
// (their files live until closed); a reader that misses an object scans
// the pack directory again before it fails, and closes the packs that
// went.
//
// Writes run it by themselves: after the first write of a Repository
// and every 16th, and after a read whose fetch added a pack to a mirror,
// a write looks at two directories as git gc --auto does: the number of
// packs (Options.AutoMaintainPacks, 50) and objects/17's loose objects
// times 256 (Options.AutoMaintainLoose, 6,700). When either is reached
// it runs Maintain in the writer's goroutine after the write (the write
// has succeeded; a failure is logged), unless another run holds the
// repository. Options.NoAutoMaintain turns this off for callers that
// schedule Maintain themselves. A caller that schedules the maintenance
// of any backend (the reference server's and the operator's
// --maintain-interval) calls repository.Maintain, which runs
// MaintainStorage (repository.Maintainer): Maintain with the zero
// MaintainOptions.
//
// # Where the mechanisms are
//
// This package is the backend: the layout above, reads, writes,
// metadata, adoption, watching and remotes. Its storage mechanisms on
// disk are packages of their own under internal/, each documented at
// its top:
//
//   - internal/gitobj: objects and packs. The pack and .idx format as cad
//     reads them, delta chains and the ropes of packed trees, the tree
//     format, loose objects as cad writes them, and the object cache
//     (what is cached, by kind).
//   - internal/refstore: refs and their transactions. Reading loose refs
//     and packed-refs, damage, the crash-safety protocol (journal, commit
//     point, recovery, read-only overlay, packed-refs rewrites, fsync),
//     the cross-process lock, and that it exists on unix only.
//   - internal/index: the persistent indexes, cad-index and cad-paths.
//     Both file formats byte by byte, their checksums, how they are
//     appended to, rebuilt and merged, and what a stale or damaged file
//     does (nothing but cost a read).
package gitrepo
