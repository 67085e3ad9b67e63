//go:build unix

package refstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// CrossProcessLock says whether FileLock keeps other processes out: true
// on unix, where it is a record lock on a byte of cad.lock. A variable so
// that tests can see the other platforms' behaviour.
var CrossProcessLock = true

// FileLock is one role's advisory lock on cad.lock in a git directory,
// shared by every process that opens the repository: a record lock
// (fcntl) on the role's byte, shared or exclusive. Readers of one process
// share one lock: it is released when the last of them unlocks.
//
// A FileLock is used by one holder at a time, or by several readers: a
// reader and a writer never use the same FileLock at once (the store's
// mutex keeps them apart). Several FileLocks of one process on the same
// git directory exclude each other as those of two processes do.
type FileLock struct {
	path   string
	role   LockRole
	mu     sync.Mutex
	lf     *lockFile // the process's open cad.lock, once Lock opened it
	shared int       // readers of this FileLock holding the shared lock
	excl   bool      // the exclusive lock is held
}

// NewFileLock returns role's lock on cad.lock in gitDir, which Lock
// creates when missing.
func NewFileLock(gitDir string, role LockRole) *FileLock {
	return &FileLock{path: filepath.Join(gitDir, LockName), role: role}
}

// Lock takes the lock, shared or exclusive, polling so that ctx can
// interrupt the wait; it tries once before it looks at ctx, so a done
// ctx makes one attempt. It returns ctx's error when ctx ends first, and
// the file system's error (an *os.PathError) when cad.lock cannot be
// opened or locked; a reader that may not open cad.lock (a read-only
// repository) goes without the lock and gets nil.
func (l *FileLock) Lock(ctx context.Context, exclusive bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !exclusive && l.shared > 0 {
		l.shared++
		return nil
	}
	if l.lf == nil {
		lf, err := openLockFile(l.path)
		if err != nil {
			if errors.Is(err, os.ErrPermission) && !exclusive {
				return nil // a read-only repository: readers go without
			}
			return err
		}
		l.lf = lf
	}
	wait := 50 * time.Microsecond
	for {
		ok, err := l.lf.try(l.role, exclusive)
		if err != nil {
			return &os.PathError{Op: "lock " + l.role.String(), Path: l.path, Err: err}
		}
		if ok {
			if exclusive {
				l.excl = true
			} else {
				l.shared = 1
			}
			return nil
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

// Unlock releases the lock (a shared one when the last reader of this
// FileLock unlocks).
func (l *FileLock) Unlock() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.unlock()
}

func (l *FileLock) unlock() {
	switch {
	case l.shared > 0:
		if l.shared--; l.shared == 0 && l.lf != nil {
			l.lf.release(l.role, false)
		}
	case l.excl:
		l.excl = false
		l.lf.release(l.role, true)
	}
}

// Close releases what the lock holds and lets go of cad.lock; the lock
// can be taken again.
func (l *FileLock) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.shared > 0 {
		l.shared = 1
	}
	l.unlock()
	if l.lf != nil {
		l.lf.close()
		l.lf = nil
	}
}

// The process's open cad.lock files, by identity. A POSIX record lock
// belongs to the process, not to the open file, and closing any
// descriptor of the file releases all of the process's locks on it; so
// a process opens each cad.lock once, shares the descriptor among its
// FileLocks, keeps its own count of who holds each role, and closes the
// file only when no FileLock uses it. Where open file description locks
// exist (Linux) they are used on the same descriptor, the same way.
var lockFiles struct {
	mu   sync.Mutex
	open map[lockFileKey]*lockFile
}

type lockFileKey struct{ dev, ino uint64 }

// lockFile is an open cad.lock and the process's holds on its roles.
type lockFile struct {
	key   lockFileKey
	f     *os.File
	extra []*os.File // descriptors of the same file opened by another path: closed with f
	users int        // FileLocks that opened it
	flock bool       // the store's role is also an flock (flocksApart)
	roles [numRoles]struct {
		readers int
		writer  bool
	}
}

func keyOf(fi os.FileInfo) (lockFileKey, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return lockFileKey{}, false
	}
	return lockFileKey{dev: uint64(st.Dev), ino: uint64(st.Ino)}, true //nolint:unconvert // the types differ by platform
}

