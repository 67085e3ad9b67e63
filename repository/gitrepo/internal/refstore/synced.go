package refstore

import (
	"os"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
)

// A write syncs the loose objects it refers to before a ref names them
// (FSRefs.syncObjects). Among them are objects that were already in the
// repository: every unchanged file of a package that a new draft, a copy
// or a clone writes again, and every file a fan-out to many downstream
// packages shares. Syncing those again costs a flush of the disk's cache
// each, for nothing: the process synced them when it wrote them. So an
// FSRefs remembers the loose objects it synced, by hash and file
// identity (device, inode, size and modification time), and skips them
// while the same file is in place. An object whose file was replaced
// since (removed, and written again by another program, which may not
// have synced it) is synced again: its file has another inode, or the
// freed inode number reused with another modification time. Where the
// identity of a file is not known (see fileID), every object is synced,
// as before.

// maxDurable bounds the objects remembered; when it is reached the
// memory starts afresh, which costs only syncs.
const maxDurable = 1 << 16

// durableObjects is the set of loose objects this process synced.
type durableObjects struct {
	mu  sync.Mutex
	ids map[plumbing.Hash]fileIdentity
}

// fileIdentity is a file's device, inode, size and modification time.
type fileIdentity struct {
	dev, ino uint64
	size     int64
	mtime    int64 // nanoseconds
}

// synced reports whether the loose object h, whose file is at path, was
// synced by this process and is still the same file.
func (d *durableObjects) synced(h plumbing.Hash, path string) bool {
	d.mu.Lock()
	id, ok := d.ids[h]
	d.mu.Unlock()
	if !ok {
		return false
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return false
	}
	cur, ok := fileID(fi)
	return ok && cur == id
}

// ObjectSyncHook, when set (by tests only), is called with every loose
// object a write syncs.
var ObjectSyncHook func(h plumbing.Hash)

// add records that the loose object h, open as fl, was synced.
func (d *durableObjects) add(h plumbing.Hash, fl *os.File) {
	if ObjectSyncHook != nil {
		ObjectSyncHook(h)
	}
	fi, err := fl.Stat()
	if err != nil {
		return
	}
	id, ok := fileID(fi)
	if !ok {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ids == nil || len(d.ids) >= maxDurable {
		d.ids = map[plumbing.Hash]fileIdentity{}
	}
	d.ids[h] = id
}
