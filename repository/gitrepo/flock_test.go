package gitrepo_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
)

// Where no cross-process lock exists (off unix) a repository on disk is
// read but never written: writes fail with ErrNotSupported and change
// nothing. On unix the test plays that platform by switching the lock off.
func TestWritesRefusedWithoutCrossProcessLock(t *testing.T) {
	ctx := context.Background()
	dir, _, opts := damagedFixture(t)
	if runtime.GOOS != "windows" && runtime.GOOS != "plan9" && runtime.GOOS != "js" && runtime.GOOS != "wasip1" {
		defer gitrepo.SetCrossProcessLock(false)()
	}
	r, err := gitrepo.Open(ctx, crashSpec(dir), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	revs, err := r.List(ctx, repository.ListOptions{})
	if err != nil || len(revs) != 6 {
		t.Fatalf("list: %d revisions, %v", len(revs), err)
	}
	before, err := os.ReadFile(filepath.Join(dir, "refs", "heads", "proposed", "b", "prop"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.UpdateLifecycle(ctx, revision.Key{Package: "b", Workspace: "prop"}, revision.LifecyclePublished, repository.UpdateOptions{})
	if !errors.Is(err, repository.ErrNotSupported) {
		t.Fatalf("approve: %v, want ErrNotSupported", err)
	}
	if err := writeDraft(ctx, r, revision.Key{Package: "c", Workspace: "new"}, "c", true); !errors.Is(err, repository.ErrNotSupported) {
		t.Fatalf("create a draft: %v, want ErrNotSupported", err)
	}
	after, err := os.ReadFile(filepath.Join(dir, "refs", "heads", "proposed", "b", "prop"))
	if err != nil || string(after) != string(before) {
		t.Fatalf("the proposal changed: %q, %v", after, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "refs", "tags", "b", "v2")); !os.IsNotExist(err) {
		t.Fatalf("a tag was written: %v", err)
	}
}
