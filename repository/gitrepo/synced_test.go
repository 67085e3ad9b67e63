package gitrepo_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
)

// TestWriteSyncsOnlyNewObjects checks that a write syncs the loose
// objects it adds and not those an earlier write of the process synced
// (a file shared by many packages, as a fan-out writes it), unless the
// object's file was replaced since.
func TestWriteSyncsOnlyNewObjects(t *testing.T) {
	var mu sync.Mutex
	var synced []plumbing.Hash
	gitrepo.SetObjectSyncHook(func(h plumbing.Hash) {
		mu.Lock()
		synced = append(synced, h)
		mu.Unlock()
	})
	t.Cleanup(func() { gitrepo.SetObjectSyncHook(nil) })
	took := func() []plumbing.Hash {
		mu.Lock()
		defer mu.Unlock()
		out := synced
		synced = nil
		return out
	}

	ctx := context.Background()
	dir := newBare(t)
	r, err := gitrepo.Open(ctx, repository.Spec{Name: "r", Type: repository.TypeGit,
		Git: &repository.GitSpec{Repo: dir, CreateBranch: true}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	shared := []byte("kind: ConfigMap\nmetadata:\n  name: shared\n")
	sharedHash := plumbing.ComputeHash(plumbing.BlobObject, shared)
	write := func(pkg string) {
		t.Helper()
		own := []byte("name: " + pkg + "\n")
		d, err := r.CreateDraft(ctx, revision.Key{Package: pkg, Workspace: "ws"}, repository.CreateDraftOptions{
			Files: revision.MustFiles(map[string]string{"shared.yaml": string(shared), "own.yaml": string(own)})})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.Commit(ctx, revision.CommitOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := took(); !slices.Contains(got, plumbing.ComputeHash(plumbing.BlobObject, own)) {
			t.Fatalf("write of %s: the new blob was not synced (synced %v)", pkg, got)
		} else if pkg == "b" && slices.Contains(got, sharedHash) {
			t.Fatalf("write of %s: the shared blob, synced by the first write, was synced again", pkg)
		} else if pkg != "b" && !slices.Contains(got, sharedHash) {
			t.Fatalf("write of %s: the shared blob was not synced", pkg)
		}
	}
	write("a")
	write("b")

	// Another program replaces the object's file (removed, then stored
	// again by a writer that may not have synced it): the new file is
	// synced.
	hex := sharedHash.String()
	p := filepath.Join(dir, "objects", hex[:2], hex[2:])
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o444); err != nil {
		t.Fatal(err)
	}
	// The file system may give the new file the freed inode number; its
	// modification time tells it apart (set here, as a clock tick of a
	// few milliseconds could make it equal).
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	write("c")

	// Each revision reads back whole.
	for _, pkg := range []string{"a", "b", "c"} {
		pr, err := r.Get(ctx, revision.Key{Package: pkg, Workspace: "ws"})
		if err != nil {
			t.Fatal(err)
		}
		files, err := pr.Files(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := files.Get("shared.yaml"); string(got) != string(shared) {
			t.Fatalf("%s: shared.yaml = %q", pkg, got)
		}
	}
	git(t, dir, "fsck", "--no-dangling")
}
