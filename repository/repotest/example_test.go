package repotest_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/memrepo"
	"github.com/configasdata/cad/repository/repotest"
	"github.com/configasdata/cad/revision"
)

// Intercept makes a repository fail the way a test needs: here every
// approval loses a compare-and-swap race, so the caller's retry path runs.
func ExampleIntercept() {
	ctx := context.Background()
	repo := repotest.Intercept(memrepo.New("test", nil), repotest.Funcs{
		UpdateLifecycle: func(ctx context.Context, next repository.Repository, k revision.Key, to revision.Lifecycle, o repository.UpdateOptions) (revision.PackageRevision, error) {
			if to == revision.LifecyclePublished {
				return nil, &repository.Error{Op: "update lifecycle", Repository: next.Name(), Key: k, Err: repository.ErrConflict}
			}
			return next.UpdateLifecycle(ctx, k, to, o)
		},
	})
	key := revision.Key{Package: "app", Workspace: "ws1"}
	d, _ := repo.CreateDraft(ctx, key, repository.CreateDraftOptions{})
	_ = d.SetFile("Kptfile", []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n"))
	_, _ = d.Commit(ctx, revision.CommitOptions{})
	_, _ = repo.UpdateLifecycle(ctx, key, revision.LifecycleProposed, repository.UpdateOptions{})
	_, err := repo.UpdateLifecycle(ctx, key, revision.LifecyclePublished, repository.UpdateOptions{})
	fmt.Println(errors.Is(err, repository.ErrConflict))
	fmt.Println(err)
	// Output:
	// true
	// update lifecycle in repository "test" app@ws1: conflict
}
