package engine_test

import (
	"context"
	"fmt"
	"log"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/memrepo"
	"github.com/configasdata/cad/revision"
)

// Content already in a repository, without a Kptfile, becomes published
// revision 3 by adoption, and a clone of it records its upstream in cad's
// package file rather than in a Kptfile.
func ExampleEngine_Adopt() {
	ctx := context.Background()
	blueprints, deployments := memrepo.New("blueprints", nil), memrepo.New("deployments", nil)
	defer blueprints.Close()
	defer deployments.Close()
	e, err := engine.New(&engine.Options{Repositories: engine.Repos{"blueprints": blueprints, "deployments": deployments}})
	if err != nil {
		log.Fatal(err)
	}
	// Some content at a commit of the repository: in memrepo, a draft's.
	d, err := blueprints.CreateDraft(ctx, revision.Key{Package: "web", Workspace: "import"}, repository.CreateDraftOptions{
		Files: revision.MustFiles(map[string]string{"deploy.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n"}),
	})
	if err != nil {
		log.Fatal(err)
	}
	imported, err := d.Commit(ctx, revision.CommitOptions{})
	if err != nil {
		log.Fatal(err)
	}

	pub, err := e.Adopt(ctx, "blueprints", revision.Key{Package: "web", Revision: 3}, repository.AdoptOptions{Ref: imported.Meta().Commit})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(pub.Meta().Key, pub.Meta().Lifecycle)

	clone, err := e.Clone(ctx, "deployments", revision.Key{Package: "web", Workspace: "ws"},
		engine.CloneSource{Revision: &revision.Key{Repository: "blueprints", Package: "web", Revision: 3}}, engine.CloneOptions{})
	if err != nil {
		log.Fatal(err)
	}
	files, _ := clone.Files(ctx)
	info, _ := clone.Info(ctx)
	fmt.Println(files.Paths())
	fmt.Println(info.UpstreamLock.Git.Ref)
	// Output:
	// blueprints:web@v3/v3 Published
	// [cadpackage.yaml deploy.yaml]
	// web/v3
}
