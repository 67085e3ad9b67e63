package gitrepo_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
)

// dirState returns every file under dir with a hash of its content: what
// a refused Open must leave exactly as it was.
func dirState(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			out[rel+"/"] = "dir"
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out[rel] = fmt.Sprintf("%x", sha256.Sum256(data))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameState(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	for p, h := range after {
		if before[p] != h {
			t.Errorf("%s: %s was written", what, p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			t.Errorf("%s: %s was removed", what, p)
		}
	}
}

// fsckClean fails t unless git fsck --full finds nothing wrong in dir.
func fsckClean(t *testing.T, dir string) {
	t.Helper()
	var bad []string
	for _, l := range strings.Split(git(t, dir, "fsck", "--full", "--no-progress", "--no-dangling"), "\n") {
		if l != "" && !strings.HasPrefix(l, "notice:") {
			bad = append(bad, l)
		}
	}
	if len(bad) > 0 {
		t.Errorf("git fsck --full in %s: %s", dir, strings.Join(bad, "\n"))
	}
}

// A repository whose format or extensions cad does not implement is
// refused by Open with an error matching repository.ErrNotSupported that
// names the setting, and nothing in it is written, not even with
// git.createBranch set.
func TestOpenRefusesRepositoryFormats(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T) string // returns the repository's path
		want  string                    // in the error
		fsck  bool                      // git itself reads the repository
	}{
		{"sha256", func(t *testing.T) string {
			dir := filepath.Join(t.TempDir(), "repo.git")
			git(t, "", "init", "--quiet", "--bare", "-b", "main", "--object-format=sha256", dir)
			return dir
		}, "extensions.objectformat = sha256", true},
		{"sha256 with a commit", func(t *testing.T) string {
			dir := filepath.Join(t.TempDir(), "repo")
			git(t, "", "init", "--quiet", "-b", "main", "--object-format=sha256", dir)
			os.MkdirAll(filepath.Join(dir, "p"), 0o755)
			os.WriteFile(filepath.Join(dir, "p", "Kptfile"), []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\n"), 0o644)
			git(t, dir, "add", ".")
			git(t, dir, "commit", "--quiet", "-m", "p")
			return dir
		}, "extensions.objectformat = sha256", true},
		{"reftable", func(t *testing.T) string {
			dir := newBare(t)
			git(t, dir, "config", "core.repositoryformatversion", "1")
			git(t, dir, "config", "extensions.refStorage", "reftable")
			return dir
		}, "extensions.refstorage = reftable", false},
		{"unknown extension", func(t *testing.T) string {
			dir := newBare(t)
			git(t, dir, "config", "core.repositoryformatversion", "1")
			git(t, dir, "config", "extensions.frobnicate", "true")
			return dir
		}, "extensions.frobnicate = true", false},
		{"unknown extension, mixed case", func(t *testing.T) string {
			dir := newBare(t)
			git(t, dir, "config", "core.repositoryformatversion", "1")
			git(t, dir, "config", "Extensions.FrobNicate", "Yes")
			return dir
		}, "extensions.frobnicate = Yes", false},
		{"unknown extension in version 0", func(t *testing.T) string {
			// git ignores it; go-git, and so cad, refuses it.
			dir := newBare(t)
			git(t, dir, "config", "extensions.frobnicate", "true")
			return dir
		}, "extensions.frobnicate = true", true},
		{"format version 2", func(t *testing.T) string {
			dir := newBare(t)
			git(t, dir, "config", "core.repositoryformatversion", "2")
			return dir
		}, "core.repositoryformatversion = 2", false},
		{"worktreeConfig", func(t *testing.T) string {
			// go-git v5 refuses it (repository_extensions.go), so does cad.
			dir := newBare(t)
			git(t, dir, "config", "extensions.worktreeConfig", "true")
			return dir
		}, "extensions.worktreeconfig = true", true},
		{"preciousObjects", func(t *testing.T) string {
			dir := newBare(t)
			git(t, dir, "config", "extensions.preciousObjects", "true")
			return dir
		}, "extensions.preciousobjects = true", true},
		{"partial clone", func(t *testing.T) string {
			dir := newBare(t)
			git(t, dir, "config", "core.repositoryformatversion", "1")
			git(t, dir, "config", "extensions.partialClone", "origin")
			return dir
		}, "extensions.partialclone = origin", false},
		{"objectformat sha1 in version 0", func(t *testing.T) string {
			// git refuses a version-1 extension in version 0.
			dir := newBare(t)
			git(t, dir, "config", "extensions.objectformat", "sha1")
			return dir
		}, "extensions.objectformat = sha1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.setup(t)
			before := dirState(t, dir)
			r, err := gitrepo.Open(ctx, crashSpec(dir), nil)
			if err == nil {
				r.Close()
				t.Fatal("Open succeeded")
			}
			wantErr(t, err, repository.ErrNotSupported, "Open")
			var fe *gitrepo.FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("%v is not a *gitrepo.FormatError", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not name %q", err, tc.want)
			}
			sameState(t, "refused Open", before, dirState(t, dir))
			if tc.fsck {
				fsckClean(t, dir)
			}
		})
	}
}

