package gitrepo_test

import (
	"context"
	"fmt"
	"log"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
)

func Example() {
	ctx := context.Background()
	r, err := gitrepo.Open(ctx, repository.Spec{
		Name: "blueprints",
		Type: repository.TypeGit,
		Git:  &repository.GitSpec{Repo: gitrepo.MemoryURL, CreateBranch: true},
	}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()

	// A draft on branch drafts/basens/first.
	key := revision.Key{Package: "basens", Workspace: "first"}
	d, err := r.CreateDraft(ctx, key, repository.CreateDraftOptions{Files: revision.MustFiles(map[string]string{
		"Kptfile":        "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: basens\n",
		"namespace.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: example\n",
	})})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := d.Commit(ctx, revision.CommitOptions{}); err != nil {
		log.Fatal(err)
	}

	// Propose, then approve: a merge commit on main tagged basens/v1.
	if _, err := r.UpdateLifecycle(ctx, key, revision.LifecycleProposed, repository.UpdateOptions{}); err != nil {
		log.Fatal(err)
	}
	pub, err := r.UpdateLifecycle(ctx, key, revision.LifecyclePublished, repository.UpdateOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("published", pub.Meta().Key.Revision, pub.Meta().Lifecycle)

	revs, err := r.List(ctx, repository.ListOptions{Package: "basens"})
	if err != nil {
		log.Fatal(err)
	}
	for _, pr := range revs {
		m := pr.Meta()
		fmt.Println(m.Key.Package, m.Key.Workspace, m.Key.Revision, m.Lifecycle)
	}
	// Output:
	// published 1 Published
	// basens main -1 Published
	// basens first 1 Published
}
