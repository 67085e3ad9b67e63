//go:build unix

package refstore

import (
	"context"
	"errors"
	"os"
	"sync"
	"syscall"
	"time"
)

// CrossProcessLock says whether FileLock keeps other processes out: true
// on unix, where it is flock. A variable so that tests can see the other
// platforms' behaviour.
var CrossProcessLock = true

// FileLock is an advisory lock on a file shared by every process that
// opens the same git directory: shared for readers, exclusive for writers.
// The store's mutex keeps a writer alone in the process; readers of one
// process may hold the shared lock together, and it is released when the
// last of them unlocks (one flock per open file: the first reader's
// unlock would otherwise release it for all).
type FileLock struct {
	path   string
	mu     sync.Mutex
	f      *os.File
	shared int // readers of this process holding the shared lock
}

// NewFileLock returns the lock on the file at path, which Lock creates
// when missing.
func NewFileLock(path string) *FileLock { return &FileLock{path: path} }

// Lock takes the lock, polling so that ctx can interrupt the wait.
func (l *FileLock) Lock(ctx context.Context, exclusive bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !exclusive && l.shared > 0 {
		l.shared++
		return nil
	}
	if l.f == nil {
		f, err := os.OpenFile(l.path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			if errors.Is(err, os.ErrPermission) && !exclusive {
				return nil // a read-only repository: readers go without
			}
			return err
		}
		l.f = f
	}
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	wait := 50 * time.Microsecond
	for {
		err := syscall.Flock(int(l.f.Fd()), how|syscall.LOCK_NB)
		if err == nil {
			if !exclusive {
				l.shared = 1
			}
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			return &os.PathError{Op: "flock", Path: l.path, Err: err}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		if wait < 5*time.Millisecond {
			wait *= 2
		}
	}
}

// Unlock releases the lock (a shared one when the last reader of the
// process unlocks).
func (l *FileLock) Unlock() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.shared > 0 {
		if l.shared--; l.shared > 0 {
			return // other readers still hold it
		}
	}
	if l.f != nil {
		_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	}
}

// Close closes the lock file; the lock is released with it.
func (l *FileLock) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		_ = l.f.Close()
		l.f = nil
	}
}

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
