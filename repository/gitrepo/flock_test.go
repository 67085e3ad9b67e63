package gitrepo_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
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

// cadLockFiles returns the paths under root of cad's lock files (cad.lock
// and the cad-*.lock files older versions made).
func cadLockFiles(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasPrefix(d.Name(), "cad") && strings.HasSuffix(d.Name(), ".lock") {
			rel, _ := filepath.Rel(root, p)
			out = append(out, rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Every lock cad takes on a repository is a byte of one file, cad.lock:
// after a write, a maintenance run, a push and a fetch, the repository and
// a remote's mirror hold that file and no other cad lock file.
func TestOneLockFile(t *testing.T) {
	ctx := context.Background()
	one := func(t *testing.T, what, root string) {
		t.Helper()
		if got := cadLockFiles(t, root); len(got) != 1 || filepath.Base(got[0]) != "cad.lock" {
			t.Fatalf("after %s: cad lock files %v, want one cad.lock", what, got)
		}
	}
	t.Run("local", func(t *testing.T) {
		dir := newBare(t)
		r := openDisk(t, dir)
		propose(t, r, "p", "ws")
		one(t, "a write", dir)
		if _, err := approve(ctx, r, revision.Key{Package: "p", Workspace: "ws"}); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Maintain(ctx, gitrepo.MaintainOptions{Full: true}); err != nil {
			t.Fatal(err)
		}
		one(t, "maintenance", dir)
	})
	t.Run("mirror", func(t *testing.T) {
		dir := newBare(t)
		srv := gitServer(t, filepath.Dir(dir), "", "")
		url := srv.URL + "/" + filepath.Base(dir)
		cache := filepath.Join(t.TempDir(), "cache")
		w := mustOpen(t, gitSpec(url), &gitrepo.Options{CacheDir: cache, NoAutoMaintain: true})
		defer w.Close()
		propose(t, w, "p", "ws")
		one(t, "a push", cache)
		other := mustOpen(t, gitSpec(url), nil)
		defer other.Close()
		propose(t, other, "q", "ws")
		if keys, err := listKeys(ctx, w); err != nil || strings.Join(keys, " ") != "p q" {
			t.Fatalf("a read after another writer: %v, %v", keys, err)
		}
		one(t, "a fetch", cache)
		if _, err := w.Maintain(ctx, gitrepo.MaintainOptions{Full: true}); err != nil {
			t.Fatal(err)
		}
		one(t, "maintenance", cache)
	})
}
