package engine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/memrepo"
	"github.com/configasdata/cad/revision"
)

func TestDiscoverUpgrades(t *testing.T) {
	ctx := context.Background()
	catalog, deploy := memrepo.New("catalog", nil), memrepo.New("deploy", nil)
	defer catalog.Close()
	defer deploy.Close()
	e, err := engine.New(&engine.Options{Repositories: engine.Repos{"catalog": catalog, "deploy": deploy}})
	if err != nil {
		t.Fatal(err)
	}
	publish := func(repo string, k revision.Key) revision.PackageRevision {
		t.Helper()
		if _, err := e.Propose(ctx, repo, k); err != nil {
			t.Fatal(err)
		}
		pr, err := e.Approve(ctx, repo, k)
		if err != nil {
			t.Fatal(err)
		}
		return pr
	}
	if _, err := e.Init(ctx, "catalog", revision.Key{Package: "basens", Workspace: "v1"}, engine.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	v1 := publish("catalog", revision.Key{Package: "basens", Workspace: "v1"})
	for _, pkg := range []string{"team-a", "team-b"} {
		if _, err := e.Clone(ctx, "deploy", revision.Key{Package: pkg, Workspace: "v1"}, engine.CloneSource{Revision: &revision.Key{Repository: "catalog", Package: "basens", Revision: 1}}, engine.CloneOptions{}); err != nil {
			t.Fatal(err)
		}
		publish("deploy", revision.Key{Package: pkg, Workspace: "v1"})
	}
	// A package with no upstream, and one whose draft is not published,
	// are no candidates.
	if _, err := e.Init(ctx, "deploy", revision.Key{Package: "plain", Workspace: "v1"}, engine.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	publish("deploy", revision.Key{Package: "plain", Workspace: "v1"})

	got, err := e.DiscoverUpgrades(ctx, []string{"deploy"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Downstream.Package != "team-a" || got[1].Downstream.Package != "team-b" {
		t.Fatalf("candidates before v2: %+v", got)
	}
	for _, c := range got {
		if c.Upstream != (revision.Key{Repository: "catalog", Package: "basens", Revision: 1}) || len(c.Newer) != 0 || c.Latest() != (revision.Key{}) {
			t.Fatalf("candidate before v2: %+v", c)
		}
	}

	if _, err := e.Copy(ctx, "catalog", v1.Meta().Key, "v2", engine.CopyOptions{}); err != nil {
		t.Fatal(err)
	}
	v2 := publish("catalog", revision.Key{Package: "basens", Workspace: "v2"})
	got, err = e.DiscoverUpgrades(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("candidates after v2: %+v", got)
	}
	for _, c := range got {
		if c.Downstream.Repository != "deploy" || len(c.Newer) != 1 || c.Latest().Revision != 2 || c.Latest().Package != "basens" {
			t.Fatalf("candidate after v2: %+v", c)
		}
	}

	// Upgrade team-a and publish: it is up to date, team-b is not.
	old, next := engine.Ref{Repository: "catalog", Key: v1.Meta().Key}, engine.Ref{Repository: "catalog", Key: v2.Meta().Key}
	if _, err := e.Upgrade(ctx, "deploy", revision.Key{Package: "team-a", Revision: 1}, old, next, "v2", engine.UpgradeOptions{}); err != nil {
		t.Fatal(err)
	}
	publish("deploy", revision.Key{Package: "team-a", Workspace: "v2"})
	got, err = e.DiscoverUpgrades(ctx, []string{"deploy"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Downstream.Revision != 2 || got[0].Upstream.Revision != 2 || len(got[0].Newer) != 0 || len(got[1].Newer) != 1 {
		t.Fatalf("candidates after upgrading team-a: %+v", got)
	}

	// UpstreamOf resolves a clone's lock to the registered revision, and
	// nothing for a package without an upstream.
	teamB, err := e.Latest(ctx, "deploy", "team-b")
	if err != nil {
		t.Fatal(err)
	}
	info, err := teamB.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ref, ok, err := e.UpstreamOf(ctx, info)
	if err != nil || !ok || ref.Repository != "catalog" || ref.Key != (revision.Key{Package: "basens", Revision: 1}) {
		t.Fatalf("UpstreamOf(team-b) = %+v, %v, %v", ref, ok, err)
	}
	plain, err := e.Latest(ctx, "deploy", "plain")
	if err != nil {
		t.Fatal(err)
	}
	pinfo, _ := plain.Info(ctx)
	if _, ok, err := e.UpstreamOf(ctx, pinfo); ok || err != nil {
		t.Fatalf("UpstreamOf(plain) = %v, %v; want nothing", ok, err)
	}
	if _, err := e.DiscoverUpgrades(ctx, []string{"nope"}); !errors.Is(err, repository.ErrNotFound) {
		t.Fatalf("DiscoverUpgrades of an unknown repository: %v, want ErrNotFound", err)
	}
}