// openLockFile returns the process's open cad.lock at path, opening (and
// creating) it when no FileLock of the process has it open. A file
// already open is found by its identity before anything is opened, since
// closing another descriptor of it would release the process's locks.
func openLockFile(path string) (*lockFile, error) {
	lockFiles.mu.Lock()
	defer lockFiles.mu.Unlock()
	if lockFiles.open == nil {
		lockFiles.open = map[lockFileKey]*lockFile{}
	}
	if fi, err := os.Stat(path); err == nil {
		if k, ok := keyOf(fi); ok && lockFiles.open[k] != nil {
			lf := lockFiles.open[k]
			lf.users++
			return lf, nil
		}
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close() // a descriptor no lock was taken through
		return nil, err
	}
	k, ok := keyOf(fi)
	if !ok {
		_ = f.Close()
		return nil, &os.PathError{Op: "lock", Path: path, Err: errors.ErrUnsupported}
	}
	if lf := lockFiles.open[k]; lf != nil {
		// Replaced under us by a file the process has open: closing f
		// would release that file's locks, so it is kept until then.
		lf.extra = append(lf.extra, f)
		lf.users++
		return lf, nil
	}
	lf := &lockFile{key: k, f: f, users: 1, flock: flocksApart(f)}
	lockFiles.open[k] = lf
	return lf, nil
}

// try takes role's lock once, shared or exclusive, without waiting: ok is
// false when another holder, in this process or another, has it.
func (lf *lockFile) try(role LockRole, exclusive bool) (ok bool, err error) {
	lockFiles.mu.Lock()
	defer lockFiles.mu.Unlock()
	r := &lf.roles[role]
	switch {
	case r.writer, exclusive && r.readers > 0:
		return false, nil
	case !exclusive && r.readers > 0:
		r.readers++
		return true, nil
	}
	typ := int16(syscall.F_RDLCK)
	if exclusive {
		typ = syscall.F_WRLCK
	}
	if ok, err := lf.lockRange(role, typ); !ok || err != nil {
		return false, err
	}
	if exclusive {
		r.writer = true
	} else {
		r.readers = 1
	}
	return true, nil
}

// release releases one hold of role's lock, taken shared or exclusive.
func (lf *lockFile) release(role LockRole, exclusive bool) {
	lockFiles.mu.Lock()
	defer lockFiles.mu.Unlock()
	r := &lf.roles[role]
	if exclusive {
		r.writer = false
	} else if r.readers--; r.readers > 0 {
		return
	}
	_, _ = lf.lockRange(role, syscall.F_UNLCK)
}

// close lets go of one user's use of lf; the last one closes the file.
func (lf *lockFile) close() {
	lockFiles.mu.Lock()
	defer lockFiles.mu.Unlock()
	if lf.users--; lf.users > 0 {
		return
	}
	delete(lockFiles.open, lf.key)
	_ = lf.f.Close()
	for _, f := range lf.extra {
		_ = f.Close()
	}
}

// lockRange sets role's byte of lf to typ (F_RDLCK, F_WRLCK or F_UNLCK)
// without waiting: ok is false when another holder has a conflicting
// lock. With lf.flock, the store's role is also an flock (legacyFlock).
func (lf *lockFile) lockRange(role LockRole, typ int16) (ok bool, err error) {
	fd := lf.f.Fd()
	legacy := role == RoleStore && lf.flock
	if legacy && typ != syscall.F_UNLCK {
		how := syscall.LOCK_SH
		if typ == syscall.F_WRLCK {
			how = syscall.LOCK_EX
		}
		if ok, err := retryEINTR(func() error { return syscall.Flock(int(fd), how|syscall.LOCK_NB) }); !ok || err != nil {
			return false, err
		}
	}
	lk := syscall.Flock_t{Type: typ, Whence: 0, Start: int64(role), Len: 1}
	ok, err = retryEINTR(func() error { return syscall.FcntlFlock(fd, setLockCmd, &lk) })
	if legacy && (typ == syscall.F_UNLCK || !ok || err != nil) {
		_ = syscall.Flock(int(fd), syscall.LOCK_UN)
	}
	return ok, err
}

// retryEINTR runs a non-blocking lock call until it is not interrupted:
// ok is false when the lock is held by another.
func retryEINTR(call func() error) (ok bool, err error) {
	for {
		err := call()
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EWOULDBLOCK):
			return false, nil
		}
		return false, err
	}
}

// LegacyFlockIn reports whether a FileLock on cad.lock in gitDir also
// takes the flock cad v0.1.0 takes for the store's role (on Linux, on a
// local file system); false when gitDir cannot be looked at.
func LegacyFlockIn(gitDir string) bool {
	f, err := os.Open(gitDir)
	if err != nil {
		return false
	}
	defer f.Close()
	return flocksApart(f)
}
