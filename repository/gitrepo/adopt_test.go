package gitrepo_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// pushTree commits files (path to content) on branch of the bare
// repository bare with the git CLI, as a user outside cad would, and
// returns the commit id.
func pushTree(t *testing.T, bare, branch string, files map[string]string) string {
	t.Helper()
	work := filepath.Join(t.TempDir(), "work")
	git(t, "", "clone", "--quiet", bare, work)
	git(t, work, "checkout", "--quiet", "-B", branch)
	for p, content := range files {
		full := filepath.Join(work, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, work, "add", "-A")
	git(t, work, "commit", "--quiet", "-m", "plain commit")
	git(t, work, "push", "--quiet", "origin", "HEAD:refs/heads/"+branch)
	return git(t, work, "rev-parse", "HEAD")
}

// TestAdoptPlainDirectory adopts directories that git users wrote, with no
// Kptfile and no kpt: annotation, and checks the refs with the git CLI.
func TestAdoptPlainDirectory(t *testing.T) {
	ctx := context.Background()
	bare := newBare(t)
	r := mustOpen(t, gitSpec(bare), nil)
	defer r.Close()
	commit := pushTree(t, bare, "feature", map[string]string{
		"apps/web/deploy.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n",
		"apps/web/README.md":   "web\n",
		"apps/api/svc.yaml":    "apiVersion: v1\nkind: Service\nmetadata:\n  name: api\n",
	})
	// A hand-made tag on a directory with no package marker is not a
	// package revision, as in Porch.
	git(t, bare, "tag", "apps/api/v1", commit)
	if revs, err := r.List(ctx, repository.ListOptions{}); err != nil || len(revs) != 0 {
		t.Fatalf("before adoption List = %d revisions, %v", len(revs), err)
	}

	pr, err := r.Adopt(ctx, revision.Key{Package: "apps/web", Revision: 3}, repository.AdoptOptions{Ref: "feature"})
	if err != nil {
		t.Fatal(err)
	}
	if m := pr.Meta(); m.Key.Revision != 3 || m.Key.Workspace != "v3" || m.Commit != commit {
		t.Fatalf("adopted %s at %s, want revision 3 at %s", m.Key, m.Commit, commit)
	}
	if typ := git(t, bare, "cat-file", "-t", "refs/tags/apps/web/v3"); typ != "tag" {
		t.Fatalf("tag apps/web/v3 is a %s, want an annotated tag", typ)
	}
	if got := git(t, bare, "rev-parse", "refs/tags/apps/web/v3^{commit}"); got != commit {
		t.Fatalf("tag points at %s, want %s", got, commit)
	}
	if msg := git(t, bare, "cat-file", "tag", "refs/tags/apps/web/v3"); !strings.Contains(msg, `kpt:{"package":"apps/web","workspaceName":"v3","revision":"3"}`) {
		t.Fatalf("tag message lacks the registration:\n%s", msg)
	}
	if got := git(t, bare, "rev-parse", "refs/heads/feature"); got != commit {
		t.Fatal("adoption moved the adopted branch")
	}
	// A second handle, as another process, sees the registered revision.
	r2 := mustOpen(t, gitSpec(bare), nil)
	defer r2.Close()
	got, err := r2.Get(ctx, revision.Key{Package: "apps/web", Revision: 3})
	if err != nil {
		t.Fatal(err)
	}
	f, err := got.Files(ctx)
	if err != nil || !slices.Equal(f.Paths(), []string{"README.md", "deploy.yaml"}) {
		t.Fatalf("adopted files %v, %v", f.Paths(), err)
	}

	// By commit id, as a draft: a commit with the same tree on a draft
	// branch; editing and approving it works as for any draft.
	d, err := r.Adopt(ctx, revision.Key{Package: "apps/api", Workspace: "edit"}, repository.AdoptOptions{Ref: commit, Lifecycle: revision.LifecycleDraft})
	if err != nil {
		t.Fatal(err)
	}
	if git(t, bare, "rev-parse", "refs/heads/drafts/apps/api/edit^{tree}") != git(t, bare, "rev-parse", commit+"^{tree}") {
		t.Fatal("the adopted draft's commit does not have the adopted tree")
	}
	if git(t, bare, "rev-parse", "refs/heads/drafts/apps/api/edit^") != commit {
		t.Fatal("the adopted draft's commit is not a child of the adopted commit")
	}
	if d.Meta().Lifecycle != revision.LifecycleDraft {
		t.Fatalf("adopted draft is %s", d.Meta().Lifecycle)
	}
	if _, err := r.UpdateLifecycle(ctx, revision.Key{Package: "apps/api", Workspace: "edit"}, revision.LifecycleProposed, repository.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	pub, err := r.UpdateLifecycle(ctx, revision.Key{Package: "apps/api", Workspace: "edit"}, revision.LifecyclePublished, repository.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The hand-made apps/api/v1 tag still counts for numbering.
	if pub.Meta().Key.Revision != 2 {
		t.Fatalf("approved adopted draft as %d, want 2", pub.Meta().Key.Revision)
	}
	if got := git(t, bare, "show", "main:apps/api/svc.yaml"); !strings.Contains(got, "name: api") {
		t.Fatalf("approval did not put the package on main: %q", got)
	}

	// Bad refs write nothing.
	before := refs(t, bare)
	for _, ref := range []string{"nope", "refs/heads/nope", strings.Repeat("0", 40), "bad..name"} {
		_, err := r.Adopt(ctx, revision.Key{Package: "apps/web", Revision: 9}, repository.AdoptOptions{Ref: ref})
		if !errors.Is(err, repository.ErrNotFound) {
			t.Fatalf("Adopt at %q: %v, want ErrNotFound", ref, err)
		}
	}
	_, err = r.Adopt(ctx, revision.Key{Package: "apps", Revision: 1}, repository.AdoptOptions{Ref: "feature", Lifecycle: revision.LifecycleDraft})
	if !errors.Is(err, repository.ErrInvalidInput) {
		t.Fatalf("Adopt of a draft with a revision number: %v", err)
	}
	if after := refs(t, bare); !slices.Equal(after, before) {
		t.Fatalf("failed adoptions changed the refs: %v, was %v", after, before)
	}
}

// TestNoKptfileCommitLayout checks what a commit of a package without a
// Kptfile writes: Porch's layout with the kpt: line as the registration.
func TestNoKptfileCommitLayout(t *testing.T) {
	ctx := context.Background()
	bare := newBare(t)
	r := mustOpen(t, gitSpec(bare), nil)
	defer r.Close()
	k := revision.Key{Package: "plain", Workspace: "ws"}
	d, err := r.CreateDraft(ctx, k, repository.CreateDraftOptions{Files: revision.MustFiles(map[string]string{"cm.yaml": "a: 1\n"})})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Commit(ctx, revision.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := git(t, bare, "ls-tree", "--name-only", "drafts/plain/ws:plain"); got != "cm.yaml" {
		t.Fatalf("draft tree %q", got)
	}
	if msg := commitMessage(t, bare, "drafts/plain/ws"); !strings.Contains(msg, `kpt:{"package":"plain","workspaceName":"ws","revision":"0"}`) {
		t.Fatalf("draft message %q", msg)
	}
	// Without a marker the package is not discovered on the branch, only
	// through its refs.
	if _, err := r.UpdateLifecycle(ctx, k, revision.LifecycleProposed, repository.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.UpdateLifecycle(ctx, k, revision.LifecyclePublished, repository.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	revs, err := r.List(ctx, repository.ListOptions{})
	if err != nil || len(revs) != 1 || revs[0].Meta().Key.Revision != 1 {
		t.Fatalf("List = %v, %v; want only plain v1 (no placeholder without a marker)", revs, err)
	}
}
