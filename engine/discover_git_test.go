package engine_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/repository/memrepo"
	"github.com/configasdata/cad/revision"
)

// A package cloned from a plain git URL (no Kptfile upstream side, a
// Porch-style package tag) is discovered as upgradable when the upstream
// gets a newer tag, and upgraded with Ref.Git upstreams, keeping a local
// edit; a branch lock is reported when the branch moves.
func TestDiscoverAndUpgradeFromGitURL(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git CLI not on PATH")
	}
	ctx := context.Background()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			bare := filepath.Join(t.TempDir(), "upstream.git")
			gitCLI(t, "", "init", "--quiet", "--bare", "-b", "main", bare)
			work := t.TempDir()
			gitCLI(t, work, "init", "--quiet", "-b", "main")
			if err := os.MkdirAll(filepath.Join(work, "apps/web"), 0o755); err != nil {
				t.Fatal(err)
			}
			write := func(p, s string) {
				t.Helper()
				if err := os.WriteFile(filepath.Join(work, p), []byte(s), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			write("apps/web/deploy.yaml", noKptDeploy)
			gitCLI(t, work, "add", "-A")
			gitCLI(t, work, "commit", "--quiet", "-m", "v1")
			gitCLI(t, work, "tag", "-a", "-m", "release 1", "apps/web/v1")
			gitCLI(t, work, "push", "--quiet", bare, "main", "apps/web/v1")

			r := b.open(t, deployRepo)
			e := newEngineFor(t, r)
			fetcher := &gitrepo.Fetcher{}
			tagged := revision.Key{Package: "web", Workspace: "ws1"}
			if _, err := e.Clone(ctx, deployRepo, tagged, engine.CloneSource{Git: &engine.GitUpstream{Repo: bare, Directory: "apps/web", Ref: "v1"}},
				engine.CloneOptions{Fetcher: fetcher}); err != nil {
				t.Fatal(err)
			}
			d, _ := e.Get(ctx, deployRepo, tagged)
			f := files(t, d)
			if f.Has(revision.KptfileName) {
				t.Fatal("a clone of a directory without a Kptfile got one")
			}
			local, _ := f.With("local.yaml", []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: local\n"))
			if _, err := e.Update(ctx, deployRepo, tagged, local, engine.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			web1 := publishIn(t, e, deployRepo, tagged)
			branch := revision.Key{Package: "web-main", Workspace: "ws1"}
			if _, err := e.Clone(ctx, deployRepo, branch, engine.CloneSource{Git: &engine.GitUpstream{Repo: bare, Directory: "apps/web", Ref: "main"}},
				engine.CloneOptions{Fetcher: fetcher}); err != nil {
				t.Fatal(err)
			}
			publishIn(t, e, deployRepo, branch)

			if _, err := e.DiscoverGitUpgrades(ctx, nil, nil); !errors.Is(err, repository.ErrInvalidInput) {
				t.Fatalf("without a lister: %v", err)
			}
			cands, err := e.DiscoverGitUpgrades(ctx, nil, fetcher)
			if err != nil {
				t.Fatal(err)
			}
			if len(cands) != 2 || len(cands[0].Newer) != 0 || len(cands[1].Newer) != 0 {
				t.Fatalf("before the upstream moved: %+v", cands)
			}

			// The upstream gets v2 on a moved main.
			write("apps/web/deploy.yaml", strings.Replace(noKptDeploy, "replicas: 1", "replicas: 3", 1))
			gitCLI(t, work, "commit", "--quiet", "-am", "v2")
			gitCLI(t, work, "tag", "apps/web/v2")
			gitCLI(t, work, "tag", "v7") // a release tag of the whole repository: not the package's
			gitCLI(t, work, "push", "--quiet", bare, "main", "apps/web/v2", "v7")

			cands, err = e.DiscoverGitUpgrades(ctx, []string{deployRepo}, fetcher)
			if err != nil {
				t.Fatal(err)
			}
			if len(cands) != 2 {
				t.Fatalf("candidates %+v", cands)
			}
			byPkg := map[string]engine.GitUpgradeCandidate{}
			for _, c := range cands {
				byPkg[c.Downstream.Package] = c
			}
			if c := byPkg["web"]; c.Upstream.Ref != "v1" || !slices.Equal(c.Newer, []string{"v2", "v7"}) {
				// "v1" resolves to apps/web/v1 first, then to v1: both forms count.
				t.Fatalf("tag candidate %+v", c)
			}
			if c := byPkg["web-main"]; !slices.Equal(c.Newer, []string{"main"}) {
				t.Fatalf("branch candidate %+v", c)
			}

			old := engine.Ref{Git: &engine.GitUpstream{Repo: bare, Directory: "apps/web", Ref: "v1"}}
			next := engine.Ref{Git: &engine.GitUpstream{Repo: bare, Directory: "apps/web", Ref: "v2"}}
			if _, err := e.Upgrade(ctx, deployRepo, web1.Meta().Key, old, next, "ws2", engine.UpgradeOptions{}); !errors.Is(err, repository.ErrInvalidInput) {
				t.Fatalf("upgrade from git without a fetcher: %v", err)
			}
			up, err := e.Upgrade(ctx, deployRepo, web1.Meta().Key, old, next, "ws2", engine.UpgradeOptions{Fetcher: fetcher})
			if err != nil {
				t.Fatal(err)
			}
			uf := files(t, up)
			if d, _ := uf.Get("deploy.yaml"); !strings.Contains(string(d), "replicas: 3") || !uf.Has("local.yaml") || uf.Has(revision.KptfileName) {
				t.Fatalf("upgraded files %v:\n%s", uf.Paths(), d)
			}
			info, err := up.Info(ctx)
			if err != nil || info.UpstreamLock == nil || info.UpstreamLock.Git.Ref != "v2" || info.UpstreamLock.Git.Repo != bare ||
				info.UpstreamLock.Git.Commit != gitCLI(t, work, "rev-parse", "apps/web/v2^{commit}") {
				t.Fatalf("lock after the upgrade %+v, %v", info.UpstreamLock, err)
			}
			publishIn(t, e, deployRepo, up.Meta().Key)
			cands, err = e.DiscoverGitUpgrades(ctx, []string{deployRepo}, fetcher)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range cands {
				if c.Downstream.Package == "web" && !slices.Equal(c.Newer, []string{"v7"}) {
					t.Fatalf("after the upgrade: %+v", c)
				}
			}
		})
	}
}

