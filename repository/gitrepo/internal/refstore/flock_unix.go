//go:build unix

package refstore

import (
	"errors"
	"os"
	"syscall"
)

// LockFile takes an exclusive lock on the open file f, waiting for it,
// and returns what releases it. Where the lock cannot be taken it returns
// at once: the lock only avoids duplicate work.
func LockFile(f *os.File) (unlock func()) {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err == nil {
			return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
		}
		if !errors.Is(err, syscall.EINTR) {
			return func() {}
		}
	}
}

// RenameOpen renames the open file f to newpath: here while f is open, so
// that its lock is held until the file is in place.
func RenameOpen(f *os.File, newpath string) error { return os.Rename(f.Name(), newpath) }

// RemoveIfAbandoned removes the temporary file p when its writer is gone:
// no process holds its lock (LockFile) and it holds data, so a writer
// had locked it before writing. A file renamed meanwhile is left.
func RemoveIfAbandoned(p string) {
	f, err := os.Open(p)
	if err != nil {
		return
	}
	defer f.Close()
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		return // its writer is alive
	}
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return // perhaps created and not yet locked
	}
	if cur, err := os.Stat(p); err == nil && os.SameFile(cur, fi) {
		_ = os.Remove(p)
	}
}