// Format versions 0 and 1 with only the extensions cad implements open,
// and what cad writes there git reads back whole.
func TestOpenAcceptsRepositoryFormats(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		config [][2]string
	}{
		{"version 0", nil},
		{"version 0 noop", [][2]string{{"extensions.noop", "true"}}},
		{"version 1", [][2]string{{"core.repositoryformatversion", "1"}}},
		{"version 1 sha1 noop noop-v1", [][2]string{
			{"core.repositoryformatversion", "1"}, {"extensions.objectFormat", "sha1"},
			{"extensions.noop", "true"}, {"extensions.noop-v1", "true"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := newBare(t)
			for _, kv := range tc.config {
				git(t, dir, "config", kv[0], kv[1])
			}
			r, err := gitrepo.Open(ctx, crashSpec(dir), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			publishNew(t, r, revision.Key{Package: "p", Workspace: "w"})
			if got := git(t, dir, "tag", "--list"); got != "p/v1" {
				t.Errorf("tags %q, want p/v1", got)
			}
			fsckClean(t, dir)
		})
	}
}

// A remote's mirror in Options.CacheDir in a format cad does not
// implement is refused before anything is fetched into it.
func TestOpenRefusesMirrorFormat(t *testing.T) {
	srv := gitServer(t, t.TempDir(), "", "")
	url := srv.InitBare(t, "repo.git")
	cache := filepath.Join(t.TempDir(), "mirror.git")
	git(t, "", "init", "--quiet", "--bare", "--object-format=sha256", cache)
	before := dirState(t, cache)
	spec := repository.Spec{Name: "r", Type: repository.TypeGit, Git: &repository.GitSpec{Repo: url, CreateBranch: true}}
	r, err := gitrepo.Open(context.Background(), spec, &gitrepo.Options{CacheDir: cache})
	if err == nil {
		r.Close()
		t.Fatal("Open succeeded")
	}
	wantErr(t, err, repository.ErrNotSupported, "Open")
	if !strings.Contains(err.Error(), "extensions.objectformat = sha256") {
		t.Errorf("error %q does not name the setting", err)
	}
	sameState(t, "refused Open", before, dirState(t, cache))
	if got := git(t, filepath.Join(srv.Root, "repo.git"), "for-each-ref"); got != "" {
		t.Errorf("the remote was written: %s", got)
	}

	// A directory that is not a repository as cad looks for one (as a
	// reftable repository need not be), with a config cad refuses: it
	// is not made a repository over that config.
	odd := t.TempDir()
	if err := os.WriteFile(filepath.Join(odd, "config"), []byte("[core]\n\trepositoryformatversion = 1\n[extensions]\n\trefStorage = reftable\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before = dirState(t, odd)
	r, err = gitrepo.Open(context.Background(), spec, &gitrepo.Options{CacheDir: odd})
	if err == nil {
		r.Close()
		t.Fatal("Open succeeded")
	}
	wantErr(t, err, repository.ErrNotSupported, "Open")
	sameState(t, "refused Open", before, dirState(t, odd))
}

// A remote that advertises object-format=sha256 is refused before
// anything is fetched or pushed, in memory and with a mirror on disk.
func TestOpenRefusesSHA256Remote(t *testing.T) {
	srv := gitServer(t, t.TempDir(), "", "")
	remote := filepath.Join(srv.Root, "repo.git")
	git(t, "", "init", "--quiet", "--bare", "-b", "main", "--object-format=sha256", remote)
	git(t, remote, "config", "http.receivepack", "true")
	work := filepath.Join(t.TempDir(), "work")
	git(t, "", "init", "--quiet", "-b", "main", "--object-format=sha256", work)
	os.WriteFile(filepath.Join(work, "README.md"), []byte("x\n"), 0o644)
	git(t, work, "add", ".")
	git(t, work, "commit", "--quiet", "-m", "x")
	git(t, work, "push", "--quiet", remote, "main")
	emptyRemote := filepath.Join(srv.Root, "empty.git")
	git(t, "", "init", "--quiet", "--bare", "-b", "main", "--object-format=sha256", emptyRemote)
	git(t, emptyRemote, "config", "http.receivepack", "true")
	for _, name := range []string{"repo.git", "empty.git"} {
		for _, onDisk := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s disk=%v", name, onDisk), func(t *testing.T) {
				dir := filepath.Join(srv.Root, name)
				before := dirState(t, dir)
				opts := &gitrepo.Options{}
				if onDisk {
					opts.CacheDir = filepath.Join(t.TempDir(), "mirror.git")
				}
				spec := repository.Spec{Name: "r", Type: repository.TypeGit, Git: &repository.GitSpec{Repo: srv.RepoURL(name), CreateBranch: true}}
				r, err := gitrepo.Open(context.Background(), spec, opts)
				if err == nil {
					r.Close()
					t.Fatal("Open succeeded")
				}
				wantErr(t, err, repository.ErrNotSupported, "Open")
				if !strings.Contains(err.Error(), "object-format = sha256") {
					t.Errorf("error %q does not name the capability", err)
				}
				sameState(t, "refused Open", before, dirState(t, dir))
				fsckClean(t, dir)
				if onDisk {
					if out := git(t, opts.CacheDir, "for-each-ref"); out != "" {
						t.Errorf("the mirror holds refs: %s", out)
					}
				}
			})
		}
	}
}

