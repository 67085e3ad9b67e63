package engine_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/memrepo"
	"github.com/configasdata/cad/revision"
)

// countingRepo counts its Lists.
type countingRepo struct {
	repository.Repository
	lists atomic.Int32
}

func (r *countingRepo) List(ctx context.Context, opts repository.ListOptions) ([]revision.PackageRevision, error) {
	r.lists.Add(1)
	return r.Repository.List(ctx, opts)
}

// On an Engine from WithReferenceSnapshot, Delete answers for drafts as without
// it, from one listing of the repositories: a draft a revision was created
// from is kept, a referrer deleted with the context no longer counts, and
// many deletes list each repository once. A DeletionProposed revision is
// checked against the repositories as they are.
func TestReferenceSnapshot(t *testing.T) {
	ctx := context.Background()
	up := &countingRepo{Repository: memrepo.New("upstream", nil)}
	down := &countingRepo{Repository: memrepo.New("deployments", nil)}
	e, err := engine.New(&engine.Options{Repositories: engine.Repos{"upstream": up, "deployments": down}})
	if err != nil {
		t.Fatal(err)
	}
	kptfile := func(name string) revision.Files {
		return revision.MustFiles(map[string]string{"Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: " + name + "\n"})
	}
	draft := func(r repository.Repository, key revision.Key, creation *revision.Creation) {
		t.Helper()
		d, err := r.CreateDraft(ctx, key, repository.CreateDraftOptions{Files: kptfile(key.Package)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.Commit(ctx, revision.CommitOptions{Creation: creation}); err != nil {
			t.Fatal(err)
		}
	}
	// A draft of basens, and a revision whose creation record names it
	// (as a record for a published basens@wsd would).
	target := revision.Key{Package: "basens", Workspace: "wsd"}
	draft(up, target, nil)
	src := revision.Key{Repository: "upstream", Package: "basens", Workspace: "wsd"}
	referrer := revision.Key{Package: "ns1", Workspace: "ws1"}
	draft(down, referrer, &revision.Creation{Op: revision.CreatedByClone, Source: &src})
	// Ten drafts nobody references.
	var free []revision.Key
	for _, ws := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"} {
		k := revision.Key{Package: "free", Workspace: ws}
		draft(down, k, nil)
		free = append(free, k)
	}

	var re *engine.ReferencedError
	if err := e.Delete(ctx, "upstream", target); !errors.As(err, &re) {
		t.Fatalf("delete without a snapshot: %v, want a *ReferencedError", err)
	}
	se := e.WithReferenceSnapshot()
	up.lists.Store(0)
	down.lists.Store(0)
	if err := se.Delete(ctx, "upstream", target); !errors.As(err, &re) || len(re.By) != 1 || re.By[0].Package != "ns1" {
		t.Fatalf("delete with a snapshot: %v, want a *ReferencedError naming ns1", err)
	}
	for _, k := range free {
		if err := se.Delete(ctx, "deployments", k); err != nil {
			t.Fatalf("delete %s: %v", k, err)
		}
	}
	if u, d := up.lists.Load(), down.lists.Load(); u != 1 || d != 1 {
		t.Fatalf("11 deletes listed upstream %d times and deployments %d times, want once each", u, d)
	}
	// The referrer deleted through the snapshot's Engine: the draft goes too.
	if err := se.Delete(ctx, "deployments", referrer); err != nil {
		t.Fatal(err)
	}
	if err := se.Delete(ctx, "upstream", target); err != nil {
		t.Fatalf("delete after its referrer: %v", err)
	}

	// A published revision proposed for deletion, cloned after the
	// snapshot was taken: the clone is seen.
	pub := revision.Key{Package: "app", Workspace: "w1"}
	draft(up, pub, nil)
	if _, err := e.Propose(ctx, "upstream", pub); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Approve(ctx, "upstream", pub); err != nil {
		t.Fatal(err)
	}
	v1 := revision.Key{Package: "app", Revision: 1}
	if _, err := e.Clone(ctx, "deployments", revision.Key{Package: "app-copy", Workspace: "w1"},
		engine.CloneSource{Revision: &revision.Key{Repository: "upstream", Package: "app", Revision: 1}}, engine.CloneOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ProposeDelete(ctx, "upstream", v1); err != nil {
		t.Fatal(err)
	}
	if err := se.Delete(ctx, "upstream", v1); !errors.As(err, &re) || len(re.By) != 1 || re.By[0].Package != "app-copy" {
		t.Fatalf("delete of a cloned revision proposed for deletion: %v, want a *ReferencedError naming app-copy", err)
	}
}
