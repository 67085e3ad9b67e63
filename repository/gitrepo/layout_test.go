package gitrepo_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
)

func kptPkg(name string, extra map[string]string) revision.Files {
	m := map[string]string{"Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: " + name + "\n"}
	for k, v := range extra {
		m[k] = v
	}
	return revision.MustFiles(m)
}

// commitMessage returns the exact message of commit rev, as git stores it.
func commitMessage(t *testing.T, dir, rev string) string {
	t.Helper()
	raw := gitRaw(t, dir, "cat-file", "commit", rev)
	_, msg, _ := strings.Cut(raw, "\n\n")
	return msg
}

func refs(t *testing.T, dir string) []string {
	t.Helper()
	out := git(t, dir, "for-each-ref", "--format=%(refname)")
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

// TestLayoutWitness checks every write against the git CLI: ref names,
// commit messages, parents, identities and trees, byte for byte as Porch
// writes them.
func TestLayoutWitness(t *testing.T) {
	ctx := context.Background()
	dir := newBare(t)
	spec := gitSpec(dir)
	spec.Git.Directory = "/blueprints/"
	spec.Git.Author, spec.Git.Email = "Repo Author", "repo@example.com"
	r := mustOpen(t, spec, nil)
	defer r.Close()

	// The branch Porch creates.
	if got := commitMessage(t, dir, "main"); got != "Initial commit: Creating main branch" {
		t.Fatalf("initial commit message %q", got)
	}
	if got := git(t, dir, "show", "main:README.md"); got != "Created by porch" {
		t.Fatalf("README.md %q", got)
	}
	if got := git(t, dir, "log", "-1", "--format=%an <%ae>|%cn <%ce>", "main"); got != "Package Orchestration Service <porch@kpt.dev>|Package Orchestration Service <porch@kpt.dev>" {
		t.Fatalf("initial commit identity %q", got)
	}
	initial := git(t, dir, "rev-parse", "main")

	key := revision.Key{Package: "net/istio", Workspace: "ws1"}
	d, err := r.CreateDraft(ctx, key, repository.CreateDraftOptions{Files: kptPkg("istio", map[string]string{"a/b.yaml": "x: 1\n"})})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Commit(ctx, revision.CommitOptions{AuthorName: "Alice", AuthorEmail: "alice@example.com"}); err != nil {
		t.Fatal(err)
	}
	draft := "refs/heads/drafts/blueprints/net/istio/ws1"
	if got := refs(t, dir); !slices.Equal(got, []string{draft, "refs/heads/main"}) {
		t.Fatalf("refs after the draft commit: %v", got)
	}
	if got, want := commitMessage(t, dir, draft), "Intermediate commit\n\n\nkpt:{\"package\":\"blueprints/net/istio\",\"workspaceName\":\"ws1\",\"revision\":\"0\"}\n"; got != want {
		t.Fatalf("draft commit message\n%q, want\n%q", got, want)
	}
	if got := git(t, dir, "log", "-1", "--format=%an <%ae>|%cn <%ce>|%P", draft); got != "Alice <alice@example.com>|Package Orchestration Service <porch@kpt.dev>|"+initial {
		t.Fatalf("draft commit identity and parent %q", got)
	}
	if got := git(t, dir, "ls-tree", "-r", "--name-only", draft); got != "README.md\nblueprints/net/istio/Kptfile\nblueprints/net/istio/a/b.yaml" {
		t.Fatalf("draft tree:\n%s", got)
	}
	// A second commit replaces the whole package directory.
	d.RemoveFile("a/b.yaml")
	if err := d.SetFile("c.yaml", []byte("c: 1\n")); err != nil {
		t.Fatal(err)
	}
	first := git(t, dir, "rev-parse", draft)
	if _, err := d.Commit(ctx, revision.CommitOptions{Message: "Rendering package"}); err != nil {
		t.Fatal(err)
	}
	if got := git(t, dir, "log", "-1", "--format=%P|%an", draft); got != first+"|Repo Author" {
		t.Fatalf("second draft commit parent and author %q", got)
	}
	if got := commitMessage(t, dir, draft); !strings.HasPrefix(got, "Rendering package\n\n\nkpt:{") {
		t.Fatalf("second draft commit message %q", got)
	}
	if got := git(t, dir, "ls-tree", "-r", "--name-only", draft); got != "README.md\nblueprints/net/istio/Kptfile\nblueprints/net/istio/c.yaml" {
		t.Fatalf("second draft tree:\n%s", got)
	}
	draftHead := git(t, dir, "rev-parse", draft)

	// Propose: proposed/ at the same commit, drafts/ gone.
	if _, err := r.UpdateLifecycle(ctx, key, revision.LifecycleProposed, repository.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	proposed := "refs/heads/proposed/blueprints/net/istio/ws1"
	if got := refs(t, dir); !slices.Equal(got, []string{"refs/heads/main", proposed}) {
		t.Fatalf("refs after propose: %v", got)
	}
	if got := git(t, dir, "rev-parse", proposed); got != draftHead {
		t.Fatalf("proposed branch at %s, want the draft's %s", got, draftHead)
	}

	// Approve: a merge commit on main, tag v1, proposal gone.
	pub, err := r.UpdateLifecycle(ctx, key, revision.LifecyclePublished, repository.UpdateOptions{AuthorName: "Approver", AuthorEmail: "approver@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if pub.Meta().Key.Revision != 1 || pub.Meta().PublishedBy == "" {
		t.Fatalf("published meta %+v", pub.Meta())
	}
	tag := "refs/tags/blueprints/net/istio/v1"
	if got := refs(t, dir); !slices.Equal(got, []string{"refs/heads/main", tag}) {
		t.Fatalf("refs after approve: %v", got)
	}
	if got, want := commitMessage(t, dir, "main"), "Approving package revision blueprints/net/istio/1\n\nkpt:{\"package\":\"blueprints/net/istio\",\"workspaceName\":\"ws1\",\"revision\":\"1\"}\n"; got != want {
		t.Fatalf("approval message\n%q, want\n%q", got, want)
	}
	if got := git(t, dir, "log", "-1", "--format=%P|%an <%ae>|%cn <%ce>", "main"); got != initial+" "+draftHead+"|Approver <approver@example.com>|Package Orchestration Service <porch@kpt.dev>" {
		t.Fatalf("approval parents and identity %q", got)
	}
	if got := git(t, dir, "cat-file", "-t", tag); got != "commit" {
		t.Fatalf("tag is a %s, want a lightweight tag", got)
	}
	if git(t, dir, "rev-parse", tag) != git(t, dir, "rev-parse", "main") {
		t.Fatal("tag is not on the approval commit")
	}
	if got, want := git(t, dir, "rev-parse", "main:blueprints/net/istio"), git(t, dir, "rev-parse", draftHead+":blueprints/net/istio"); got != want {
		t.Fatalf("approved package tree %s, want the proposal's %s", got, want)
	}

	// Propose deletion of v1 and undo it.
	v1 := revision.Key{Package: "net/istio", Revision: 1}
	if _, err := r.UpdateLifecycle(ctx, v1, revision.LifecycleDeletionProposed, repository.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	dp := "refs/heads/deletionProposed/blueprints/net/istio/v1"
	if got := git(t, dir, "rev-parse", dp); got != git(t, dir, "rev-parse", tag) {
		t.Fatalf("deletionProposed branch at %s", got)
	}
	if _, err := r.UpdateLifecycle(ctx, v1, revision.LifecyclePublished, repository.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := refs(t, dir); !slices.Equal(got, []string{"refs/heads/main", tag}) {
		t.Fatalf("refs after undoing the deletion proposal: %v", got)
	}
	// Delete v1: tag and deletionProposed branch go, the package stays.
	if _, err := r.UpdateLifecycle(ctx, v1, revision.LifecycleDeletionProposed, repository.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	mainBefore := git(t, dir, "rev-parse", "main")
	if err := r.Delete(ctx, v1, repository.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := refs(t, dir); !slices.Equal(got, []string{"refs/heads/main"}) {
		t.Fatalf("refs after deleting v1: %v", got)
	}
	if git(t, dir, "rev-parse", "main") != mainBefore {
		t.Fatal("deleting a tagged revision moved the branch")
	}

	// The placeholder: propose deletion, then delete the package from main.
	ph := revision.Key{Package: "net/istio", Revision: revision.Placeholder}
	got, err := r.Get(ctx, ph)
	if err != nil {
		t.Fatal(err)
	}
	if got.Meta().Key.Workspace != "main" {
		t.Fatalf("placeholder workspace %q", got.Meta().Key.Workspace)
	}
	if _, err := r.UpdateLifecycle(ctx, ph, revision.LifecycleDeletionProposed, repository.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := refs(t, dir); !slices.Equal(got, []string{"refs/heads/deletionProposed/blueprints/net/istio/main", "refs/heads/main"}) {
		t.Fatalf("refs after proposing the placeholder's deletion: %v", got)
	}
	if err := r.Delete(ctx, ph, repository.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := refs(t, dir); !slices.Equal(got, []string{"refs/heads/main"}) {
		t.Fatalf("refs after deleting the placeholder: %v", got)
	}
	if got := commitMessage(t, dir, "main"); got != "Delete blueprints/net/istio" {
		t.Fatalf("delete commit message %q", got)
	}
	if got := git(t, dir, "log", "-1", "--format=%P", "main"); got != mainBefore {
		t.Fatalf("delete commit parent %s", got)
	}
	if got := git(t, dir, "ls-tree", "-r", "--name-only", "main"); got != "README.md" {
		t.Fatalf("main after deleting the package:\n%s", got)
	}
	git(t, dir, "fsck", "--strict", "--no-dangling")
}

// TestReadsPorchLayout builds a repository with the git CLI only, in
// Porch's layout, and checks what cad lists.
func TestReadsPorchLayout(t *testing.T) {
	ctx := context.Background()
	work := filepath.Join(t.TempDir(), "work")
	git(t, "", "init", "--quiet", "-b", "main", work)
	write := func(p, content string) {
		full := filepath.Join(work, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	kf := func(name string) string {
		return "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: " + name + "\n"
	}
	write("pkgs/a/Kptfile", kf("a"))
	write("pkgs/a/cm.yaml", "a: 1\n")
	write("pkgs/a/sub/Kptfile", kf("sub")) // a subpackage, not a package
	write("pkgs/b/Kptfile", kf("b"))
	write("pkgs/notpkg/x.yaml", "x: 1\n")
	write("pkgs/deep/er/c/Kptfile", kf("c"))
	write("other/d/Kptfile", kf("d")) // outside the directory
	git(t, work, "add", "-A")
	git(t, work, "commit", "--quiet", "-m", "Approving package revision pkgs/a/1\n\nkpt:{\"package\":\"pkgs/a\",\"workspaceName\":\"ws-a1\",\"revision\":\"1\"}")
	git(t, work, "tag", "pkgs/a/v1")
	git(t, work, "tag", "pkgs/a/stable") // by hand, on the approval of v1
	git(t, work, "tag", "-a", "-m", "annotated", "pkgs/b/v2.0.0")
	git(t, work, "tag", "v1.0") // a release tag
	// A hand-made package tag on a directory without a Kptfile, on a commit
	// whose kpt: line names another package: not a package revision.
	git(t, work, "tag", "pkgs/notpkg/v1")
	git(t, work, "branch", "deletionProposed/pkgs/b/main")
	// A draft of a, and a draft branch without a Kptfile.
	git(t, work, "checkout", "--quiet", "-b", "drafts/pkgs/a/ws-draft")
	write("pkgs/a/cm.yaml", "a: 2\n")
	git(t, work, "commit", "--quiet", "-am", "Intermediate commit")
	git(t, work, "checkout", "--quiet", "-b", "drafts/pkgs/nokpt/ws", "main")
	git(t, work, "checkout", "--quiet", "-b", "proposed/pkgs/b/ws-prop", "main")
	git(t, work, "checkout", "--quiet", "main")

	spec := gitSpec(work)
	spec.Git.CreateBranch = false
	spec.Git.Directory = "pkgs"
	r := mustOpen(t, spec, nil)
	defer r.Close()
	revs, err := r.List(ctx, repository.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, pr := range revs {
		m := pr.Meta()
		got = append(got, fmt.Sprintf("%s@%s/%d %s", m.Key.Package, m.Key.Workspace, m.Key.Revision, m.Lifecycle))
	}
	want := []string{
		"a@main/-1 Published",
		"a@stable/-1 Published",
		"a@ws-draft/0 Draft",
		"a@ws-a1/1 Published",
		"b@main/-1 DeletionProposed",
		"b@v2.0.0/-1 Published",
		"b@ws-prop/0 Proposed",
		"deep/er/c@main/-1 Published",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("List:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	v1, err := r.Get(ctx, revision.Key{Package: "a", Revision: 1})
	if err != nil {
		t.Fatal(err)
	}
	f, err := v1.Files(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p := f.Paths(); !slices.Equal(p, []string{"Kptfile", "cm.yaml", "sub/Kptfile"}) {
		t.Fatalf("files of a/v1: %v", p)
	}
	if v1.Meta().PublishedBy != "test@example.com" {
		t.Fatalf("PublishedBy %q", v1.Meta().PublishedBy)
	}
	// The hand-made tag has its own key; the workspace of v1 names v1.
	if st, err := r.Get(ctx, revision.Key{Package: "a", Workspace: "stable"}); err != nil || st.Meta().Key.Revision != -1 || st.Meta().Commit != v1.Meta().Commit {
		t.Fatalf("Get(a@stable) = %v, %v", st, err)
	}
	if ws, err := r.Get(ctx, revision.Key{Package: "a", Workspace: "ws-a1"}); err != nil || ws.Meta().Key.Revision != 1 {
		t.Fatalf("Get(a@ws-a1) = %v, %v", ws, err)
	}
	b, err := r.Get(ctx, revision.Key{Package: "b", Workspace: "v2.0.0"})
	if err != nil || b.Meta().Key.Revision != -1 {
		t.Fatalf("Get(b@v2.0.0) = %v, %v", b, err)
	}
	// Tags not of the form v<N> have their commit's author as publisher.
	for _, pr := range revs {
		if m := pr.Meta(); m.Key.Workspace == "v2.0.0" || m.Key.Workspace == "stable" {
			if m.PublishedBy != "test@example.com" || m.PublishedAt.IsZero() {
				t.Fatalf("%s published by %q at %v", m.Key, m.PublishedBy, m.PublishedAt)
			}
		}
	}
	if b.Meta().PublishedBy != "test@example.com" {
		t.Fatalf("Get(b@v2.0.0) published by %q", b.Meta().PublishedBy)
	}
	// Approving a's draft continues the numbering from the CLI's tags.
	if _, err := r.UpdateLifecycle(ctx, revision.Key{Package: "a", Workspace: "ws-draft"}, revision.LifecycleProposed, repository.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	pub, err := r.UpdateLifecycle(ctx, revision.Key{Package: "a", Workspace: "ws-draft"}, revision.LifecyclePublished, repository.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pub.Meta().Key.Revision != 2 {
		t.Fatalf("approval after the CLI's v1 got revision %d", pub.Meta().Key.Revision)
	}
	if got := git(t, work, "show", "pkgs/a/v2:pkgs/a/cm.yaml"); got != "a: 2" {
		t.Fatalf("a/v2 cm.yaml %q", got)
	}
	_ = gitrepo.MemoryURL
}
