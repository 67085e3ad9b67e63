package engine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/repository/repotest"
	"github.com/configasdata/cad/revision"
)

// A damaged repository never reads as one without the damaged revisions:
// Engine.List returns the good ones with the damage, and what acts on
// absence (Latest of the damaged package, Init at its path) fails with
// the damage instead of reading "none".
func TestEngineDamagedRepository(t *testing.T) {
	ctx := context.Background()
	dir := repotest.DamagedGitRepo(t)
	r, err := gitrepo.Open(ctx, repository.Spec{Name: "d", Type: repository.TypeGit,
		Git: &repository.GitSpec{Repo: dir, Branch: "main"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	e, err := engine.New(&engine.Options{Repositories: engine.Repos{"d": r}})
	if err != nil {
		t.Fatal(err)
	}
	revs, err := e.List(ctx, "d", repository.ListOptions{})
	var dr *gitrepo.DamagedRefError
	if !errors.Is(err, repository.ErrDamaged) || !errors.As(err, &dr) || dr.Ref != repotest.DamagedMissingRef {
		t.Fatalf("list: %v, want the damage of %s", err, repotest.DamagedMissingRef)
	}
	good := 0
	for _, pr := range revs {
		if pr.Meta().Key.Package == repotest.DamagedGood {
			good++
		}
	}
	if good != 2 {
		t.Fatalf("listed %d revisions of the good package, want 2", good)
	}
	if pr, err := e.Latest(ctx, "d", repotest.DamagedGood); err != nil || pr.Meta().Key.Revision != 1 {
		t.Fatalf("latest good: %v", err)
	}
	if _, err := e.Latest(ctx, "d", "missing"); !errors.Is(err, repository.ErrDamaged) || errors.Is(err, repository.ErrNotFound) {
		t.Fatalf("latest of the damaged package: %v, want ErrDamaged, not ErrNotFound", err)
	}
	if _, err := e.Init(ctx, "d", revision.Key{Package: "missing", Workspace: "w"}, engine.InitOptions{}); !errors.Is(err, repository.ErrDamaged) {
		t.Fatalf("init over the damaged package: %v, want ErrDamaged", err)
	}
	if _, err := e.Get(ctx, "d", revision.Key{Package: "missing", Workspace: "w"}); err == nil {
		t.Fatalf("init wrote a draft: %v", err)
	}
	// A package elsewhere is still created.
	if _, err := e.Init(ctx, "d", revision.Key{Package: "other", Workspace: "w"}, engine.InitOptions{}); err != nil {
		t.Fatalf("init elsewhere: %v", err)
	}
}
