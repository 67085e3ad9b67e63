// Package index keeps the persistent indexes of a git repository on disk
// that cad writes beside git's own files: cad-index ([ObjIndex]) and
// cad-paths ([PathFile]), caches of facts about immutable objects. A
// fact about an object id never becomes false, so neither file is ever
// stale. Deleting either loses nothing but time. A repository whose
// directory cannot be written is read without them.
//
// # cad-index
//
// An append-only text file of records, one a line, each followed by a
// space and the CRC-32 (IEEE) of the record in eight hex digits, seeded
// with its kind's derivation version (see "Derivation versions"):
//
//	c <commit> <tree> <parents> <author name> <author email> <unix seconds> <zone offset seconds> <message> <crc>
//	p <root tree> <path> <tree> <octal mode> <crc>
//
// Ids are 40 hex digits; <parents> is a comma-separated list of ids, or
// "-" for none; names, emails, messages and paths are Go-quoted strings
// (strconv.Quote). A commit record is what package gitrepo reads of a
// commit (gitobj.CommitInfo; its kpt: annotations are parsed again from
// the message when the record is read); a path record says which entry a
// slash-separated path leads to under a root tree. Records are learnt by
// reads (a list learns one per tagged commit and per package path) and
// appended in one O_APPEND write per read operation or per 256 KiB, under
// the file's lock (refstore.LockFile), leaving out records another
// process appended since this one last looked. Loading maps the file (or
// reads it where mmap is missing, see gitobj.MapFile), checks each line's
// checksum and keeps only where each record lies, in arrays sorted by key;
// a record is parsed when asked for. A line cut short by a crash, or
// damaged, fails its checksum and is skipped; a file over 512 MiB is
// neither loaded nor appended to. After 1,000 records learnt, the parsed
// records are dropped and the file loaded again when needed.
//
// # cad-paths
//
// cad-index's path records sorted, in records of a fixed width behind a
// fan-out table, so that a process that starts cold finds a package's
// tree in a tagged commit with two reads of a small file. Integers are
// big-endian:
//
//	"cadpath1"      8 bytes
//	covered         8 bytes: how many bytes of cad-index the records hold
//	count           4 bytes
//	crc             4 bytes: CRC-32 of the 20 bytes above and the fan-out
//	fan-out         256 × 4 bytes: records whose key starts with a byte ≤ i
//	records         count × 60 bytes, sorted by key:
//	                key (36): root tree id (20) and the first 16 bytes of
//	                the SHA-256 of the path; value (20): the tree the path
//	                leads to; CRC-32 of these (4), seeded with the
//	                derivation version of its kind
//	tail            records of the same form, unsorted, appended after
//	                the sorted ones, at most 1,024
//
// Workspace records share the form: key, 20 bytes of SHA-256 of
// "cad-workspace\x00" and the package path (so a package's records lie
// together, and never start as a tree id does) and the first 16 bytes of
// a v<N> tag's object id; value, the first 20 bytes of the SHA-256 of the
// workspace that object gives the package. They let a new draft's check
// that its workspace is free read no commit of the package's tags.
//
// A lookup binary-searches the fan-out bucket (read in one call up to
// 1,024 records, else narrowed a record at a time), then the tail. A list
// rebuilds the file when cad-index has grown by more than an eighth of
// what cad-paths covers: the old records and those of cad-index appended
// since are merged into a temporary file, which is renamed over
// cad-paths, so a crash leaves the old file or the new. Between rebuilds,
// what a Get or a new draft learns and what an approval writes is
// appended to the tail under the file's lock, in whole records; a record
// cut short by a crash is cut off by the next append and never read; when
// the tail is full the append merges it (a rebuild). A missing, short or
// damaged file, a header whose checksum fails, or a record whose checksum
// fails reads as no answer, never as a wrong one; a record appended while
// another process rebuilds may be lost, which costs a read of the objects
// later. The temporary file of a rebuild is cad-paths-<digits>.tmp,
// made by tmpfile.Create; each rebuild first removes those of dead
// writers (tmpfile.RemoveStale).
//
// # Derivation versions
//
// Each kind of record ([Kind]: commit, path, workspace) is derived from
// the objects by code of its own, whose version ([CommitVersion],
// [PathVersion], [WorkspaceVersion]) seeds the CRC-32 of every record of
// that kind (version 1 seeds nothing). A record that code of another
// version derived fails its checksum, and is read as none: a change to
// what a derivation answers bumps its version (package gitrepo's
// TestDerivationGolden fails until it does), and the records already
// written then cost a read of the objects, never a wrong answer. A
// rebuild of cad-paths drops them.
//
// # Concurrency
//
// An ObjIndex and a PathFile are safe for concurrent use; processes
// sharing a repository coordinate through the files' locks and the
// atomic rename of a rebuild.
//
// hooks.go holds what the tests of package gitrepo use to look into
// cad-paths; nothing else calls it.
package index
