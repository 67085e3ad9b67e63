package gitrepo_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/repository/repotest"
	"github.com/configasdata/cad/revision"
)

func gitSpec(url string) repository.Spec {
	return repository.Spec{Name: "test", Type: repository.TypeGit, Git: &repository.GitSpec{Repo: url, CreateBranch: true}}
}

func mustOpen(t testing.TB, spec repository.Spec, opts *gitrepo.Options) *gitrepo.Repository {
	t.Helper()
	r, err := gitrepo.Open(context.Background(), spec, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", spec.Git.Repo, err)
	}
	return r
}

func TestConformanceMemory(t *testing.T) {
	stores := map[repository.Repository]*memory.Storage{}
	repotest.Run(t, repotest.Harness{
		New: func(t *testing.T) repository.Repository {
			s := memory.NewStorage()
			r := mustOpen(t, gitSpec(gitrepo.MemoryURL), &gitrepo.Options{Storage: s})
			stores[r] = s
			return r
		},
		Reopen: func(t *testing.T, r repository.Repository) repository.Repository {
			return mustOpen(t, gitSpec(gitrepo.MemoryURL), &gitrepo.Options{Storage: stores[r]})
		},
		// The published tag names a missing object.
		Damage: func(t *testing.T, r repository.Repository, key revision.Key) string {
			name := plumbing.ReferenceName(fmt.Sprintf("refs/tags/%s/v%d", key.Package, key.Revision))
			if err := stores[r].SetReference(plumbing.NewHashReference(name, plumbing.NewHash(strings.Repeat("ab", 20)))); err != nil {
				t.Fatal(err)
			}
			return string(name)
		},
		NoBatch: true, // a repository in memory does not batch
	})
}

func TestConformanceBare(t *testing.T) {
	dirs := map[repository.Repository]string{}
	repotest.Run(t, repotest.Harness{
		New: func(t *testing.T) repository.Repository {
			dir := newBare(t)
			r := mustOpen(t, gitSpec(dir), nil)
			dirs[r] = dir
			return r
		},
		Reopen: func(t *testing.T, r repository.Repository) repository.Repository {
			return mustOpen(t, gitSpec("file://"+dirs[r]), nil)
		},
		// The published tag's ref file cut short.
		Damage: func(t *testing.T, r repository.Repository, key revision.Key) string {
			name := fmt.Sprintf("refs/tags/%s/v%d", key.Package, key.Revision)
			if err := os.WriteFile(filepath.Join(dirs[r], name), []byte("0123abc"), 0o644); err != nil {
				t.Fatal(err)
			}
			return name
		},
	})
}

func TestConformanceHTTP(t *testing.T) {
	urls := map[repository.Repository]string{}
	repotest.Run(t, repotest.Harness{
		New: func(t *testing.T) repository.Repository {
			dir := newBare(t)
			srv := gitServer(t, filepath.Dir(dir), "", "")
			url := srv.URL + "/" + filepath.Base(dir)
			r := mustOpen(t, gitSpec(url), nil)
			urls[r] = url
			return r
		},
		Reopen: func(t *testing.T, r repository.Repository) repository.Repository {
			return mustOpen(t, gitSpec(urls[r]), nil)
		},
		Concurrency: 4,
	})
}

// TestRemoteCacheDir keeps the clone of a remote on disk, and sees pushes
// made by another writer (the git CLI).
func TestRemoteCacheDir(t *testing.T) {
	ctx := context.Background()
	dir := newBare(t)
	srv := gitServer(t, filepath.Dir(dir), "", "")
	url := srv.URL + "/" + filepath.Base(dir)
	cache := filepath.Join(t.TempDir(), "cache")
	r := mustOpen(t, gitSpec(url), &gitrepo.Options{CacheDir: cache})
	propose(t, r, "p", "ws")
	if _, err := r.UpdateLifecycle(ctx, revision.Key{Package: "p", Workspace: "ws"}, revision.LifecyclePublished, repository.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.Close()
	if got := git(t, cache, "rev-parse", "refs/tags/p/v1"); got != git(t, dir, "rev-parse", "refs/tags/p/v1") {
		t.Fatalf("the cache dir does not mirror the remote's tag: %s", got)
	}
	// Another writer moves the branch and deletes the tag.
	work := filepath.Join(t.TempDir(), "work")
	git(t, "", "clone", "--quiet", url, work)
	git(t, work, "mv", "p", "q")
	git(t, work, "commit", "--quiet", "-m", "move p to q")
	git(t, work, "push", "--quiet", "origin", "main", ":refs/tags/p/v1")

	r = mustOpen(t, gitSpec(url), &gitrepo.Options{CacheDir: cache})
	defer r.Close()
	revs, err := r.List(ctx, repository.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, pr := range revs {
		got = append(got, pr.Meta().Key.String())
	}
	if strings.Join(got, " ") != "test:q@main/placeholder" {
		t.Fatalf("after the CLI's push, List = %v", got)
	}
	r.Close()

	// A crash during a fetch left a mirror's ref empty: the mirror is a
	// cache, so the next open drops it and fetches it again.
	if err := os.WriteFile(filepath.Join(cache, "refs", "heads", "main"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r = mustOpen(t, gitSpec(url), &gitrepo.Options{CacheDir: cache})
	defer r.Close()
	if revs, err := r.List(ctx, repository.ListOptions{}); err != nil || len(revs) != 1 {
		t.Fatalf("after a damaged mirror ref: %d revisions, %v", len(revs), err)
	}
	if got := git(t, cache, "rev-parse", "refs/heads/main"); got != git(t, dir, "rev-parse", "refs/heads/main") {
		t.Fatalf("the mirror's main is %s", got)
	}
}