func newEngineFor(t *testing.T, r repository.Repository) *engine.Engine {
	t.Helper()
	e, err := engine.New(&engine.Options{Repositories: engine.Repos{r.Name(): r}})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func publishIn(t *testing.T, e *engine.Engine, repo string, k revision.Key) revision.PackageRevision {
	t.Helper()
	if _, err := e.Propose(context.Background(), repo, k); err != nil {
		t.Fatal(err)
	}
	pr, err := e.Approve(context.Background(), repo, k)
	if err != nil {
		t.Fatal(err)
	}
	return pr
}

// noAdopter is a repository without the Adopter capability.
type noAdopter struct{ repository.Repository }

func TestAdoptErrors(t *testing.T) {
	ctx := context.Background()
	r := memrepo.New(repoName, nil)
	defer r.Close()
	e := newEngineFor(t, r)
	pr, err := e.Init(ctx, repoName, revision.Key{Package: "app", Workspace: "ws"}, engine.InitOptions{NoKptfile: true})
	if err != nil {
		t.Fatal(err)
	}
	ref := pr.Meta().Commit
	for _, tc := range []struct {
		what string
		repo string
		key  revision.Key
		want error
	}{
		{"unknown repository", "nope", revision.Key{Package: "x", Revision: 1}, repository.ErrNotFound},
		{"nested in a package", repoName, revision.Key{Package: "app/sub", Revision: 1}, repository.ErrInvalidInput},
		{"bad path", repoName, revision.Key{Package: "/abs", Revision: 1}, repository.ErrInvalidInput},
	} {
		if _, err := e.Adopt(ctx, tc.repo, tc.key, repository.AdoptOptions{Ref: ref}); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.what, err, tc.want)
		}
	}
	// A further revision of an existing package is fine.
	if _, err := e.Adopt(ctx, repoName, revision.Key{Package: "app", Revision: 2}, repository.AdoptOptions{Ref: ref}); err != nil {
		t.Fatal(err)
	}
	plain := newEngineFor(t, noAdopter{r})
	if _, err := plain.Adopt(ctx, repoName, revision.Key{Package: "b", Revision: 1}, repository.AdoptOptions{Ref: ref}); !errors.Is(err, repository.ErrNotSupported) {
		t.Fatalf("a backend without Adopter: %v", err)
	}
}

// CloneOptions.Kptfile adds a Kptfile to a clone of an upstream without
// one; an upstream's package file is carried and its name, upstream and
// lock rewritten, keeping its other fields.
func TestCloneWithoutKptfileOptions(t *testing.T) {
	ctx := context.Background()
	r := memrepo.New(repoName, nil)
	defer r.Close()
	e := newEngineFor(t, r)
	pf := "apiVersion: cad.configasdata.dev/v1alpha1\nkind: Package\nmetadata:\n  name: base # the blueprint\nspec:\n  pipeline:\n    mutators:\n    - image: set-labels:v0.1.5\n"
	base := revision.Key{Package: "base", Workspace: "ws"}
	if _, err := e.Init(ctx, repoName, base, engine.InitOptions{NoKptfile: true}); err != nil {
		t.Fatal(err)
	}
	d, _ := e.Get(ctx, repoName, base)
	f, _ := files(t, d).With(revision.PackageFileName, []byte(pf))
	if _, err := e.Update(ctx, repoName, base, f, engine.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	publishIn(t, e, repoName, base)
	src := &revision.Key{Package: "base", Revision: 1}

	pr, err := e.Clone(ctx, repoName, revision.Key{Package: "a", Workspace: "ws"}, engine.CloneSource{Revision: src}, engine.CloneOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := files(t, pr).Get(revision.PackageFileName)
	for _, want := range []string{"name: a", "# the blueprint", "image: set-labels:v0.1.5", "ref: base/v1"} {
		if !strings.Contains(string(got), want) {
			t.Fatalf("clone's package file lacks %q:\n%s", want, got)
		}
	}
	if files(t, pr).Has(revision.KptfileName) {
		t.Fatal("clone got a Kptfile")
	}
	pr, err = e.Clone(ctx, repoName, revision.Key{Package: "b", Workspace: "ws"}, engine.CloneSource{Revision: src}, engine.CloneOptions{Kptfile: true})
	if err != nil {
		t.Fatal(err)
	}
	kf, ok := files(t, pr).Get(revision.KptfileName)
	if !ok || !strings.Contains(string(kf), "ref: base/v1") {
		t.Fatalf("CloneOptions.Kptfile: Kptfile %q", kf)
	}
	if info, _ := pr.Info(ctx); info.UpstreamLock == nil || info.UpstreamLock.Git.Ref != "base/v1" {
		t.Fatalf("the Kptfile's lock wins: %+v", info.UpstreamLock)
	}
}
