package gitrepo_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
)

// damagedFixture returns a repository with two published packages, a
// draft and a proposal, and an Options whose logger writes to logs.
func damagedFixture(t *testing.T) (string, *bytes.Buffer, *gitrepo.Options) {
	t.Helper()
	ctx := context.Background()
	dir := newBare(t)
	r, err := gitrepo.Open(ctx, crashSpec(dir), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, p := range []string{"a", "b"} {
		publishNew(t, r, revision.Key{Package: p, Workspace: "w1"})
	}
	if err := writeDraft(ctx, r, revision.Key{Package: "a", Workspace: "draft"}, "d", true); err != nil {
		t.Fatal(err)
	}
	if err := writeDraft(ctx, r, revision.Key{Package: "b", Workspace: "prop"}, "p", true); err != nil {
		t.Fatal(err)
	}
	if _, err := r.UpdateLifecycle(ctx, revision.Key{Package: "b", Workspace: "prop"}, revision.LifecycleProposed, repository.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	logs := &bytes.Buffer{}
	return dir, logs, &gitrepo.Options{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))}
}

// openAndList opens the repository at dir with opts, closed when t ends,
// and lists it.
func openAndList(t *testing.T, dir string, opts *gitrepo.Options) (*gitrepo.Repository, []revision.PackageRevision) {
	t.Helper()
	r, err := gitrepo.Open(context.Background(), crashSpec(dir), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	revs, err := r.List(context.Background(), repository.ListOptions{})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	return r, revs
}

// openAndListDamaged is openAndList for a repository with damage: the
// list must return its revisions with an error matching
// repository.ErrDamaged whose message holds want.
func openAndListDamaged(t *testing.T, dir string, opts *gitrepo.Options, want string) (*gitrepo.Repository, []revision.PackageRevision) {
	t.Helper()
	r, err := gitrepo.Open(context.Background(), crashSpec(dir), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	revs, err := r.List(context.Background(), repository.ListOptions{})
	if !errors.Is(err, repository.ErrDamaged) || !errors.Is(err, repository.ErrCorrupt) || !strings.Contains(err.Error(), want) {
		t.Fatalf("list: %v, want ErrDamaged naming %s", err, want)
	}
	return r, revs
}

func keysOf(revs []revision.PackageRevision) []string {
	var out []string
	for _, pr := range revs {
		k := pr.Meta().Key
		k.Repository = ""
		out = append(out, k.String())
	}
	return out
}

// A damaged ref is an error for its revision only: the rest lists, Get
// names the ref, and nothing rewrites it.
func TestDamagedRefs(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		ref     string
		content string
		gone    string // the revision left out
		key     revision.Key
	}{
		{"empty draft", "refs/heads/drafts/a/draft", "", "a@draft", revision.Key{Package: "a", Workspace: "draft"}},
		{"garbage proposal", "refs/heads/proposed/b/prop", "not a hash\n", "b@prop", revision.Key{Package: "b", Workspace: "prop"}},
		{"dangling tag", "refs/tags/a/v1", strings.Repeat("ab", 20) + "\n", "a@w1/v1", revision.Key{Package: "a", Revision: 1}},
		{"cut short tag", "refs/tags/b/v1", "0123abc", "b@w1/v1", revision.Key{Package: "b", Revision: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, logs, opts := damagedFixture(t)
			if err := os.WriteFile(filepath.Join(dir, tc.ref), []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			r, revs := openAndListDamaged(t, dir, opts, tc.ref)
			got := strings.Join(keysOf(revs), " ")
			if strings.Contains(got, tc.gone) || !strings.Contains(got, "a@main/placeholder") || len(revs) != 5 {
				t.Fatalf("listed %s, want all but %s", got, tc.gone)
			}
			if !strings.Contains(logs.String(), tc.ref) {
				t.Fatalf("no warning naming %s: %s", tc.ref, logs.String())
			}
			_, err := r.Get(ctx, tc.key)
			var damaged *gitrepo.DamagedRefError
			if !errors.Is(err, repository.ErrCorrupt) || !errors.As(err, &damaged) || damaged.Ref != tc.ref {
				t.Fatalf("get %s: %v, want a damaged-ref error for %s", tc.key, err, tc.ref)
			}
			// Writing that revision fails the same way and leaves the ref.
			if _, err := r.UpdateLifecycle(ctx, tc.key, revision.LifecycleDeletionProposed, repository.UpdateOptions{}); !errors.Is(err, repository.ErrCorrupt) {
				t.Fatalf("update: %v, want ErrCorrupt", err)
			}
			if data, _ := os.ReadFile(filepath.Join(dir, tc.ref)); string(data) != tc.content {
				t.Fatalf("the damaged ref was rewritten to %q", data)
			}
			// Other packages still take writes.
			if err := writeDraft(ctx, r, revision.Key{Package: "c", Workspace: "new"}, "c", true); err != nil {
				t.Fatalf("a write elsewhere: %v", err)
			}
		})
	}
}

// An empty registered branch is damaged, not missing: with createBranch
// set, opening and reading never create it anew, and approving fails
// without touching it.
func TestDamagedBranchNeverRecreated(t *testing.T) {
	ctx := context.Background()
	dir, logs, opts := damagedFixture(t)
	head := filepath.Join(dir, "refs", "heads", "main")
	if err := os.WriteFile(head, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := gitrepo.Open(ctx, crashSpec(dir), opts)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer r.Close()
	revs, err := r.List(ctx, repository.ListOptions{})
	var dr *gitrepo.DamagedRefError
	if !errors.As(err, &dr) || dr.Ref != "refs/heads/main" || !errors.Is(err, repository.ErrDamaged) {
		t.Fatalf("list: %v, want the damage of refs/heads/main", err)
	}
	if got := strings.Join(keysOf(revs), " "); got != "a@draft a@w1/v1 b@prop b@w1/v1" {
		t.Fatalf("listed %s", got)
	}
	if !strings.Contains(logs.String(), "refs/heads/main") {
		t.Fatalf("no warning about the branch: %s", logs.String())
	}
	if _, err := r.Get(ctx, revision.Key{Package: "a", Revision: revision.Placeholder}); !errors.Is(err, repository.ErrCorrupt) {
		t.Fatalf("get the placeholder: %v, want ErrCorrupt", err)
	}
	if _, err := r.UpdateLifecycle(ctx, revision.Key{Package: "b", Workspace: "prop"}, revision.LifecyclePublished, repository.UpdateOptions{}); !errors.Is(err, repository.ErrCorrupt) {
		t.Fatalf("approve: %v, want ErrCorrupt", err)
	}
	if data, err := os.ReadFile(head); err != nil || len(data) != 0 {
		t.Fatalf("the branch was rewritten: %q, %v", data, err)
	}
	// The proposal is still a proposal: nothing was published.
	if pr, err := r.Get(ctx, revision.Key{Package: "b", Workspace: "prop"}); err != nil || pr.Meta().Lifecycle != revision.LifecycleProposed {
		t.Fatalf("the proposal after a failed approve: %v", err)
	}
}

// Refs cad writes are complete files that the git CLI reads, and no lock
// or journal file stays behind.
func TestRefWritesLeaveNothingBehind(t *testing.T) {
	dir, _, _ := damagedFixture(t)
	git(t, dir, "pack-refs", "--all")
	ctx := context.Background()
	r, err := gitrepo.Open(ctx, crashSpec(dir), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// A deletion of a packed ref rewrites packed-refs.
	if _, err := r.UpdateLifecycle(ctx, revision.Key{Package: "a", Revision: 1}, revision.LifecycleDeletionProposed, repository.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := r.Delete(ctx, revision.Key{Package: "a", Revision: 1}, repository.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.UpdateLifecycle(ctx, revision.Key{Package: "b", Workspace: "prop"}, revision.LifecyclePublished, repository.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := git(t, dir, "for-each-ref", "--format=%(refname)", "refs/tags/"); got != "refs/tags/b/v1\nrefs/tags/b/v2" {
		t.Fatalf("tags: %q", got)
	}
	if packed, _ := os.ReadFile(filepath.Join(dir, "packed-refs")); bytes.Contains(packed, []byte("refs/tags/a/v1")) {
		t.Fatalf("packed-refs still holds a/v1:\n%s", packed)
	}
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && ((strings.HasSuffix(p, ".lock") && d.Name() != "cad.lock") || strings.Contains(d.Name(), "cad-journal")) {
			t.Errorf("left behind: %s", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	fsck(t, dir, "after the writes")
}

// Every SyncMode writes the same refs; an unknown one is refused.
func TestSyncModes(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []gitrepo.SyncMode{gitrepo.SyncFiles, gitrepo.SyncAll, gitrepo.SyncNone} {
		dir := newBare(t)
		r, err := gitrepo.Open(ctx, crashSpec(dir), &gitrepo.Options{Sync: mode})
		if err != nil {
			t.Fatal(err)
		}
		key := revision.Key{Package: "p", Workspace: "w"}
		if err := writeDraft(ctx, r, key, "x", true); err != nil {
			t.Fatal(err)
		}
		for _, lc := range []revision.Lifecycle{revision.LifecycleProposed, revision.LifecyclePublished} {
			if _, err := r.UpdateLifecycle(ctx, key, lc, repository.UpdateOptions{}); err != nil {
				t.Fatalf("mode %d: %v", mode, err)
			}
		}
		r.Close()
		if got := git(t, dir, "for-each-ref", "--format=%(refname)"); got != "refs/heads/main\nrefs/tags/p/v1" {
			t.Fatalf("mode %d: refs %q", mode, got)
		}
		fsck(t, dir, "sync mode")
	}
	_, err := gitrepo.Open(ctx, crashSpec(newBare(t)), &gitrepo.Options{Sync: 7})
	if !errors.Is(err, repository.ErrInvalidInput) {
		t.Fatalf("Sync 7: %v, want ErrInvalidInput", err)
	}
}

// A published revision whose commit registers its package (a kpt:
// annotation naming it, as Porch and cad write) is listed from its refs
// and commit alone, without its package tree: a tag whose commit has no
// directory at the package's path, or whose root tree is missing, is
// listed and found by Get, and reading its files fails with a
// damaged-ref error naming the tag. A tag whose commit does not register
// the package is still looked up by the list, and left out without one.
func TestListDefersPackageTree(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, dir string) // makes refs/tags/a/v9, or damages a/v1
		key    revision.Key
		listed bool
	}{
		{"registered, no directory", func(t *testing.T, dir string) {
			empty := git(t, dir, "hash-object", "-t", "tree", "-w", "--stdin")
			c := git(t, dir, "commit-tree", empty, "-m", "Approving\n\nkpt:{\"package\":\"a\",\"workspaceName\":\"w9\",\"revision\":\"9\"}")
			git(t, dir, "update-ref", "refs/tags/a/v9", c)
		}, revision.Key{Package: "a", Revision: 9}, true},
		{"registered, root tree missing", func(t *testing.T, dir string) {
			// cad-paths holds where the approval put the package: gone too.
			root := git(t, dir, "rev-parse", "a/v1^{tree}")
			for _, p := range []string{filepath.Join("objects", root[:2], root[2:]), "cad-paths"} {
				if err := os.Remove(filepath.Join(dir, p)); err != nil {
					t.Fatal(err)
				}
			}
		}, revision.Key{Package: "a", Revision: 1}, true},
		{"not registered, no directory", func(t *testing.T, dir string) {
			empty := git(t, dir, "hash-object", "-t", "tree", "-w", "--stdin")
			c := git(t, dir, "commit-tree", empty, "-m", "made by hand")
			git(t, dir, "update-ref", "refs/tags/a/v9", c)
		}, revision.Key{Package: "a", Revision: 9}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, _, opts := damagedFixture(t)
			tc.damage(t, dir)
			r, revs := openAndList(t, dir, opts)
			var found revision.PackageRevision
			for _, pr := range revs {
				if k := pr.Meta().Key; k.Package == tc.key.Package && k.Revision == tc.key.Revision {
					found = pr
				}
			}
			got, err := r.Get(ctx, tc.key)
			if !tc.listed {
				if found != nil || !errors.Is(err, repository.ErrNotFound) {
					t.Fatalf("listed %v, get: %v; want it left out", found != nil, err)
				}
				return
			}
			if found == nil || len(revs) != 6+boolInt(tc.key.Revision == 9) {
				t.Fatalf("listed %s, want %s among them", keysOf(revs), tc.key)
			}
			if err != nil {
				t.Fatalf("get: %v", err)
			}
			tag := fmt.Sprintf("refs/tags/%s/v%d", tc.key.Package, tc.key.Revision)
			for name, pr := range map[string]revision.PackageRevision{"listed": found, "got": got} {
				_, err := pr.Files(ctx)
				var damaged *gitrepo.DamagedRefError
				if !errors.Is(err, repository.ErrCorrupt) || !errors.As(err, &damaged) || damaged.Ref != tag {
					t.Fatalf("files of the %s revision: %v, want a damaged-ref error for %s", name, err, tag)
				}
				if _, err := pr.Info(ctx); !errors.Is(err, repository.ErrCorrupt) {
					t.Fatalf("info of the %s revision: %v, want ErrCorrupt", name, err)
				}
			}
			// The other revisions read as before.
			if _, err := r.Get(ctx, revision.Key{Package: "b", Revision: 1}); err != nil {
				t.Fatalf("get b/v1: %v", err)
			}
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
