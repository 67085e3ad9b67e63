package engine_test

import (
	"context"
	"fmt"
	"log"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/repository/memrepo"
	"github.com/configasdata/cad/revision"
)

// A published blueprint is cloned into a second repository: the clone's
// Kptfile names its upstream and locks the revision it came from.
func ExampleEngine_Clone() {
	ctx := context.Background()
	blueprints, deployments := memrepo.New("blueprints", nil), memrepo.New("deployments", nil)
	defer blueprints.Close()
	defer deployments.Close()
	e, err := engine.New(&engine.Options{Repositories: engine.Repos{"blueprints": blueprints, "deployments": deployments}})
	if err != nil {
		log.Fatal(err)
	}
	key := revision.Key{Package: "basens", Workspace: "v1"}
	if _, err := e.Init(ctx, "blueprints", key, engine.InitOptions{}); err != nil {
		log.Fatal(err)
	}
	if _, err := e.Propose(ctx, "blueprints", key); err != nil {
		log.Fatal(err)
	}
	if _, err := e.Approve(ctx, "blueprints", key); err != nil {
		log.Fatal(err)
	}

	src := revision.Key{Repository: "blueprints", Package: "basens", Revision: 1}
	pr, err := e.Clone(ctx, "deployments", revision.Key{Package: "team-a/ns", Workspace: "first"},
		engine.CloneSource{Revision: &src}, engine.CloneOptions{ForDeployment: true, Strategy: revision.ResourceMerge})
	if err != nil {
		log.Fatal(err)
	}
	info, _ := pr.Info(ctx)
	fmt.Println(pr.Meta().Key, pr.Meta().Lifecycle)
	fmt.Println(info.Upstream.Git.Repo, info.Upstream.Git.Directory, info.Upstream.Git.Ref, info.Upstream.UpdateStrategy)
	// Output:
	// deployments:team-a/ns@first Draft
	// blueprints basens basens/v1 resource-merge
}
