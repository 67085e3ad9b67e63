package cad_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/configasdata/cad"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/memrepo"
	"github.com/configasdata/cad/revision"
)

// Open dispatches a Spec to the backend for its type; here every git spec
// opens an in-memory repository, as a unit test might arrange.
func ExampleOpen() {
	ctx := context.Background()
	backends := cad.Backends{
		repository.TypeGit: func(ctx context.Context, s cad.Spec) (cad.Repository, error) {
			return memrepo.New(s.Name, &memrepo.Options{Branch: s.Git.Branch}), nil
		},
	}
	repo, err := cad.Open(ctx, cad.Spec{Name: "blueprints", Type: repository.TypeGit, Git: &repository.GitSpec{Repo: "unused"}}, backends)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer repo.Close()

	files, _ := cad.FilesFromStrings(map[string]string{"Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n"})
	key := cad.Key{Package: "app", Workspace: "ws1"}
	d, _ := repo.CreateDraft(ctx, key, repository.CreateDraftOptions{Files: files})
	_, _ = d.Commit(ctx, revision.CommitOptions{})
	_, _ = repo.UpdateLifecycle(ctx, key, cad.LifecycleProposed, repository.UpdateOptions{})
	pub, _ := repo.UpdateLifecycle(ctx, key, cad.LifecyclePublished, repository.UpdateOptions{})
	fmt.Println(pub.Meta().Key, pub.Meta().Lifecycle)

	_, err = cad.Open(ctx, cad.Spec{Name: "images", Type: repository.TypeOCI, OCI: &repository.OCISpec{Registry: "r.invalid/pkgs"}}, backends)
	fmt.Println(errors.Is(err, repository.ErrNotSupported))
	// Output:
	// blueprints:app@ws1/v1 Published
	// true
}
