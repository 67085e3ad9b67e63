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

// A write batch is a Repository whose writes are held until Commit: reads
// through it see them, nobody else does, and after Commit (or Discard)
// it refuses every use.
func ExampleBatch() {
	ctx := context.Background()
	repo := memrepo.New("deployments", nil)
	defer repo.Close()

	b, err := repository.BeginBatch(ctx, repo)
	if err != nil {
		fmt.Println(err) // ErrNotSupported: write without a batch, or not at all
		return
	}
	defer b.Discard() // does nothing after Commit
	for _, pkg := range []string{"cluster-a/app", "cluster-b/app"} {
		d, err := b.CreateDraft(ctx, revision.Key{Package: pkg, Workspace: "v1"},
			repository.CreateDraftOptions{Files: revision.MustFiles(map[string]string{"app.yaml": "replicas: 3\n"})})
		if err != nil {
			fmt.Println(err)
			return
		}
		if _, err := d.Commit(ctx, revision.CommitOptions{}); err != nil {
			fmt.Println(err)
			return
		}
	}
	inBatch, _ := b.List(ctx, repository.ListOptions{})
	outside, _ := repo.List(ctx, repository.ListOptions{})
	fmt.Println("before Commit:", len(inBatch), "in the batch,", len(outside), "outside")

	if err := b.Commit(ctx); err != nil {
		fmt.Println(err) // ErrConflict: another writer won; nothing was written
		return
	}
	outside, _ = repo.List(ctx, repository.ListOptions{})
	fmt.Println("after Commit:", len(outside), "outside")
	_, err = b.List(ctx, repository.ListOptions{})
	fmt.Println(errors.Is(err, repository.ErrBatchDone))
	// Output:
	// before Commit: 2 in the batch, 0 outside
	// after Commit: 2 outside
	// true
}
