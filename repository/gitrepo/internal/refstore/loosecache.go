package refstore

import (
	"io/fs"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// Loose refs read by walks (Snapshot, the refs a list starts from) are
// cached by the identity of their file, as git's index caches a file's
// state by its stat data: a walk learns each file's identity (device,
// inode, size, modification and change times: PackedIdentity) from one
// lstat, and reads the file only when the identity is not the one it
// read the value with. An open draft's or proposal's ref stays loose for
// an hour after its last write (MaintainOptions.IdleRefAge); with
// thousands of them, opening and reading each file was most of a warm
// list (BENCHMARKS.md, gitrepo, "open drafts").
//
// A write of a ref, by cad or git, gives its file a new change time (a
// new file renamed into place, or the file written in place): a later
// walk sees another identity and reads the file. The one way a write
// could keep an identity is to land within the clock's tick of the
// change time the cached value was read with, on a freed inode reused
// with the same size. So, as git's "racy git" rule, a value is cached
// only when its file's change time is at least racyRefAge older than the
// walk's clock: a write after that read has a later change time. Refs
// written in the last seconds are read every time. Off Linux (no change
// time in PackedIdentity) nothing is cached.

// racyRefAge is how much older than the walk's start a loose ref file's
// change time must be for its value to be cached: far above any file
// system's timestamp granularity, and above a small clock skew between a
// network file system's server and this host.
var racyRefAge = 3 * time.Second

// seenRef is a loose ref's value read from the file of identity id.
type seenRef struct {
	id   [41]byte
	hash plumbing.Hash
}

// looseWalked is loose(name) for a file a walk found as d, through the
// cache of values by file identity.
func (f *FSRefs) looseWalked(name string, d fs.DirEntry) (plumbing.Hash, bool, error) {
	now := time.Now()
	fi, err := d.Info() // an lstat
	if err != nil || !fi.Mode().IsRegular() {
		return f.loose(name)
	}
	id, ok := PackedIdentity(fi)
	if !ok {
		return f.loose(name)
	}
	f.seenMu.Lock()
	s, hit := f.seen[name]
	f.seenMu.Unlock()
	if hit && s.id == id {
		return s.hash, true, nil
	}
	h, found, err := f.loose(name)
	if err != nil || !found || !changedBefore(id, now.Add(-racyRefAge)) {
		return h, found, err
	}
	f.seenMu.Lock()
	if f.seen == nil {
		f.seen = map[string]seenRef{}
	}
	f.seen[name] = seenRef{id: id, hash: h}
	f.seenMu.Unlock()
	return h, found, nil
}

// changedBefore reports whether the change time in identity id is before
// t.
func changedBefore(id [41]byte, t time.Time) bool {
	var ns int64
	for _, b := range id[33:41] {
		ns = ns<<8 | int64(b)
	}
	return ns < t.UnixNano()
}

// pruneSeen forgets the cached values when they are far more than the
// live loose refs a walk found (n): refs packed or deleted since.
func (f *FSRefs) pruneSeen(n int) {
	f.seenMu.Lock()
	if len(f.seen) > 2*n+1024 {
		f.seen = nil
	}
	f.seenMu.Unlock()
}
