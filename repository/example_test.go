package repository_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/memrepo"
	"github.com/configasdata/cad/revision"
)

// Errors from every backend match a sentinel with errors.Is and carry the
// operation, repository and key in a *repository.Error.
func ExampleError() {
	ctx := context.Background()
	repo := memrepo.New("blueprints", nil)
	defer repo.Close()

	_, err := repo.Get(ctx, revision.Key{Package: "net/istio", Revision: 3})
	fmt.Println(errors.Is(err, repository.ErrNotFound))
	var re *repository.Error
	if errors.As(err, &re) {
		fmt.Println(re.Op, re.Repository, re.Key.Package)
	}

	// Backend authors wrap the sentinel and their native cause together.
	native := &fs.PathError{Op: "open", Path: "objects/ab", Err: fs.ErrPermission}
	err = repository.Errorf("get", "blueprints", revision.Key{Package: "p", Workspace: "ws"}, repository.ErrUnavailable, "reading object: %w", native)
	fmt.Println(err)
	fmt.Println(errors.Is(err, repository.ErrUnavailable), errors.Is(err, fs.ErrPermission))
	// Output:
	// true
	// get blueprints net/istio
	// get in repository "blueprints" p@ws: unavailable: reading object: open objects/ab: permission denied
	// true true
}

// Optional capabilities are reached through helpers that report
// ErrNotSupported for backends without them.
func ExampleVersion() {
	ctx := context.Background()
	repo := memrepo.New("blueprints", nil)
	defer repo.Close()

	before, _ := repository.Version(ctx, repo)
	d, _ := repo.CreateDraft(ctx, revision.Key{Package: "app", Workspace: "ws1"}, repository.CreateDraftOptions{})
	_ = d.SetFile("Kptfile", []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n"))
	_, _ = d.Commit(ctx, revision.CommitOptions{})
	after, _ := repository.Version(ctx, repo)
	fmt.Println(before != after)
	// Output:
	// true
}

// Range lists one revision at a time: a loop that keeps nothing holds no
// whole list. Backends without their own Range are listed through List.
func ExampleRange() {
	ctx := context.Background()
	repo := memrepo.New("blueprints", nil)
	defer repo.Close()
	for _, ws := range []string{"ws1", "ws2"} {
		d, _ := repo.CreateDraft(ctx, revision.Key{Package: "app", Workspace: ws}, repository.CreateDraftOptions{})
		_ = d.SetFile("Kptfile", []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n"))
		_, _ = d.Commit(ctx, revision.CommitOptions{})
	}

	drafts := 0
	for pr, err := range repository.Range(ctx, repo, repository.ListOptions{Package: "app"}) {
		if err != nil {
			fmt.Println(err) // once, then the loop ends
			break
		}
		if pr.Meta().Lifecycle == revision.LifecycleDraft {
			drafts++
		}
	}
	fmt.Println(drafts, "drafts")
	// Output:
	// 2 drafts
}
