package gitrepo_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
)

const testKptfile = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\n"

// entriesFixture returns a bare repository whose branch main holds the
// package "s" with a symbolic link, and the draft branches drafts/s/ws
// (the same) and drafts/m/ws, whose package "m" holds two submodules
// (gitlinks, one in a subdirectory), all committed by the git CLI; and
// the commit the gitlinks name.
func entriesFixture(t *testing.T) (dir, sub string) {
	t.Helper()
	dir = newBare(t)
	work := filepath.Join(t.TempDir(), "work")
	git(t, "", "clone", "--quiet", dir, work)
	git(t, work, "checkout", "--quiet", "-b", "main")
	write := func(p, data string) {
		os.MkdirAll(filepath.Dir(filepath.Join(work, p)), 0o755)
		if err := os.WriteFile(filepath.Join(work, p), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("s/Kptfile", testKptfile)
	write("s/data.yaml", "a: 1\n")
	if err := os.Symlink("data.yaml", filepath.Join(work, "s", "link")); err != nil {
		t.Fatal(err)
	}
	git(t, work, "add", ".")
	git(t, work, "commit", "--quiet", "-m", "symlink")
	git(t, work, "push", "--quiet", "origin", "main", "main:refs/heads/drafts/s/ws")
	sub = git(t, work, "rev-parse", "HEAD") // any commit id will do
	write("m/Kptfile", testKptfile)
	write("m/data.yaml", "b: 1\n")
	git(t, work, "add", "m")
	git(t, work, "update-index", "--add", "--cacheinfo", "160000,"+sub+",m/sub")
	git(t, work, "update-index", "--add", "--cacheinfo", "160000,"+sub+",m/deep/sub2")
	git(t, work, "commit", "--quiet", "-m", "submodules")
	git(t, work, "push", "--quiet", "origin", "HEAD:refs/heads/drafts/m/ws")
	return dir, sub
}

// A symbolic link in a package is never read as a file (nor written back
// as a regular file): reading the files of its revision, and opening its
// draft, fail with an *UnsupportedFileError naming it, matching
// repository.ErrNotSupported, and nothing is written. Listing works.
func TestSymlinkInPackage(t *testing.T) {
	ctx := context.Background()
	dir, _ := entriesFixture(t)
	before := git(t, dir, "for-each-ref")
	r, revs := openAndList(t, dir, nil)
	if got := strings.Join(keysOf(revs), " "); !strings.Contains(got, "s@main/placeholder") || !strings.Contains(got, "s@ws") {
		t.Fatalf("listed %s", got)
	}
	check := func(what string, err error) {
		t.Helper()
		wantErr(t, err, repository.ErrNotSupported, what)
		var ue *gitrepo.UnsupportedFileError
		if !errors.As(err, &ue) || ue.Path != "link" {
			t.Fatalf("%s: %v does not name the link", what, err)
		}
	}
	pr, err := r.Get(ctx, revision.Key{Package: "s", Workspace: "main"})
	if err == nil {
		_, err = pr.Files(ctx)
	}
	check("files of the placeholder", err)
	_, err = r.OpenDraft(ctx, revision.Key{Package: "s", Workspace: "ws"})
	check("open draft", err)
	if after := git(t, dir, "for-each-ref"); after != before {
		t.Errorf("refs changed:\n%s\nwant\n%s", after, before)
	}
	if mode := strings.Fields(git(t, dir, "ls-tree", "main", "s/link"))[0]; mode != "120000" {
		t.Errorf("s/link has mode %s", mode)
	}
	fsckClean(t, dir)
}

// A submodule in a package is skipped with a warning when its files are
// read, and kept, at the same commit, by a draft's commit (which replaces
// the package directory), through approval; a file that takes its path
// replaces it, with a warning.
func TestSubmoduleInPackage(t *testing.T) {
	ctx := context.Background()
	dir, sub := entriesFixture(t)
	logs := &bytes.Buffer{}
	opts := &gitrepo.Options{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	r, _ := openAndList(t, dir, opts)
	key := revision.Key{Package: "m", Workspace: "ws"}
	d, err := r.OpenDraft(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if paths := strings.Join(d.Files().Paths(), " "); paths != "Kptfile data.yaml" {
		t.Errorf("files %s", paths)
	}
	for _, p := range []string{"path=sub", "path=deep/sub2"} {
		if !strings.Contains(logs.String(), "skipping submodule") || !strings.Contains(logs.String(), p) {
			t.Errorf("no warning for %s in %q", p, logs.String())
		}
	}
	if err := d.SetFile("data.yaml", []byte("b: 2\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Commit(ctx, revision.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	gitlinks := func(ref string) string {
		var out []string
		for _, l := range strings.Split(git(t, dir, "ls-tree", "-r", ref, "m"), "\n") {
			if strings.HasPrefix(l, "160000") {
				out = append(out, l)
			}
		}
		return strings.Join(out, "\n")
	}
	want := "160000 commit " + sub + "\tm/deep/sub2\n160000 commit " + sub + "\tm/sub"
	if got := gitlinks("drafts/m/ws"); got != want {
		t.Errorf("after the commit, gitlinks\n%s\nwant\n%s", got, want)
	}
	if got := git(t, dir, "show", "drafts/m/ws:m/data.yaml"); got != "b: 2" {
		t.Errorf("data.yaml %q", got)
	}
	for _, lc := range []revision.Lifecycle{revision.LifecycleProposed, revision.LifecyclePublished} {
		if _, err := r.UpdateLifecycle(ctx, key, lc, repository.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if got := gitlinks("m/v1"); got != want {
		t.Errorf("published, gitlinks\n%s\nwant\n%s", got, want)
	}
	fsckClean(t, dir)

	// A new draft whose files take the submodules' paths.
	logs.Reset()
	k2 := revision.Key{Package: "m", Workspace: "ws2"}
	d, err = r.CreateDraft(ctx, k2, repository.CreateDraftOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for p, data := range map[string]string{"Kptfile": testKptfile, "sub": "a file\n", "deep": "a file too\n"} {
		if err := d.SetFile(p, []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.Commit(ctx, revision.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := gitlinks("drafts/m/ws2"); got != "" {
		t.Errorf("gitlinks kept where files are: %s", got)
	}
	if !strings.Contains(logs.String(), "dropping submodule") {
		t.Errorf("no warning: %q", logs.String())
	}
	fsckClean(t, dir)
}

// A working repository with the registered branch checked out: cad
// writes only refs and objects, never the index or the working tree, so
// they stay at the old commit (Open warns of it). Afterwards git status
// shows the branch's new changes as staged changes that would undo them,
// as after a push into a checked-out branch; git fsck is clean, a user's
// uncommitted edit is untouched, and git reset --hard catches up.
func TestCheckedOutBranch(t *testing.T) {
	work := filepath.Join(t.TempDir(), "work")
	git(t, "", "init", "--quiet", "-b", "main", work)
	os.MkdirAll(filepath.Join(work, "p"), 0o755)
	os.WriteFile(filepath.Join(work, "p", "Kptfile"), []byte(testKptfile), 0o644)
	os.WriteFile(filepath.Join(work, "notes.txt"), []byte("mine\n"), 0o644)
	git(t, work, "add", ".")
	git(t, work, "commit", "--quiet", "-m", "p")
	os.WriteFile(filepath.Join(work, "notes.txt"), []byte("mine, edited\n"), 0o644)

	logs := &bytes.Buffer{}
	opts := &gitrepo.Options{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	r, revs := openAndList(t, work, opts)
	if !strings.Contains(logs.String(), "checked out") {
		t.Errorf("no warning: %q", logs.String())
	}
	if len(revs) != 1 {
		t.Errorf("listed %v", keysOf(revs))
	}
	publishNew(t, r, revision.Key{Package: "q", Workspace: "w"})

	if _, err := os.Stat(filepath.Join(work, "q")); !os.IsNotExist(err) {
		t.Errorf("cad wrote into the working tree: %v", err)
	}
	status := git(t, work, "status", "--porcelain")
	for _, want := range []string{"D  q/Kptfile", " M notes.txt"} {
		if !strings.Contains(status, want) {
			t.Errorf("git status --porcelain:\n%s\nwant a line %q", status, want)
		}
	}
	fsckClean(t, work)
	git(t, work, "reset", "--quiet", "--hard")
	if status := git(t, work, "status", "--porcelain"); status != "" {
		t.Errorf("after reset --hard: %s", status)
	}
	if _, err := os.Stat(filepath.Join(work, "q", "Kptfile")); err != nil {
		t.Errorf("after reset --hard: %v", err)
	}
}
