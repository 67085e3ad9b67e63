package engine_test

import (
	"context"
	"fmt"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/repository/memrepo"
	"github.com/configasdata/cad/revision"
)

// A blueprint is cloned, labelled, and later upgraded when the blueprint
// publishes a new revision, found with DiscoverUpgrades.
func ExampleEngine_DiscoverUpgrades() {
	ctx := context.Background()
	e, _ := engine.New(&engine.Options{Repositories: engine.Repos{
		"blueprints": memrepo.New("blueprints", nil), "deployments": memrepo.New("deployments", nil)}})
	publish := func(repo string, k revision.Key) revision.PackageRevision {
		if _, err := e.Propose(ctx, repo, k); err != nil {
			panic(err)
		}
		pr, err := e.Approve(ctx, repo, k)
		if err != nil {
			panic(err)
		}
		return pr
	}

	bp := revision.Key{Package: "basens", Workspace: "v1"}
	if _, err := e.Init(ctx, "blueprints", bp, engine.InitOptions{Description: "a namespace"}); err != nil {
		panic(err)
	}
	v1 := publish("blueprints", bp)
	src := v1.Meta().Key
	team := revision.Key{Package: "team-a", Workspace: "v1"}
	if _, err := e.Clone(ctx, "deployments", team, engine.CloneSource{Revision: &src}, engine.CloneOptions{
		Metadata: revision.Metadata{Labels: map[string]string{"team": "a"}},
	}); err != nil {
		panic(err)
	}
	local := publish("deployments", team)
	fmt.Println("labels:", local.Meta().Labels)

	cp, err := e.Copy(ctx, "blueprints", v1.Meta().Key, "v2", engine.CopyOptions{})
	if err != nil {
		panic(err)
	}
	v2 := publish("blueprints", cp.Meta().Key)

	cands, err := e.DiscoverUpgrades(ctx, []string{"deployments"})
	if err != nil {
		panic(err)
	}
	for _, c := range cands {
		fmt.Printf("%s tracks %s; newest: %s\n", c.Downstream, c.Upstream, c.Latest())
	}
	up, err := e.Upgrade(ctx, "deployments", local.Meta().Key,
		engine.Ref{Repository: "blueprints", Key: v1.Meta().Key}, engine.Ref{Repository: "blueprints", Key: v2.Meta().Key},
		"v2", engine.UpgradeOptions{})
	if err != nil {
		panic(err)
	}
	info, _ := up.Info(ctx)
	fmt.Println("upgraded draft:", up.Meta().Key, "upstream ref:", info.UpstreamLock.Git.Ref)
	// Output:
	// labels: map[team:a]
	// deployments:team-a@v1/v1 tracks blueprints:basens/v1; newest: blueprints:basens@v2/v2
	// upgraded draft: deployments:team-a@v2 upstream ref: basens/v2
}
