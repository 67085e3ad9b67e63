package gitrepo_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
)

// TestVersionSeesEveryRefChange changes the refs of a repository on disk
// the ways other processes do (the git CLI's update-ref, pack-refs,
// deletion of a packed ref and push, a rewrite of a ref file in place as
// go-git writes one, cad through another Repository) and checks after
// each that Version, in a Repository that computed and kept its token
// before, answers at once what a new Repository computes, and that it
// changed where a ref of the layout did. The files are trusted as soon as
// they are written (SetRacyRefAge), so the kept token and its Stamp are
// used at every step: a Version that kept its token regardless fails.
func TestVersionSeesEveryRefChange(t *testing.T) {
	defer gitrepo.SetRacyRefAge(-time.Hour)()
	ctx := context.Background()
	dir := newBare(t)
	spec := gitSpec(dir)
	r := mustOpen(t, spec, &gitrepo.Options{NoAutoMaintain: true})
	defer r.Close()
	propose(t, r, "a", "ws1")
	if _, err := approve(ctx, r, revision.Key{Package: "a", Workspace: "ws1"}); err != nil {
		t.Fatal(err)
	}
	propose(t, r, "b", "ws1")
	git(t, dir, "pack-refs", "--all")
	main := git(t, dir, "rev-parse", "refs/heads/main")
	proposal := git(t, dir, "rev-parse", "refs/heads/proposed/b/ws1")

	version := func() string {
		t.Helper()
		v, err := r.Version(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	prev := version()
	if again := version(); again != prev {
		t.Fatalf("Version of an unchanged repository changed: %s, then %s", prev, again)
	}
	step := func(name string, changed bool, change func()) {
		t.Helper()
		// Past the tick of the file system's clock of the last change,
		// as a poll comes later: the test is of what the Stamp sees,
		// not of the racy window (TestVersionRightAfterAChange).
		time.Sleep(20 * time.Millisecond)
		change()
		cached, cachedOK := gitrepo.CachedVersion(spec)
		got := version()
		// The new Repository computes its token from the refs, not
		// from the memo the others left.
		gitrepo.ForgetVersions()
		fresh := mustOpen(t, spec, nil)
		want, err := fresh.Version(ctx)
		fresh.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s: Version = %s, a new Repository's %s", name, got, want)
		}
		if cachedOK && cached != want {
			t.Errorf("%s: CachedVersion = %s, a new Repository's Version %s", name, cached, want)
		}
		if v, ok := gitrepo.CachedVersion(spec); !ok || v != want {
			t.Errorf("%s: CachedVersion of the unchanged repository = %s, %v; want %s, true", name, v, ok, want)
		}
		if changed && got == prev {
			t.Errorf("%s: Version did not change", name)
		}
		if !changed && got != prev {
			t.Errorf("%s: Version changed, no ref of the layout did", name)
		}
		prev = got
		if again := version(); again != got {
			t.Errorf("%s: Version changed again without a change: %s, then %s", name, got, again)
		}
	}
	step("git update-ref: a new tag in a new directory", true, func() {
		git(t, dir, "update-ref", "refs/tags/team/c/v1", main)
	})
	step("git update-ref: a new draft in new directories", true, func() {
		git(t, dir, "update-ref", "refs/heads/drafts/team/d/ws1", main)
	})
	step("git update-ref of a loose tag", true, func() {
		git(t, dir, "update-ref", "refs/tags/team/c/v1", proposal)
	})
	step("git update-ref of a loose draft", true, func() {
		git(t, dir, "update-ref", "refs/heads/drafts/team/d/ws1", proposal)
	})
	step("a loose draft rewritten in place, as go-git writes", true, func() {
		f, err := os.OpenFile(filepath.Join(dir, "refs", "heads", "drafts", "team", "d", "ws1"), os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(main + "\n"); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	})
	step("git pack-refs --all", false, func() {
		git(t, dir, "pack-refs", "--all")
	})
	step("git update-ref of a packed ref", true, func() {
		git(t, dir, "update-ref", "refs/heads/proposed/b/ws1", main)
	})
	step("git update-ref -d of a packed tag", true, func() {
		git(t, dir, "update-ref", "-d", "refs/tags/a/v1")
	})
	step("git push of a new draft", true, func() {
		work := filepath.Join(t.TempDir(), "work")
		git(t, "", "clone", "--quiet", dir, work)
		git(t, work, "commit", "--quiet", "--allow-empty", "-m", "pushed")
		git(t, work, "push", "--quiet", "origin", "HEAD:refs/heads/drafts/e/ws1")
	})
	step("cad through another Repository", true, func() {
		other := mustOpen(t, spec, &gitrepo.Options{NoAutoMaintain: true})
		defer other.Close()
		propose(t, other, "f", "ws1")
	})
	step("git update-ref of the metadata ref", true, func() {
		git(t, dir, "update-ref", "refs/cad/metadata", main)
	})
	step("git update-ref of a branch the layout ignores", false, func() {
		git(t, dir, "update-ref", "refs/heads/elsewhere", main)
	})
	step("a write of this Repository", true, func() {
		propose(t, r, "g", "ws1")
	})
}

// TestVersionRightAfterAChange checks that a change made just after
// Version kept its token, in the same tick of the file system's clock, is
// seen: with the racy window of the Stamp as it is, the git CLI changes
// a ref at once after each Version, and each Version answers what a new
// Repository computes.
func TestVersionRightAfterAChange(t *testing.T) {
	ctx := context.Background()
	dir := newBare(t)
	spec := gitSpec(dir)
	r := mustOpen(t, spec, &gitrepo.Options{NoAutoMaintain: true})
	defer r.Close()
	propose(t, r, "a", "ws1")
	hashes := []string{git(t, dir, "rev-parse", "refs/heads/main"), git(t, dir, "rev-parse", "refs/heads/proposed/a/ws1")}
	prev := ""
	for i := range 6 {
		got, err := r.Version(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got == prev {
			t.Fatalf("change %d: Version did not change", i)
		}
		gitrepo.ForgetVersions()
		fresh := mustOpen(t, spec, nil)
		want, err := fresh.Version(ctx)
		fresh.Close()
		if err != nil || got != want {
			t.Fatalf("change %d: Version = %s, a new Repository's %s (%v)", i, got, want, err)
		}
		prev = got
		git(t, dir, "update-ref", "refs/heads/drafts/a/ws1", hashes[i%2])
	}
}

// TestVersionOfRepositoryInMemory checks that Version in memory, where no
// token is kept, still follows the writes.
func TestVersionOfRepositoryInMemory(t *testing.T) {
	ctx := context.Background()
	r := mustOpen(t, gitSpec(gitrepo.MemoryURL), nil)
	defer r.Close()
	v0, err := r.Version(ctx)
	if err != nil {
		t.Fatal(err)
	}
	propose(t, r, "a", "ws1")
	v1, err := r.Version(ctx)
	if err != nil || v1 == v0 {
		t.Fatalf("Version after a write = %s (%v), before %s", v1, err, v0)
	}
}

// TestCachedVersion checks that CachedVersion answers the token of a
// closed repository whose refs did not change, that a change by the git
// CLI after that Version makes it answer nothing, and that a Repository
// opened anew then computes the new token (not the memo's) and leaves it
// for CachedVersion.
func TestCachedVersion(t *testing.T) {
	defer gitrepo.SetRacyRefAge(-time.Hour)()
	ctx := context.Background()
	dir := newBare(t)
	spec := gitSpec(dir)
	first := mustOpen(t, spec, &gitrepo.Options{NoAutoMaintain: true})
	propose(t, first, "a", "ws1")
	v1, err := first.Version(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first.Close()
	if v, ok := gitrepo.CachedVersion(spec); !ok || v != v1 {
		t.Fatalf("CachedVersion of the unchanged repository = %q, %v; want %s, true", v, ok, v1)
	}
	fileURL := spec
	fileURL.Git = &repository.GitSpec{Repo: "file://" + dir + "/", Branch: "main"}
	if v, ok := gitrepo.CachedVersion(fileURL); !ok || v != v1 {
		t.Errorf("CachedVersion(file://%s/) = %q, %v; want %s, true", dir, v, ok, v1)
	}
	other := spec
	other.Git = &repository.GitSpec{Repo: dir, Branch: "other"}
	if v, ok := gitrepo.CachedVersion(other); ok {
		t.Errorf("CachedVersion of a branch never read = %q, true", v)
	}

	time.Sleep(20 * time.Millisecond) // past the clock tick of the last change
	git(t, dir, "update-ref", "refs/heads/drafts/a/ws2", git(t, dir, "rev-parse", "refs/heads/main"))
	if v, ok := gitrepo.CachedVersion(spec); ok {
		t.Fatalf("CachedVersion after git update-ref = %s, true", v)
	}
	second := mustOpen(t, spec, nil)
	defer second.Close()
	v2, err := second.Version(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v2 == v1 {
		t.Fatalf("a Repository opened after git update-ref has the old Version %s", v1)
	}
	if v, ok := gitrepo.CachedVersion(spec); !ok || v != v2 {
		t.Errorf("CachedVersion after the second Version = %q, %v; want %s, true", v, ok, v2)
	}

	// A journal of an unfinished write: nothing is answered from the memo.
	journal := filepath.Join(dir, "cad-journal")
	if err := os.WriteFile(journal, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if v, ok := gitrepo.CachedVersion(spec); ok {
		t.Errorf("CachedVersion with a journal pending = %s, true", v)
	}
	if err := os.Remove(journal); err != nil {
		t.Fatal(err)
	}

	for _, url := range []string{"mem://", "https://example.com/r.git", "relative/repo.git"} {
		s := gitSpec(url)
		if v, ok := gitrepo.CachedVersion(s); ok {
			t.Errorf("CachedVersion(%s) = %s, true", url, v)
		}
	}
}
