package gitrepo_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
)

// alternatesSource returns a bare repository written by cad with two
// published packages, one packed by git repack, the other loose, and a
// draft.
func alternatesSource(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "src.git")
	git(t, "", "init", "--quiet", "--bare", "-b", "main", src)
	r, err := gitrepo.Open(ctx, crashSpec(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	publishNew(t, r, revision.Key{Package: "packed", Workspace: "w"})
	git(t, src, "repack", "-a", "-d", "-q")
	publishNew(t, r, revision.Key{Package: "loose", Workspace: "w"})
	if err := writeDraft(ctx, r, revision.Key{Package: "loose", Workspace: "draft"}, "d", true); err != nil {
		t.Fatal(err)
	}
	return src
}

// gitFails reports whether git, run in dir with args, fails.
func gitFails(dir string, args ...string) bool {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	return cmd.Run() != nil
}

// A repository whose objects are in alternates (git clone --shared or
// --reference, a hand-written relative path, a chain of them) lists,
// reads and writes as its source does; new objects go into the
// repository itself, never into an alternate, and git fsck finds both
// clean.
func TestAlternates(t *testing.T) {
	ctx := context.Background()
	src := alternatesSource(t)
	want := func() []string {
		r, revs := openAndList(t, src, nil)
		defer r.Close()
		return keysOf(revs)
	}()
	if len(want) < 4 {
		t.Fatalf("the source lists %v", want)
	}
	for _, tc := range []struct {
		name  string
		clone func(t *testing.T) string
	}{
		{"clone --shared", func(t *testing.T) string {
			dir := filepath.Join(t.TempDir(), "shared.git")
			git(t, "", "clone", "--quiet", "--bare", "--shared", src, dir)
			return dir
		}},
		{"clone --reference", func(t *testing.T) string {
			dir := filepath.Join(t.TempDir(), "ref.git")
			git(t, "", "clone", "--quiet", "--bare", "--reference", src, "file://"+src, dir)
			return dir
		}},
		{"non-bare clone --shared", func(t *testing.T) string {
			dir := filepath.Join(t.TempDir(), "work")
			git(t, "", "clone", "--quiet", "--shared", "--no-checkout", src, dir)
			return dir
		}},
		{"relative path", func(t *testing.T) string {
			dir := filepath.Join(filepath.Dir(src), "rel.git")
			git(t, "", "clone", "--quiet", "--bare", "--shared", src, dir)
			rel, err := filepath.Rel(filepath.Join(dir, "objects"), filepath.Join(src, "objects"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "objects", "info", "alternates"), []byte("# written by hand\n\n"+rel+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			return dir
		}},
		{"chain", func(t *testing.T) string {
			mid := filepath.Join(t.TempDir(), "mid.git")
			git(t, "", "clone", "--quiet", "--bare", "--shared", src, mid)
			dir := filepath.Join(t.TempDir(), "chain.git")
			git(t, "", "clone", "--quiet", "--bare", "--shared", mid, dir)
			return dir
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.clone(t)
			if out, err := os.ReadFile(filepath.Join(gitDirOf(dir), "objects", "info", "alternates")); err != nil || len(out) == 0 {
				t.Fatalf("git left no alternates: %v", err)
			}
			// git clone mirrors the branches of a bare source only.
			for _, ref := range strings.Fields(git(t, src, "for-each-ref", "--format=%(refname)")) {
				git(t, dir, "update-ref", ref, git(t, src, "rev-parse", ref))
			}
			srcBefore := dirState(t, src)
			r, revs := openAndList(t, dir, nil)
			if got := keysOf(revs); !slices.Equal(got, want) {
				t.Fatalf("listed %v, want %v", got, want)
			}
			for _, k := range []revision.Key{{Package: "packed", Workspace: "w"}, {Package: "loose", Workspace: "draft"}} {
				pr, err := r.Get(ctx, k)
				if err != nil {
					t.Fatalf("get %v: %v", k, err)
				}
				files, err := pr.Files(ctx)
				if err != nil {
					t.Fatalf("files of %v: %v", k, err)
				}
				if !files.Has("Kptfile") || !files.Has("data.yaml") {
					t.Errorf("files of %v: %v", k, files.Paths())
				}
			}
			publishNew(t, r, revision.Key{Package: "new", Workspace: "w"})
			if err := writeDraft(ctx, r, revision.Key{Package: "loose", Workspace: "draft"}, "edited", false); err != nil {
				t.Fatalf("edit the draft: %v", err)
			}
			sameState(t, "the alternate", srcBefore, dirState(t, src))
			fsckClean(t, dir)
			fsckClean(t, src)
			head := git(t, dir, "rev-parse", "new/v1")
			if !gitFails(src, "cat-file", "-e", head) {
				t.Errorf("the new commit %s is in the alternate", head)
			}
		})
	}
}

func gitDirOf(dir string) string {
	if fi, err := os.Stat(filepath.Join(dir, ".git")); err == nil && fi.IsDir() {
		return filepath.Join(dir, ".git")
	}
	return dir
}

// Alternates are followed as deep as git follows them, and no deeper; an
// alternate that does not exist, or nesting deeper, is an error of Open
// that names objects/info/alternates, and nothing is written.
func TestAlternatesRefused(t *testing.T) {
	ctx := context.Background()
	src := alternatesSource(t)
	// chain[i] borrows from chain[i-1], chain[0] from src.
	var chain []string
	prev := src
	for i := range 7 {
		dir := filepath.Join(t.TempDir(), fmt.Sprintf("c%d.git", i+1))
		git(t, "", "clone", "--quiet", "--bare", "--shared", prev, dir)
		chain = append(chain, dir)
		prev = dir
	}
	head := git(t, src, "rev-parse", "packed/v1")
	deepest := chain[5] // reads files at depths 0 to 5
	tooDeep := chain[6]
	if gitFails(deepest, "cat-file", "-e", head) || !gitFails(tooDeep, "cat-file", "-e", head) {
		t.Fatal("git does not follow alternates as this test expects")
	}
	r, revs := openAndList(t, deepest, nil)
	if len(revs) == 0 {
		t.Errorf("a chain of 6 alternates lists nothing")
	}
	r.Close()

	before := dirState(t, tooDeep)
	_, err := gitrepo.Open(ctx, crashSpec(tooDeep), nil)
	wantErr(t, err, repository.ErrNotSupported, "Open of alternates nested too deep")
	if !strings.Contains(err.Error(), "alternates") {
		t.Errorf("error %q does not name the alternates", err)
	}
	sameState(t, "refused Open", before, dirState(t, tooDeep))

	missing := filepath.Join(t.TempDir(), "missing.git")
	git(t, "", "clone", "--quiet", "--bare", "--shared", src, missing)
	gone := filepath.Join(t.TempDir(), "gone", "objects")
	if err := os.WriteFile(filepath.Join(missing, "objects", "info", "alternates"), []byte(gone+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before = dirState(t, missing)
	_, err = gitrepo.Open(ctx, crashSpec(missing), nil)
	wantErr(t, err, repository.ErrCorrupt, "Open with a missing alternate")
	if !strings.Contains(err.Error(), "objects/info/alternates") || !strings.Contains(err.Error(), gone) {
		t.Errorf("error %q does not name the file and the directory", err)
	}
	sameState(t, "refused Open", before, dirState(t, missing))
}

// A remote served by git http-backend whose objects are in alternates
// (a --shared clone beside its source) is mirrored, listed and written
// through: git serves the borrowed objects, cad's mirror holds its own.
func TestAlternatesRemote(t *testing.T) {
	ctx := context.Background()
	src := alternatesSource(t)
	srv := gitServer(t, t.TempDir(), "", "")
	shared := filepath.Join(srv.Root, "shared.git")
	git(t, "", "clone", "--quiet", "--bare", "--shared", src, shared)
	git(t, shared, "config", "http.receivepack", "true")
	for _, ref := range strings.Fields(git(t, src, "for-each-ref", "--format=%(refname)")) {
		git(t, shared, "update-ref", ref, git(t, src, "rev-parse", ref))
	}
	srcBefore := dirState(t, src)
	spec := repository.Spec{Name: "r", Type: repository.TypeGit, Git: &repository.GitSpec{Repo: srv.RepoURL("shared.git")}}
	r, err := gitrepo.Open(ctx, spec, &gitrepo.Options{CacheDir: filepath.Join(t.TempDir(), "mirror.git")})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	revs, err := r.List(ctx, repository.ListOptions{})
	if err != nil || len(revs) != 5 {
		t.Fatalf("listed %v, %v", keysOf(revs), err)
	}
	publishNew(t, r, revision.Key{Package: "new", Workspace: "w"})
	sameState(t, "the alternate", srcBefore, dirState(t, src))
	fsckClean(t, shared)
}
