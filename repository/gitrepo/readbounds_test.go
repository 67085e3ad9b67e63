package gitrepo_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/configasdata/cad/internal/peakmem"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
)

// bigBlob is the size of the file the tests of the read bounds push:
// far over the default per-file bound, as a user could push it.
const bigBlob = 200 << 20

// envBigRepo names, for the child processes of peakmem.Measure, the bare
// repository the parent built (the child must not run the git CLI: its
// memory would count as the child's).
const envBigRepo = "CAD_TEST_BIGBLOB_REPO"

// kptfile is a minimal Kptfile for package name.
func kptfile(name string) string {
	return "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: " + name + "\n"
}

// bigBlobRepo builds, with the git CLI, a bare repository whose branch
// holds the package good (a Kptfile and a ConfigMap) and the package bad
// (a Kptfile and big.bin, bigBlob bytes of zeros, made as a sparse file),
// tagged good/v1 and bad/v1; then a second commit appends a line to
// big.bin, tagged bad/v2, so that git gc stores one of the two as a delta
// of the other. The objects are loose, as a push of a few objects leaves
// them.
func bigBlobRepo(t *testing.T) string {
	t.Helper()
	work := filepath.Join(t.TempDir(), "work")
	git(t, "", "init", "--quiet", "-b", "main", work)
	write := func(name, content string) {
		p := filepath.Join(work, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("good/Kptfile", kptfile("good"))
	write("good/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  a: b\n")
	write("bad/Kptfile", kptfile("bad"))
	big := filepath.Join(work, "bad", "big.bin")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(bigBlob); err != nil { // sparse: no disk blocks
		t.Fatal(err)
	}
	f.Close()
	git(t, work, "add", ".")
	git(t, work, "commit", "--quiet", "-m", "packages")
	git(t, work, "tag", "good/v1")
	git(t, work, "tag", "bad/v1")
	f, err = os.OpenFile(big, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("one more line\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	git(t, work, "commit", "--quiet", "-am", "grow big.bin")
	git(t, work, "tag", "bad/v2")
	if err := os.Remove(big); err != nil {
		t.Fatal(err)
	}
	bare := newBare(t)
	git(t, work, "push", "--quiet", bare, "main", "--tags")
	return bare
}

// readBounds lists the repository at dir, reads the good package and
// checks that every revision of the bad one fails with ErrLimit naming
// big.bin and the revision.
func readBounds(t *testing.T, dir string, opts *gitrepo.Options) {
	ctx := context.Background()
	r := mustOpen(t, gitSpec(dir), opts)
	defer r.Close()
	revs, err := r.List(ctx, repository.ListOptions{})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	got := map[string]bool{}
	for _, pr := range revs {
		got[pr.Meta().Key.Package+"@"+pr.Meta().Key.Workspace] = true
	}
	for _, want := range []string{"good@v1", "good@main", "bad@v1", "bad@v2", "bad@main"} {
		if !got[want] {
			t.Errorf("List has no %s: %v", want, got)
		}
	}
	for _, pr := range revs {
		key := pr.Meta().Key
		files, err := pr.Files(ctx)
		if key.Package == "good" {
			if err != nil {
				t.Errorf("Files of %s: %v", key, err)
			} else if !files.Has("cm.yaml") {
				t.Errorf("Files of %s: no cm.yaml in %v", key, files.Paths())
			}
			continue
		}
		if !errors.Is(err, revision.ErrLimit) || !errors.Is(err, revision.ErrInvalid) {
			t.Fatalf("Files of %s: %v, want an error matching revision.ErrLimit", key, err)
		}
		var le *revision.LimitError
		if !errors.As(err, &le) || le.Limit != "gitrepo.Options.MaxFileBytes" {
			t.Errorf("Files of %s: %v, want a *revision.LimitError of MaxFileBytes", key, err)
		}
		if msg := err.Error(); !strings.Contains(msg, "big.bin") || !strings.Contains(msg, key.Workspace) {
			t.Errorf("Files of %s: %q does not name the file and the revision", key, msg)
		}
		// Info reads only the Kptfile.
		if _, err := pr.Info(ctx); err != nil {
			t.Errorf("Info of %s: %v", key, err)
		}
	}
}

// A package holding a file of 200 MB, pushed to a repository beside a
// good package, costs a reader nothing: the repository lists, the good
// package reads, and reading the bad one fails from the blob's header
// with an error matching revision.ErrLimit that names the file, with the
// blob loose, and packed by git gc (one of its two versions a delta of
// the other).
func TestReadBoundsBigBlob(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 200 MB blob")
	}
	if !peakmem.InChild() {
		t.Setenv(envBigRepo, bigBlobRepo(t))
	}
	dir := os.Getenv(envBigRepo)
	const budget = 64 << 20
	t.Run("loose", func(t *testing.T) {
		res := peakmem.Measure(t, 4*budget, func(t *testing.T) { readBounds(t, dir, nil) })
		t.Logf("peak RSS growth %d MiB", res.Growth()>>20)
		if res.Killed || res.Growth() > budget {
			t.Errorf("reading grew the process by %d MiB (killed: %v), want under %d MiB", res.Growth()>>20, res.Killed, budget>>20)
		}
	})
	t.Run("packed", func(t *testing.T) {
		if !peakmem.InChild() {
			git(t, dir, "gc", "--quiet")
			v1 := git(t, dir, "rev-parse", "bad/v1:bad/big.bin")
			v2 := git(t, dir, "rev-parse", "bad/v2:bad/big.bin")
			packs, _ := filepath.Glob(filepath.Join(dir, "objects", "pack", "*.idx"))
			if len(packs) != 1 {
				t.Fatalf("git gc left %d packs", len(packs))
			}
			delta := false
			for _, line := range strings.Split(git(t, dir, "verify-pack", "-v", packs[0]), "\n") {
				f := strings.Fields(line)
				// <id> blob <size> <size in pack> <offset> <depth> <base>
				if len(f) == 7 && (f[0] == v1 || f[0] == v2) {
					delta = true
				}
			}
			if !delta {
				t.Fatalf("git gc stored neither version of big.bin as a delta")
			}
		}
		res := peakmem.Measure(t, 4*budget, func(t *testing.T) { readBounds(t, dir, nil) })
		t.Logf("peak RSS growth %d MiB", res.Growth()>>20)
		if res.Killed || res.Growth() > budget {
			t.Errorf("reading grew the process by %d MiB (killed: %v), want under %d MiB", res.Growth()>>20, res.Killed, budget>>20)
		}
	})
}

// writePackages writes, through r, the drafts good@ws (a Kptfile and a
// ConfigMap) and bad@ws (a Kptfile and three files of 1 MiB).
func writePackages(t *testing.T, r repository.Repository) {
	t.Helper()
	ctx := context.Background()
	mib := strings.Repeat("z", 1<<20)
	for pkg, files := range map[string]map[string]string{
		"good": {"Kptfile": kptfile("good"), "cm.yaml": "kind: ConfigMap\n"},
		"bad":  {"Kptfile": kptfile("bad"), "a.bin": mib, "b.bin": mib + "b", "c.bin": mib + "c"},
	} {
		d, err := r.CreateDraft(ctx, revision.Key{Package: pkg, Workspace: "ws"}, repository.CreateDraftOptions{Files: revision.MustFiles(files)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.Commit(ctx, revision.CommitOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// checkBounds reads good@ws and bad@ws through r: the first reads, the
// second fails with a *revision.LimitError of the bound limit.
func checkBounds(t *testing.T, r repository.Repository, limit string) {
	t.Helper()
	ctx := context.Background()
	revs, err := r.List(ctx, repository.ListOptions{})
	if err != nil || len(revs) != 2 {
		t.Fatalf("List = %d revisions, %v; want 2", len(revs), err)
	}
	for _, pkg := range []string{"good", "bad"} {
		pr, err := r.Get(ctx, revision.Key{Package: pkg, Workspace: "ws"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = pr.Files(ctx)
		if pkg == "good" {
			if err != nil {
				t.Errorf("Files of good: %v", err)
			}
			continue
		}
		var le *revision.LimitError
		if !errors.Is(err, revision.ErrLimit) || !errors.As(err, &le) || le.Limit != limit {
			t.Errorf("Files of bad: %v, want a *revision.LimitError of %s", err, limit)
		} else if !strings.Contains(err.Error(), ".bin") || !strings.Contains(err.Error(), "bad") {
			t.Errorf("Files of bad: %q does not name the file and the revision", err)
		}
	}
}

// The bounds hold on every path objects are read by: a repository in
// memory (go-git's objects), on disk (loose objects), and a remote's
// mirror in memory and on disk (a fetched pack), for the per-file and
// per-package bounds.
func TestReadBoundsEveryStore(t *testing.T) {
	bounds := map[string]gitrepo.Options{
		"gitrepo.Options.MaxFileBytes":    {MaxFileBytes: 1 << 20},
		"gitrepo.Options.MaxPackageBytes": {MaxPackageBytes: 2 << 20},
	}
	t.Run("memory", func(t *testing.T) {
		s := memory.NewStorage()
		w := mustOpen(t, gitSpec(gitrepo.MemoryURL), &gitrepo.Options{Storage: s})
		defer w.Close()
		writePackages(t, w)
		for limit, opts := range bounds {
			opts.Storage = s
			r := mustOpen(t, gitSpec(gitrepo.MemoryURL), &opts)
			checkBounds(t, r, limit)
			r.Close()
		}
	})
	t.Run("disk", func(t *testing.T) {
		dir := newBare(t)
		w := mustOpen(t, gitSpec(dir), nil)
		defer w.Close()
		writePackages(t, w)
		for limit, opts := range bounds {
			r := mustOpen(t, gitSpec(dir), &opts)
			checkBounds(t, r, limit)
			r.Close()
		}
	})
	for _, onDisk := range []bool{false, true} {
		t.Run(map[bool]string{false: "mirror in memory", true: "mirror on disk"}[onDisk], func(t *testing.T) {
			dir := newBare(t)
			srv := gitServer(t, filepath.Dir(dir), "", "")
			url := srv.URL + "/" + filepath.Base(dir)
			w := mustOpen(t, gitSpec(url), nil)
			defer w.Close()
			writePackages(t, w)
			for limit, opts := range bounds {
				a, _ := mirrorOpts(t, onDisk)
				opts.Storage, opts.CacheDir = a.Storage, a.CacheDir
				r := mustOpen(t, gitSpec(url), &opts)
				checkBounds(t, r, limit)
				r.Close()
			}
		})
	}
}
