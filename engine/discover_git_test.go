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
