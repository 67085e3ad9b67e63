package engine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/memrepo"
	"github.com/configasdata/cad/revision"
)

// Every lifecycle operation and Update can be guarded by the version the
// caller read; a stale one is a conflict that writes nothing.
func TestIfVersion(t *testing.T) {
	ctx := context.Background()
	r := memrepo.New("repo", nil)
	defer r.Close()
	e, err := engine.New(&engine.Options{Repositories: engine.Repos{"repo": r}})
	if err != nil {
		t.Fatal(err)
	}
	key := revision.Key{Package: "app", Workspace: "ws"}
	first, err := e.Init(ctx, "repo", key, engine.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stale := first.Meta().Version
	files, _ := first.Files(ctx)
	files2, _ := files.With("a.yaml", []byte("a: 1\n"))
	cur, err := e.Update(ctx, "repo", key, files2, engine.UpdateOptions{Version: stale})
	if err != nil {
		t.Fatalf("Update at the current version: %v", err)
	}
	files3, _ := files.With("b.yaml", []byte("b: 1\n"))
	if _, err := e.Update(ctx, "repo", key, files3, engine.UpdateOptions{Version: stale}); !errors.Is(err, repository.ErrConflict) {
		t.Fatalf("Update at a stale version: %v, want ErrConflict", err)
	}
	conflict := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, repository.ErrConflict) {
			t.Fatalf("%s at a stale version: %v, want ErrConflict", what, err)
		}
	}
	_, err = e.Propose(ctx, "repo", key, engine.IfVersion(stale))
	conflict("Propose", err)
	if got, _ := e.Get(ctx, "repo", key); got.Meta().Lifecycle != revision.LifecycleDraft || got.Meta().Version != cur.Meta().Version {
		t.Fatal("a refused Propose changed the draft")
	}
	p, err := e.Propose(ctx, "repo", key, engine.IfVersion(cur.Meta().Version))
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Reject(ctx, "repo", key, engine.IfVersion(cur.Meta().Version))
	conflict("Reject", err)
	_, err = e.Approve(ctx, "repo", key, engine.IfVersion(cur.Meta().Version))
	conflict("Approve", err)
	pub, err := e.Approve(ctx, "repo", key, engine.IfVersion(p.Meta().Version), engine.IfVersion(""), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.ProposeDelete(ctx, "repo", pub.Meta().Key, engine.IfVersion(p.Meta().Version))
	conflict("ProposeDelete", err)
	dp, err := e.ProposeDelete(ctx, "repo", pub.Meta().Key, engine.IfVersion(pub.Meta().Version))
	if err != nil {
		t.Fatal(err)
	}
	conflict("Delete", e.Delete(ctx, "repo", pub.Meta().Key, engine.IfVersion(pub.Meta().Version)))
	if err := e.Delete(ctx, "repo", pub.Meta().Key, engine.IfVersion(dp.Meta().Version)); err != nil {
		t.Fatal(err)
	}
}
