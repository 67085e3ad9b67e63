package index

import (
	"bytes"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"
)

// PathsRecord is a record of cad-paths, for the tests of package
// gitrepo_test.
type PathsRecord struct {
	Root plumbing.Hash
	Path string
	Tree plumbing.Hash
}

// PathsLookup looks path p under tree root up in the cad-paths of gitDir.
func PathsLookup(gitDir string, root plumbing.Hash, p string) (plumbing.Hash, bool) {
	pf := NewPathFile(gitDir)
	defer pf.Close()
	return pf.Subtree(root, p)
}

// PathsCount returns how many sorted records the cad-paths of gitDir
// holds; false when it is missing or not valid.
func PathsCount(gitDir string) (int, bool) {
	pf := NewPathFile(gitDir)
	defer pf.Close()
	pf.mu.Lock()
	defer pf.mu.Unlock()
	pf.open()
	if pf.hdr == nil {
		return 0, false
	}
	return int(pf.hdr.count), true
}

// WritePathsFile writes recs as the cad-paths of gitDir, all sorted.
func WritePathsFile(gitDir string, recs []PathsRecord) error {
	var fresh []PathRecord
	for _, r := range recs {
		fresh = append(fresh, PathRecord{Key: PathKey36(r.Root, r.Path), Tree: r.Tree})
	}
	slices.SortFunc(fresh, func(a, b PathRecord) int { return bytes.Compare(a.Key[:], b.Key[:]) })
	pf := NewPathFile(gitDir)
	defer pf.Close()
	pf.mu.Lock()
	defer pf.mu.Unlock()
	return pf.write(bytes.NewReader(nil), fresh)
}

// SetPathBucketRead sets how many records of a cad-paths bucket are read
// in one call, and returns a function that restores it.
func SetPathBucketRead(n uint32) (restore func()) {
	old := pathBucketRead
	pathBucketRead = n
	return func() { pathBucketRead = old }
}

// SetPathTailMax sets how many appended records cad-paths holds before
// they are merged, and returns a function that restores it.
func SetPathTailMax(n int) (restore func()) {
	old := pathTailMax
	pathTailMax = n
	return func() { pathTailMax = old }
}

// PathsTail returns the size in bytes of the tail of the cad-paths of
// gitDir (what was appended after its sorted records), -1 when it is
// missing or not valid.
func PathsTail(gitDir string) int64 {
	pf := NewPathFile(gitDir)
	defer pf.Close()
	pf.mu.Lock()
	defer pf.mu.Unlock()
	pf.open()
	if pf.hdr == nil {
		return -1
	}
	fi, err := pf.f.Stat()
	if err != nil {
		return -1
	}
	return fi.Size() - pf.hdr.sortedEnd()
}

// PathsHeaderSize is the size of cad-paths's header, PathsRecordSize of
// one of its records.
const (
	PathsHeaderSize = pathHeaderSize
	PathsRecordSize = pathRecordSize
)

// WorkspacePrefix is the first 20 bytes of the keys of package full's
// workspace records in cad-paths.
func WorkspacePrefix(full string) []byte {
	p := wsPrefix(full)
	return p[:]
}

// AddWorkspaceRecord adds to the cad-paths of gitDir the record that
// object h gives package full workspace ws, as a process that learnt it
// would.
func AddWorkspaceRecord(gitDir, full string, h plumbing.Hash, ws string) {
	pf := NewPathFile(gitDir)
	defer pf.Close()
	pf.Add(WsRecord(full, h, ws))
}

// SetOff turns persistent indexes off, for the benchmarks and tests of
// package gitrepo that measure or check a repository without them, and
// returns a function that restores what was on: with paths, cad-paths' path records are
// neither looked up nor added, and with workspaces its workspace
// records. It applies to the lookups made after it.
func SetOff(paths, workspaces bool) (restore func()) {
	var bits uint32
	for i, on := range []bool{paths, workspaces} {
		if on {
			bits |= 1 << i
		}
	}
	old := off.Swap(bits)
	return func() { off.Store(old) }
}

// SetDerivationVersion sets the version of kind k's derivation as if the
// constant said v, and returns a function that restores it.
func SetDerivationVersion(k Kind, v int) (restore func()) {
	old := seeds[k].Swap(seedOf(k, v))
	return func() { seeds[k].Store(old) }
}
