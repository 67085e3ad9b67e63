package refstore

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// LooseRef is a loose ref under a prefix: its name below the prefix and
// its value.
type LooseRef struct {
	Name string
	Hash plumbing.Hash
}

// PrefixState reads what decides the refs under prefix (ending in a
// slash) without parsing packed-refs: packed-refs' file information (nil
// when there is none) and the loose refs directly under prefix, sorted
// by name. ok is false when that does not decide them: refs of an
// unfinished journal laid over the disk under prefix, a loose ref that
// is damaged or symbolic, or a file that cannot be read.
func (f *FSRefs) PrefixState(prefix string) (packed os.FileInfo, loose []LooseRef, ok bool) {
	overlaid := false
	f.overlayUnder(func(name string) bool { return strings.HasPrefix(name, prefix) }, func(string, plumbing.Hash) { overlaid = true })
	if overlaid {
		return nil, nil, false
	}
	fi, err := os.Stat(filepath.Join(f.GitDir, "packed-refs"))
	switch {
	case err == nil:
		packed = fi
	case !notExist(err):
		return nil, nil, false
	}
	entries, err := os.ReadDir(filepath.Join(f.GitDir, filepath.FromSlash(prefix)))
	if err != nil && !notExist(err) {
		return nil, nil, false
	}
	for _, e := range entries { // sorted by name
		if e.IsDir() || strings.HasSuffix(e.Name(), ".lock") {
			continue
		}
		h, found, err := f.loose(prefix + e.Name())
		if err != nil || !found {
			return nil, nil, false
		}
		loose = append(loose, LooseRef{Name: e.Name(), Hash: h})
	}
	return packed, loose, true
}

// SortedHeader reports whether line, packed-refs' first line, says the
// file is sorted (git's "# pack-refs with: ... sorted" trait).
func SortedHeader(line []byte) bool { return sortedHeader(line) }

// SyncFile syncs fl to disk as the store's Sync mode asks (not at all
// with SyncNone).
func (f *FSRefs) SyncFile(fl *os.File) error { return f.syncFile(fl) }

// SyncDir syncs directory dir as the store's Sync mode asks (only with
// SyncAll).
func (f *FSRefs) SyncDir(dir string) error { return f.syncDir(dir) }

// Fault calls FaultHook, when set, at step: a test's crash point.
func Fault(step string) { fault(step) }
