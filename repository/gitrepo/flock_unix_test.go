//go:build unix

package gitrepo_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
)

// A repository an older cad used keeps its cad-maintenance.lock,
// cad-push.lock and cad-fetch.lock (they are left alone: an older process
// may still hold them) and works as before. On Linux (on a local file
// system) an older process's flock on cad.lock (what it takes to write)
// still keeps this version's writes out until it lets go.
func TestOldLockFiles(t *testing.T) {
	ctx := context.Background()
	dir := newBare(t)
	old := []string{"cad-maintenance.lock", "cad-push.lock", "cad-fetch.lock"}
	for _, n := range append([]string{"cad.lock"}, old...) {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := openDisk(t, dir)
	propose(t, r, "p", "ws")
	if _, err := r.Maintain(ctx, gitrepo.MaintainOptions{Full: true}); err != nil {
		t.Fatal(err)
	}
	for _, n := range old {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			t.Fatalf("%s of an older version: %v, want it left", n, err)
		}
	}
	if !gitrepo.LegacyFlockIn(dir) {
		return // not on Linux, or not on a local file system
	}
	f, err := os.Open(filepath.Join(dir, "cad.lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil { // as cad v0.1.0's writer
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if err := writeDraft(short, r, revision.Key{Package: "q", Workspace: "ws"}, "q", true); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a write while an older cad writes: %v, want it to wait", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	if err := writeDraft(ctx, r, revision.Key{Package: "q", Workspace: "ws"}, "q", true); err != nil {
		t.Fatalf("a write once the older cad is done: %v", err)
	}
}
