package memrepo_test

import (
	"context"
	"fmt"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/memrepo"
	"github.com/configasdata/cad/revision"
)

// A package goes from draft to published revision 1, and the branch
// placeholder follows it.
func Example() {
	ctx := context.Background()
	repo := memrepo.New("blueprints", nil)
	defer repo.Close()

	draft, _ := repo.CreateDraft(ctx, revision.Key{Package: "net/istio", Workspace: "ws1"}, repository.CreateDraftOptions{})
	_ = draft.SetFile("Kptfile", []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: istio\n"))
	_ = draft.SetFile("deployment.yaml", []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: istiod\n"))
	if _, err := draft.Commit(ctx, revision.CommitOptions{Message: "first draft"}); err != nil {
		fmt.Println(err)
		return
	}

	key := revision.Key{Package: "net/istio", Workspace: "ws1"}
	_, _ = repo.UpdateLifecycle(ctx, key, revision.LifecycleProposed, repository.UpdateOptions{})
	pub, err := repo.UpdateLifecycle(ctx, key, revision.LifecyclePublished, repository.UpdateOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("published:", pub.Meta().Key, pub.Meta().Lifecycle)

	revs, _ := repo.List(ctx, repository.ListOptions{Package: "net/istio"})
	for _, pr := range revs {
		files, _ := pr.Files(ctx)
		fmt.Println(pr.Meta().Key, pr.Meta().Lifecycle, files.Paths())
	}

	_, err = repo.OpenDraft(ctx, revision.Key{Package: "net/istio", Revision: 1})
	fmt.Println(err)
	// Output:
	// published: blueprints:net/istio@ws1/v1 Published
	// blueprints:net/istio@main/placeholder Published [Kptfile deployment.yaml]
	// blueprints:net/istio@ws1/v1 Published [Kptfile deployment.yaml]
	// open draft in repository "blueprints" net/istio@ws1/v1: immutable: revision is Published; only a Draft can be edited
}
