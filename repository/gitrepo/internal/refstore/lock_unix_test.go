//go:build unix

package refstore

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// The child process of the lock tests: it tries role's lock on cad.lock in
// a git directory once and prints "got" or "busy".
const lockChildEnv = "CAD_REFSTORE_LOCK_CHILD" // "<mode> <gitDir> <role> <exclusive>"

func init() {
	v := os.Getenv(lockChildEnv)
	if v == "" {
		return
	}
	f := strings.Fields(v)
	useLockMode(f[0])
	role, _ := strconv.Atoi(f[2])
	l := NewFileLock(f[1], LockRole(role))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	switch err := l.Lock(ctx, f[3] == "true"); err {
	case nil:
		fmt.Println("got")
	case context.Canceled:
		fmt.Println("busy")
	default:
		fmt.Println(err)
	}
	os.Exit(0)
}

// lockModes are the kinds of record lock the platform can use: on Linux
// open file description locks (what it uses) and POSIX process locks
// (what the other systems use), so both are tested here.
func lockModes() []string {
	if runtime.GOOS == "linux" {
		return []string{"ofd", "posix"}
	}
	return []string{"posix"}
}

func useLockMode(mode string) (restore func()) {
	cmd, legacy := setLockCmd, legacyFlock
	if mode == "posix" {
		setLockCmd, legacyFlock = syscall.F_SETLK, false
	}
	return func() { setLockCmd, legacyFlock = cmd, legacy }
}

// otherProcess reports whether another process can take role's lock on
// cad.lock in dir now (shared or exclusive).
func otherProcess(t *testing.T, mode, dir string, role LockRole, exclusive bool) bool {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %s %d %v", lockChildEnv, mode, dir, role, exclusive))
	out, err := cmd.Output()
	switch s := strings.TrimSpace(string(out)); {
	case err != nil:
		t.Fatalf("lock child: %v: %s", err, out)
	case s == "got":
		return true
	case s != "busy":
		t.Fatalf("lock child: %s", s)
	}
	return false
}

func mustLock(t *testing.T, l *FileLock, exclusive bool) {
	t.Helper()
	if err := l.Lock(context.Background(), exclusive); err != nil {
		t.Fatal(err)
	}
}

// Readers of one process share the store's lock: it stays held until the
// last of them unlocks, and another process's readers share it meanwhile.
func TestFileLockSharedByReaders(t *testing.T) {
	for _, mode := range lockModes() {
		t.Run(mode, func(t *testing.T) {
			defer useLockMode(mode)()
			dir := t.TempDir()
			l := NewFileLock(dir, RoleStore)
			defer l.Close()
			mustLock(t, l, false)
			mustLock(t, l, false)
			if !otherProcess(t, mode, dir, RoleStore, false) {
				t.Fatal("another process's reader was kept out by readers")
			}
			l.Unlock()
			if otherProcess(t, mode, dir, RoleStore, true) {
				t.Fatal("another process's writer got the lock while a reader still holds it")
			}
			l.Unlock()
			if !otherProcess(t, mode, dir, RoleStore, true) {
				t.Fatal("the lock is still held after the last reader unlocked")
			}
		})
	}
}

// Each role is a lock of its own in the one file: holding one keeps
// other processes out of it and out of no other.
func TestFileLockRoles(t *testing.T) {
	for _, mode := range lockModes() {
		t.Run(mode, func(t *testing.T) {
			defer useLockMode(mode)()
			dir := t.TempDir()
			for held := range numRoles {
				l := NewFileLock(dir, held)
				mustLock(t, l, true)
				for other := range numRoles {
					if got := otherProcess(t, mode, dir, other, true); got != (other != held) {
						t.Errorf("holding %s: another process got %s: %v", held, other, got)
					}
				}
				l.Close()
				if !otherProcess(t, mode, dir, held, true) {
					t.Errorf("%s still held after Close", held)
				}
			}
			if names := lockFileNames(t, dir); len(names) != 1 || names[0] != LockName {
				t.Fatalf("lock files %v, want only %s", names, LockName)
			}
		})
	}
}

// In one process, FileLocks on the same git directory exclude each other
// as those of two processes do, and closing one releases nothing another
// holds (a POSIX record lock goes with any close of the file).
func TestFileLockInProcess(t *testing.T) {
	for _, mode := range lockModes() {
		t.Run(mode, func(t *testing.T) {
			defer useLockMode(mode)()
			dir := t.TempDir()
			done, cancel := context.WithCancel(context.Background())
			cancel()
			w := NewFileLock(dir, RoleStore)
			defer w.Close()
			mustLock(t, w, true)
			r := NewFileLock(dir, RoleStore)
			if err := r.Lock(done, false); err != context.Canceled {
				t.Fatalf("a reader beside a writer of the same process: %v, want it kept out", err)
			}
			r.Close()
			p := NewFileLock(dir, RolePush)
			if err := p.Lock(done, true); err != nil {
				t.Fatalf("the push role beside the store's writer: %v", err)
			}
			p.Unlock()
			p.Close()
			if otherProcess(t, mode, dir, RoleStore, false) {
				t.Fatal("closing other locks of the process released its writer's lock")
			}
			w.Unlock()
			if err := r.Lock(done, true); err != nil {
				t.Fatalf("a writer after the writer unlocked: %v", err)
			}
			r.Close()
		})
	}
}

// On Linux the store's role is also an flock on the whole of cad.lock,
// the lock cad v0.1.0 takes: its readers and writers and this version's
// keep each other out; its flock leaves the other roles free.
func TestFileLockLegacyFlock(t *testing.T) {
	dir := t.TempDir()
	if probe, err := os.Create(filepath.Join(dir, "probe")); err != nil || !flocksApart(probe) {
		t.Skipf("no flock beside the record locks here (%v)", err)
	} else {
		probe.Close()
	}
	old, err := os.OpenFile(filepath.Join(dir, LockName), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	oldCan := func(how int) bool { // an flock is the open file's: as another process's
		if syscall.Flock(int(old.Fd()), how|syscall.LOCK_NB) != nil {
			return false
		}
		_ = syscall.Flock(int(old.Fd()), syscall.LOCK_UN)
		return true
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	l := NewFileLock(dir, RoleStore)
	defer l.Close()
	mustLock(t, l, false)
	if oldCan(syscall.LOCK_EX) {
		t.Fatal("an old writer got cad.lock beside a reader")
	}
	if !oldCan(syscall.LOCK_SH) {
		t.Fatal("an old reader was kept out by a reader")
	}
	l.Unlock()
	if err := syscall.Flock(int(old.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	if err := l.Lock(done, false); err != context.Canceled {
		t.Fatalf("a reader beside an old writer: %v, want it kept out", err)
	}
	for _, role := range []LockRole{RoleMaintain, RolePush, RoleFetch} {
		o := NewFileLock(dir, role)
		if err := o.Lock(done, true); err != nil {
			t.Fatalf("%s beside an old writer: %v", role, err)
		}
		o.Close()
	}
	_ = syscall.Flock(int(old.Fd()), syscall.LOCK_UN)
	mustLock(t, l, true)
	if oldCan(syscall.LOCK_SH) {
		t.Fatal("an old reader got cad.lock beside a writer")
	}
}

// lockFileNames returns the names in dir that end in ".lock".
func lockFileNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".lock") {
			out = append(out, e.Name())
		}
	}
	return out
}
