//go:build unix

package refstore

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Readers of one process share the cross-process lock: it stays held
// until the last of them unlocks.
func TestFileLockSharedByReaders(t *testing.T) {
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "cad.lock")
	l := NewFileLock(p)
	defer l.Close()
	for range 2 {
		if err := l.Lock(ctx, false); err != nil {
			t.Fatal(err)
		}
	}
	other, err := os.Open(p) // another open file, as another process has
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	writerCan := func() bool {
		if syscall.Flock(int(other.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
			return false
		}
		_ = syscall.Flock(int(other.Fd()), syscall.LOCK_UN)
		return true
	}
	l.Unlock()
	if writerCan() {
		t.Fatal("a writer got the lock while a reader still holds it")
	}
	l.Unlock()
	if !writerCan() {
		t.Fatal("the lock is still held after the last reader unlocked")
	}
}
