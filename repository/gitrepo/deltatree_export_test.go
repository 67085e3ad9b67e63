package gitrepo

import (
	"errors"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/configasdata/cad/repository/gitrepo/internal/gitobj"
)

// TreeLookup finds entries of packed trees of a git directory both ways,
// through ropes and by scanning the built tree, for the tests of package
// gitrepo_test. It reads as a list does: one pack reader and one cache.
type TreeLookup struct {
	pr               *gitobj.PackReader
	cache, scanCache *gitobj.LRU
	final            []byte
}

// NewTreeLookup opens the packs of gitDir, with an object cache of
// cacheBytes.
func NewTreeLookup(gitDir string, cacheBytes int64) *TreeLookup {
	return &TreeLookup{pr: gitobj.NewPackReader(gitDir), cache: gitobj.NewLRU(cacheBytes), scanCache: gitobj.NewLRU(8 << 20)}
}

// Close closes the packs.
func (l *TreeLookup) Close() { l.pr.Close() }

// Rope looks name up in tree h through ropes; rope is false when the
// rope path left it to the scan.
func (l *TreeLookup) Rope(h plumbing.Hash, name string) (mode string, id plumbing.Hash, found, rope bool, err error) {
	e, found, err := l.pr.LookupEntry(h, name, l.cache, &l.final)
	if errors.Is(err, gitobj.ErrRopeUnfit) {
		return "", plumbing.ZeroHash, false, false, nil
	}
	return e.Mode.String(), e.Hash, found, true, err
}

// Scan looks name up in tree h by building it and scanning it.
func (l *TreeLookup) Scan(h plumbing.Hash, name string) (mode string, id plumbing.Hash, found bool, err error) {
	_, data, err := l.pr.Object(h, l.scanCache)
	if err != nil {
		return "", plumbing.ZeroHash, false, err
	}
	e, found, err := gitobj.ScanTree(data, name)
	return e.Mode.String(), e.Hash, found, err
}

// SetMaxRopePieces sets how many pieces a rope may have before it is
// built into a new bottom, and returns a func that restores it.
func SetMaxRopePieces(n int) func() {
	old := gitobj.MaxRopePieces
	gitobj.MaxRopePieces = n
	return func() { gitobj.MaxRopePieces = old }
}