// An upstream that advertises object-format=sha256 is refused by the
// Fetcher with an error matching repository.ErrNotSupported.
func TestFetcherRefusesSHA256(t *testing.T) {
	srv := gitServer(t, t.TempDir(), "", "")
	remote := filepath.Join(srv.Root, "up.git")
	git(t, "", "init", "--quiet", "--bare", "-b", "main", "--object-format=sha256", remote)
	work := filepath.Join(t.TempDir(), "work")
	git(t, "", "init", "--quiet", "-b", "main", "--object-format=sha256", work)
	os.WriteFile(filepath.Join(work, "Kptfile"), []byte("x\n"), 0o644)
	git(t, work, "add", ".")
	git(t, work, "commit", "--quiet", "-m", "x")
	git(t, work, "push", "--quiet", remote, "main")
	var f gitrepo.Fetcher
	_, _, err := f.Fetch(context.Background(), repository.GitUpstream{Repo: srv.RepoURL("up.git"), Ref: "main"})
	if !errors.Is(err, repository.ErrNotSupported) || !strings.Contains(err.Error(), "object-format = sha256") {
		t.Fatalf("Fetch: %v, want ErrNotSupported naming object-format", err)
	}
	_, err = f.Refs(context.Background(), repository.GitUpstream{Repo: srv.RepoURL("up.git")})
	if !errors.Is(err, repository.ErrNotSupported) {
		t.Fatalf("Refs: %v, want ErrNotSupported", err)
	}
}
