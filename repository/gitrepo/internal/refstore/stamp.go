package refstore

import (
	"crypto/sha256"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// A Stamp is the identity of every file a snapshot of refs was read from,
// so that a caller that derives something from the refs (gitrepo's
// Version token) can tell, with a few lstats and without reading a ref,
// that the refs have not changed since.
//
// What it covers, and why that is every way a ref can change:
//
//   - packed-refs. git, cad and go-git write it anew under a temporary
//     name and rename it into place: a new inode and change time.
//   - every directory the walk of the loose refs entered, from each
//     prefix's root down (a root that does not exist is recorded as
//     absent). A ref file created, renamed over (git, cad: `<ref>.lock`
//     renamed onto the ref), or removed changes its directory's entries,
//     so its modification and change times; a new directory changes its
//     parent's, which the stamp holds.
//   - every loose ref file the walk found, and each extra ref's file
//     (absent or not) and its directory: a program that rewrites a ref file in place
//     (go-git does, opening it with O_TRUNC) changes neither the
//     directory nor the inode, only the file's size or times. The
//     caller may leave out the files under some prefixes (byDir), whose
//     refs are never rewritten in place, only created and removed (a
//     layout's immutable refs, such as package tags): their directories
//     cover them, and a thousand loose tags in a hundred directories cost
//     a hundred lstats, not eleven hundred. A program rewriting one of
//     them in place goes unseen until something else changes.
//
// Each identity is the file's device, inode, size, modification and
// change times (PackedIdentity). A change after the stamp was taken gets
// a change time from the clock at that moment, so it shows, unless it
// falls in the same tick of the file system's clock as the change the
// stamp saw, on the same inode with the same size. As git's "racy git"
// rule, and as the loose-ref cache (loosecache.go), a stamp is therefore
// made only when every file's change time is at least racyRefAge older
// than the moment the snapshot started: a later change has a later
// change time. The same rule covers a change made while the snapshot was
// being read: it is younger than that moment, so no stamp is made.
//
// Off Linux (no change time in a file's identity) and while a journal
// this process could not complete is laid over the refs (overlay.go) no
// stamp is made. A Stamp is immutable.
type Stamp struct {
	paths []string   // absolute paths
	ids   [][41]byte // ids[i] is the identity of paths[i]; zero: absent
}

// SnapshotStamped is Snapshot that also returns the Stamp of the files
// the refs were read from, or a nil Stamp when none can be trusted (a
// file changed in the last racyRefAge, a journal laid over the refs, no
// change times on this system). The loose refs under the prefixes byDir
// (each ending in a slash) are covered by their directories alone (see
// Stamp). Errors are those of Snapshot.
func (f *FSRefs) SnapshotStamped(prefixes []string, extra []plumbing.ReferenceName, byDir []string, damaged func(error)) (*RefSnap, *Stamp, error) {
	start := time.Now()
	var paths []string
	snap, err := f.snapshot(prefixes, extra, damaged, &paths, byDir)
	if err != nil {
		return nil, nil, err
	}
	f.mu.Lock()
	overlaid := f.ov != nil
	f.mu.Unlock()
	if overlaid {
		return snap, nil, nil
	}
	paths = append(paths, filepath.Join(f.GitDir, "packed-refs"))
	for _, name := range extra {
		p := f.refPath(name)
		paths = append(paths, p, filepath.Dir(p))
	}
	slices.Sort(paths)
	paths = slices.Compact(paths)
	st := &Stamp{paths: paths, ids: make([][41]byte, len(paths))}
	oldest := start.Add(-racyRefAge)
	for i, p := range paths {
		id, ok := identityAt(p)
		if !ok || id[0] != 0 && !changedBefore(id, oldest) {
			return snap, nil, nil
		}
		st.ids[i] = id
	}
	return snap, st, nil
}

// Unchanged reports whether every file of s still has the identity it
// had when s was taken: then the refs s was taken with are those on disk
// (see Stamp). It is false for a nil s, and while a journal this process
// could not complete is laid over the refs.
func (f *FSRefs) Unchanged(s *Stamp) bool {
	if s == nil {
		return false
	}
	f.mu.Lock()
	overlaid := f.ov != nil
	f.mu.Unlock()
	if overlaid {
		return false
	}
	return s.Holds()
}

// Holds reports whether every file of s still has the identity it had
// when s was taken, with one lstat per file and no FSRefs: then the refs
// s was taken with are those on disk, unless a journal is pending
// (JournalPending), which the caller looks for first. It is false for a
// nil s.
func (s *Stamp) Holds() bool {
	if s == nil {
		return false
	}
	for i, p := range s.paths {
		id, ok := identityAt(p)
		if !ok || id != s.ids[i] {
			return false
		}
	}
	return true
}

// walkDirs is walkLoose's visit of a directory, for a stamp: it records
// the directory's path.
func walkDirs(paths *[]string) func(p string, d fs.DirEntry) {
	if paths == nil {
		return nil
	}
	return func(p string, _ fs.DirEntry) { *paths = append(*paths, p) }
}

// SetRacyRefAge sets how much older than a walk's start a file's change
// time must be for its loose ref's value to be cached and for a Stamp to
// be made (3 seconds), and returns a function that restores it. For
// tests only: a negative age trusts files changed just now, as a test
// needs to see a Stamp at work without waiting.
func SetRacyRefAge(d time.Duration) (restore func()) {
	old := racyRefAge
	racyRefAge = d
	return func() { racyRefAge = old }
}

// Digest returns a digest of how the refs under prefix (which ends in a
// slash) are stored: the names and values of packed-refs' lines that name
// one (at any depth), and of the loose ref files directly below prefix
// (a damaged one by its name alone). Every change of a ref directly below
// prefix changes it, by any writer; so may a change that leaves their
// values as they were (git pack-refs moving one into packed-refs). It
// reads no more than a lookup of those refs does: packed-refs' parsed
// lines (re-read when the file changed) and one directory. Errors are
// those of reading packed-refs or the directory.
func (f *FSRefs) Digest(prefix string) ([sha256.Size]byte, error) {
	names, hashes, err := f.packed()
	if err != nil {
		return [sha256.Size]byte{}, err
	}
	sum := sha256.New()
	var buf [4096]byte
	b := buf[:0]
	add := func(name string, h plumbing.Hash) {
		if len(b)+len(name)+1+len(h) > len(buf) {
			sum.Write(b)
			b = buf[:0]
		}
		b = append(b, name...)
		b = append(b, 0)
		b = append(b, h[:]...)
	}
	lo, hi := (&RefSnap{Names: names}).Prefixed(prefix)
	for i := lo; i < hi; i++ {
		add(names[i], hashes[i])
	}
	add("loose", plumbing.ZeroHash) // packed and loose apart
	entries, err := os.ReadDir(filepath.Join(f.GitDir, filepath.FromSlash(prefix)))
	if err != nil && !notExist(err) {
		return [sha256.Size]byte{}, err
	}
	for _, d := range entries { // sorted by name
		if d.IsDir() || strings.HasSuffix(d.Name(), ".lock") {
			continue
		}
		name := prefix + d.Name()
		h, ok, err := f.looseWalked(name, d)
		switch {
		case IsDamaged(err):
			h, ok = plumbing.ZeroHash, true
		case err != nil:
			return [sha256.Size]byte{}, err
		}
		if ok {
			add(name, h)
		}
	}
	sum.Write(b)
	var out [sha256.Size]byte
	sum.Sum(out[:0])
	return out, nil
}
