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
