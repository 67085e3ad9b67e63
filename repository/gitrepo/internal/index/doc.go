// Package index keeps the persistent indexes of a git repository on disk
// that cad writes beside git's own files: cad-paths ([PathFile]), a cache
// of facts about immutable objects. A fact about an object id never
// becomes false, so the file is never stale. Deleting it loses nothing
// but time. A repository whose directory cannot be written is read
// without it. (cad-index, an append-only file of commit and path records
// that lists loaded, was removed: it saved a cold list of 50,000
// revisions 11%, less than what writing it cost the first list; a
// repository's old cad-index is ignored and removed by maintenance.)
//
// # cad-paths
//
// Where a path leads under a root tree, sorted, in records of a fixed
// width behind a fan-out table, so that a process that starts cold finds a package's
// tree in a tagged commit with two reads of a small file. Integers are
// big-endian:
//
//	"cadpath1"      8 bytes
//	reserved        8 bytes: 0 (a file written while cad-index was kept
//	                says how much of it the records held; ignored)
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
// 1,024 records, else narrowed a record at a time), then the tail. What
// a list (once, at its end), a Get or a new draft learns and what an
// approval writes is appended to the tail under the file's lock, in whole
// records; a record cut short by a crash is cut off by the next append
// and never read. When the tail would hold more than 1,024 records the
// append rebuilds the file instead: the old records, the tail and the new
// ones are merged into a temporary file, which is renamed over
// cad-paths, so a crash leaves the old file or the new. A missing, short or
// damaged file, a header whose checksum fails, or a record whose checksum
// fails reads as no answer, never as a wrong one; a record appended while
// another process rebuilds may be lost, which costs a read of the objects
// later. The temporary file of a rebuild is cad-paths-<digits>.tmp,
// made by tmpfile.Create; each rebuild first removes those of dead
// writers (tmpfile.RemoveStale).
//
// # Derivation versions
//
// Each kind of record ([Kind]: path, workspace) is derived from the
// objects by code of its own, whose version ([PathVersion],
// [WorkspaceVersion]) seeds the CRC-32 of every record of
// that kind (version 1 seeds nothing). A record that code of another
// version derived fails its checksum, and is read as none: a change to
// what a derivation answers bumps its version (package gitrepo's
// TestDerivationGolden fails until it does), and the records already
// written then cost a read of the objects, never a wrong answer. A
// rebuild of cad-paths drops them.
//
// # Concurrency
//
// A PathFile is safe for concurrent use; processes sharing a
// repository coordinate through the file's lock and the
// atomic rename of a rebuild.
//
// hooks.go holds what the tests of package gitrepo use to look into
// cad-paths; nothing else calls it.
package index
