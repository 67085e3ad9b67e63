// Package gitobj reads and writes git objects of a repository on disk
// where go-git is too slow for cad: it looks objects up in pack files
// without decoding whole indexes, finds an entry of a packed tree without
// building the tree, writes loose objects at git's compression level, and
// holds the tree and commit formats as cad reads them and the object
// cache that package gitrepo shares with it. It also reads the packs
// ([PackReader.AddAlternates]) and loose objects ([ReadLoose]) of a
// repository's alternates, which go-git cannot reach outside the git
// directory. Everything else (the repository's own loose objects, packs
// with older indexes, objects in memory) is go-git's.
//
// # Pack and index, as read here
//
// A pack is objects/pack/pack-<id>.pack with its index pack-<id>.idx.
// [PackReader] reads version 2 indexes only (git's since 2007; another is
// left to go-git):
//
//	"\xfftOc", version 2                       8 bytes
//	fan-out: 256 big-endian uint32, entry i     1024 bytes
//	  counts the objects whose id's first byte is <= i; the last, n,
//	  is the number of objects
//	n object ids, sorted                       20 bytes each
//	n CRC32s of the packed entries             4 bytes each (not read)
//	n offsets                                  4 bytes each
//	  the offset in the pack, or, with the top bit set, the index of an
//	  8-byte offset in the table that follows
//	large offsets                              8 bytes each
//	pack checksum, index checksum              20 bytes each
//
// A lookup reads the fan-out once per pack (when it is opened), then
// binary-searches the ids that share the first byte and reads one offset:
// a few hundred bytes of a file that may be megabytes. The pack starts
// with "PACK", a version and a count; an entry is a header (type in bits
// 4-6 of the first byte, size in 7-bit groups), for an offset delta the
// distance back to its base (git's "offset encoding"), for a ref delta
// the base's id, then the zlib stream of the content or the delta, read
// to its end so that zlib checks its checksum. An index or pack file
// smaller than 1 MiB is mapped into memory when opened; a larger one is
// read with ReadAt until it has served mapAfter lookups, then mapped, as
// a list reads it all (where mmap is missing, see [MapFile], it is always
// read). A mapped file is closed at the next lookup and read through its
// mapping alone, so an idle reader holds no descriptor for it.
// [DropPages] takes pages a list is done with out of the resident
// set every [DropPagesEvery] reads (on linux; elsewhere it does nothing).
// A damaged index or pack reads as repository.ErrCorrupt naming the file.
//
// # Multi-pack-index, as read here
//
// objects/pack/multi-pack-index (git multi-pack-index write, git repack
// --write-midx, git maintenance's incremental-repack) indexes the objects
// of many packs of one directory as one:
//
//	"MIDX", version 1, hash version 1 (SHA-1),   12 bytes
//	  a chunk count C, 0 base files, the number of packs P
//	chunk table: C+1 entries of a 4-byte id and  12 bytes each
//	  an 8-byte offset in the file; the last, id 0, where the last
//	  chunk ends
//	chunks, in the table's order:
//	  PNAM the packs' .idx names, NUL-terminated, sorted (the pack-int-id
//	       of a pack is its place here), NUL padding
//	  OIDF fan-out, as in an .idx                1024 bytes
//	  OIDL n object ids, sorted                  20 bytes each
//	  OOFF per object its pack-int-id and offset  8 bytes each
//	       (with a LOFF chunk, an offset with the top bit set is the
//	       index of an 8-byte offset there; without, every offset is
//	       below 4 GiB and stored whole)
//	  LOFF large offsets (optional)              8 bytes each
//	  others (RIDX, BTMP, ...) are not read
//	checksum of all of the above                 20 bytes
//
// [PackReader] reads each directory's (its own and its alternates') at
// its first lookup: it parses the header, the chunk table, PNAM and OIDF
// and checks that each chunk lies in the file with the size the counts
// say; it is mapped or read as an .idx is (mapWhole, mapAfter). The packs
// it names are covered: their objects are found through it (fan-out,
// then the ids of the bucket, as in an .idx), and a pack is opened at its
// first object (its .pack only; its .idx is never read). The directory
// is listed only at the first lookup the multi-pack-indexes do not
// answer, and at each scan after: a cold read of a repository git
// maintenance keeps reads one file and the packs it needs, not a
// directory of a thousand (git lists it). Packs it does not name,
// written since, are searched through their .idx files. A
// multi-pack-index of
// another version or hash, with base files (git 2.47's incremental
// chains, objects/pack/multi-pack-index.d, are not read at all), that
// does not parse, or names a pack that is not there (when the directory
// is listed, or a pack it names is opened), is not read, and not parsed
// again until it changes. A lookup that meets damage in one
// (a pack-int-id or large offset out of range, a pack removed since the
// scan, an entry that does not read at the offset it gives) stops reading
// it and looks again through the .idx files: a stale or damaged
// multi-pack-index never makes an object unreadable that the packs hold.
// Damage in its ids can hide an object from the reader ([ErrNotInPack]:
// the caller then asks go-git, which reads the .idx files), as damage in
// an .idx can. Its checksum is not verified when it is opened: git does
// not either (git multi-pack-index verify does), cad does not for .idx
// files, and hashing the whole file (29 bytes an object and more: 469 KB
// for 16,000 objects, 1.1-1.4 ms here) would cost a cold read in a new
// process four times the lookups it serves (open, Get and files of one
// revision: 0.34 ms).
//
// # Packs, as written here
//
// [WritePack] writes the objects of a write batch as one pack: version 2,
// every object whole (no deltas), deflated at zlib's fastest level, and
// its version 2 index (a CRC-32 per entry, offsets past 2 GiB in the
// large-offset table). Each
// file is written under a temporary name in objects/pack
// (tmp_pack_cad_write_*, tmp_idx_cad_write_*: package tmpfile), synced as the
// caller's ref store asks, and renamed into place, the pack before its
// index: readers find packs by their index, so none sees a pack cut
// short. Until a ref names its objects a pack is garbage git gc removes;
// [PackReader.Rescan] makes a reader see a pack written in the same clock
// tick as its last scan.
//
// # Merging packs
//
// [Repack] (package gitrepo's maintenance) writes the objects of some
// packs and of loose objects into one new pack: each source pack's
// entries in the order of their offsets, copied compressed after their
// CRC-32 is checked against the source index (an offset delta's header
// rewritten with its new distance back, a ref delta resolved and stored
// whole), then the loose objects inflated, checked against their ids and
// deflated whole; an object several inputs hold is written once. The
// count in the pack's header and its checksum are filled in at the end
// (the file is read back to hash it). Its temporary files,
// tmp_pack_cad_maint_* and tmp_idx_cad_maint_*, are renamed into place
// as WritePack's are, and removed by tmpfile.RemoveStale when a killed
// process left them. It removes nothing: the caller removes the merged
// packs ([RemovePack], the index first) and loose objects
// ([RemoveLoose]) once the new pack is in place. A [PackReader] keeps
// reading a pack it has open after its files are removed, and closes it
// at its next scan of the directory.
//
// # Staging a fetched pack
//
// A fetch (package gitrepo's remote mirror) stages the pack it receives
// in a [PackStaging] before it adds it to the objects. On disk the pack
// is written, as it arrives, to a temporary file
// objects/pack/tmp_pack_cad_fetch_<random> (git's own tmp_ naming, so
// that git prune treats it as git's). [PackStaging.Prepare], holding no lock,
// reads it back through go-git's packfile parser (a whole pack is asked
// for, never a thin one, so it is checked on its own), writes its version
// 2 index with go-git's idxfile to tmp_idx_cad_fetch_<random> beside it, and
// syncs the index, then the pack, as the caller's ref store asks.
// [PackStaging.Install], under the caller's write lock, renames the pack
// to pack-<checksum>.pack, then the index to pack-<checksum>.idx (the
// index last: readers find packs by their index, so none sees a pack
// without one), then syncs objects/pack; when pack-<checksum>.idx is
// there already it renames nothing. [PackStaging.Close] removes whatever
// was not moved in. A process killed meanwhile leaves its temporary
// files, locked until they are in place or closed: [NewPackStaging]
// removes those of dead writers by package tmpfile's rule
// (tmpfile.RemoveStale), as maintenance does. For a repository
// in memory the pack is a buffer that Prepare parses into a storage of
// its own and Install copies object by object.
//
// # Deltas and ropes
//
// A git delta is the base's size and the result's size (7-bit groups),
// then instructions: a byte with the top bit set copies a range of the
// base (bits 0-3 say which offset bytes follow, bits 4-6 which size bytes;
// a size of 0 means 0x10000), a byte 1-127 inserts that many literal
// bytes that follow. A delta chain is followed down to an object in the
// cache or a whole one, then applied upwards in two scratch buffers; only
// the direct base and the chain's bottom are cached.
//
// Porch's repositories store every approval's root tree (every package of
// the branch) as a delta on the previous one. To find one entry of such a
// tree without building it, a delta-built tree of 16 KiB or more is a
// rope (deltatree.go): the pieces of its chain's bottom, indexed once
// (where each entry starts, a hash table of the names), and of the
// deltas' literal bytes. A delta on a rope makes a rope by slicing
// pieces; a lookup skips whole pieces of the bottom through its index and
// parses only the bytes around insertions. A rope longer than
// [MaxRopePieces] is built into a new bottom. Whatever is unusual (not a
// tree, a malformed bottom, a name twice) returns [ErrRopeUnfit], and the
// caller builds the tree and scans it ([ScanTree]), so the answers are
// the same whatever the input.
//
// # Trees
//
// A tree object is a sequence of entries "<octal mode> <name>\x00<20-byte
// id>", sorted as git sorts them: by name, a directory's name compared as
// if it ended in "/" ([CompareEntries]). [ParseTree] decodes one into
// [TreeEntry] values, [ScanTree] finds one name in it without decoding
// the rest, and [EncodeTree] writes sorted entries as git and go-git do
// (a directory's mode as 40000).
//
// # Commits
//
// [DecodeCommit] reads what cad keeps of a commit ([CommitInfo]) from its
// raw content as go-git's decoder reads it: the tree (the first header),
// the parents that follow, the author right after them, and the message
// after the first blank line; other headers are skipped, and a commit it
// cannot read is left to go-git. [Annotations] parses the kpt: lines
// Porch appends to messages ("kpt:" and the JSON of an [Annotation]),
// skipping those that do not parse; repository/gitrepo/DESIGN.md,
// "Layout", says what they mean.
//
// # Loose objects
//
// [WriteLoose] writes "<type> <size>\x00<content>" deflated at zlib's
// fastest level (git's core.looseCompression default; go-git uses the
// default level, most of an approval's CPU on large trees), a tree of
// 64 KiB or more uncompressed (level 0, as git's core.looseCompression 0
// writes: the ids that fill a tree barely compress), to
// objects/<2 hex>/<38 hex>, through a temporary file in the same
// directory (tmp_obj_cad_*: package tmpfile) renamed into place, read-only; an object already there is
// left as it is. Making the object durable (fsync) before a ref names it
// is package refstore's.
//
// # What is cached
//
// [LRU] is one cache per repository, bounded by Options.CacheBytes with
// an estimate of each value's size, keyed by a kind and an object id; it
// holds only what an id determines, so nothing in it is ever stale.
// Package gitrepo keeps decoded trees and commits, peeled tags, the
// packages under a tree, a package's files and info, a tag's kpt:
// annotations, the subtree a path leads to, and the tree a replacement
// of one entry of a tree made ([KindTree] ... [KindReplaced]: reused only
// when that tree is stored, since a discarded batch may have made it); the pack reader keeps resolved delta bases and chain
// bottoms by pack and offset, and ropes with their indexed bottoms. No
// entry is larger than a quarter of the bound.
//
// # Concurrency
//
// A PackReader and an LRU are safe for concurrent use; a PackReader reads
// one object at a time (readers of a repository take turns on its mutex).
// Values in the cache are shared and never modified.
package gitobj
