//go:build unix

package tmpfile

import (
	"errors"
	"os"
	"syscall"
)

// lock takes an flock on the new file f, held until f is closed. Where it
// cannot be taken the file goes unlocked: RemoveStale then takes it for a
// dead writer's once it is Grace old.
func lock(f *os.File) {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			return
		}
	}
}

// removeIfStale removes temporary file p when no process holds its lock
// and it was last written over Grace ago; it holds the lock while it
// removes the file, and leaves a file renamed meanwhile.
func removeIfStale(p string) {
	f, err := os.Open(p)
	if err != nil {
		return
	}
	defer f.Close()
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		return // its writer is alive
	}
	fi, err := f.Stat()
	if err != nil || !stale(fi, Grace) {
		return
	}
	if cur, err := os.Stat(p); err == nil && os.SameFile(cur, fi) {
		_ = os.Remove(p)
	}
}

// RenameOpen renames the open temporary file f to newpath: here while f
// is open, so that its lock is held until the file is in place.
func RenameOpen(f *os.File, newpath string) error { return os.Rename(f.Name(), newpath) }
