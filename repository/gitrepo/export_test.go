package gitrepo

import (
	"bytes"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/configasdata/cad/repository/gitrepo/internal/refstore"
)

// SetFaultHook sets the hook called at every step of a ref transaction on
// disk (internal/refstore), for the crash tests of package gitrepo_test.
func SetFaultHook(f func(step string)) { refstore.FaultHook = f }

// PathsRecord is a record of cad-paths, for the tests of package
// gitrepo_test.
type PathsRecord struct {
	Root plumbing.Hash
	Path string
	Tree plumbing.Hash
}

// PathsLookup looks path p under tree root up in the cad-paths of gitDir.
func PathsLookup(gitDir string, root plumbing.Hash, p string) (plumbing.Hash, bool) {
	pf := newPathFile(gitDir)
	defer pf.close()
	return pf.subtree(root, p)
}

// PathsCovered returns how much of cad-index the cad-paths of gitDir
// covers, and how many records it holds; false when it is missing or
// not valid.
func PathsCovered(gitDir string) (int64, int, bool) {
	pf := newPathFile(gitDir)
	defer pf.close()
	pf.mu.Lock()
	defer pf.mu.Unlock()
	pf.open()
	if pf.hdr == nil {
		return 0, 0, false
	}
	return pf.hdr.covered, int(pf.hdr.count), true
}

// WritePathsFile writes recs as the cad-paths of gitDir, covering the
// first covered bytes of cad-index.
func WritePathsFile(gitDir string, covered int64, recs []PathsRecord) error {
	var fresh []pathRecord
	for _, r := range recs {
		fresh = append(fresh, pathRecord{key: pathKey36(r.Root, r.Path), tree: r.Tree})
	}
	slices.SortFunc(fresh, func(a, b pathRecord) int { return bytes.Compare(a.key[:], b.key[:]) })
	pf := newPathFile(gitDir)
	defer pf.close()
	pf.mu.Lock()
	defer pf.mu.Unlock()
	return pf.write(bytes.NewReader(nil), fresh, covered)
}

// UpdatePathsFile brings the cad-paths of gitDir up to date with its
// cad-index, as a list does when the index has grown enough.
func UpdatePathsFile(gitDir string) {
	pf := newPathFile(gitDir)
	defer pf.close()
	pf.update()
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
	pf := newPathFile(gitDir)
	defer pf.close()
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
	pf := newPathFile(gitDir)
	defer pf.close()
	pf.add(wsRecord(full, h, ws))
}

// SetDenyWrite makes writes to the git directories deny returns true for
// fail with a permission error, as for a reader that may not write; nil
// restores writes.
func SetDenyWrite(deny func(gitDir string) bool) { denyWrite = deny }

// SetPushClient replaces the transport pushes use, and returns a function
// that restores it.
func SetPushClient(c func(*transport.Endpoint) (transport.Transport, error)) (restore func()) {
	old := pushClient
	pushClient = c
	return func() { pushClient = old }
}

// SetCrossProcessLock sets whether the cross-process lock is taken to
// work, as on unix (true) or elsewhere (false), and returns a function
// that restores it.
func SetCrossProcessLock(works bool) (restore func()) {
	old := refstore.CrossProcessLock
	refstore.CrossProcessLock = works
	return func() { refstore.CrossProcessLock = old }
}
