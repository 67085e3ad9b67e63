package gitrepo_test

import (
	"context"
	"testing"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// A tree a discarded batch made is never reused: the same draft written
// again after the batch was discarded (the same replacement of the same
// root tree, which a Repository remembers) stores its trees, and git
// fsck and a new Repository read it; approving it beside another
// approval (the branch moved since the draft) keeps both packages.
func TestReplacedTreeNotReusedAfterDiscard(t *testing.T) {
	ctx := context.Background()
	dir := newBare(t)
	r := openMaint(t, dir, nil)
	publishNewTB(t, r, revision.Key{Package: "a", Workspace: "w"})
	key := revision.Key{Package: "p", Workspace: "w"}
	b, err := r.BeginBatch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeDraft(ctx, b, key, "x", true); err != nil {
		t.Fatal(err)
	}
	b.Discard()
	if err := writeDraft(ctx, r, key, "x", true); err != nil {
		t.Fatal(err)
	}
	fsckStrict(t, dir, "after the draft written again")
	want := snapshot(t, dir)
	if _, ok := want["maint:p@w Draft"]; !ok || len(want) != 3 {
		t.Fatalf("revisions %v; want a's v1 and placeholder and the draft", want)
	}
	sameSnapshot(t, "the Repository that wrote", snapshotOf(t, r), want)
	// The branch moves (another approval), then the draft is approved.
	publishNewTB(t, r, revision.Key{Package: "b", Workspace: "w"})
	for _, lc := range []revision.Lifecycle{revision.LifecycleProposed, revision.LifecyclePublished} {
		if _, err := r.UpdateLifecycle(ctx, key, lc, repository.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	fsckStrict(t, dir, "after the approvals")
	got := snapshot(t, dir)
	for _, k := range []string{"maint:a@w/v1 Published", "maint:b@w/v1 Published", "maint:p@w/v1 Published"} {
		if _, ok := got[k]; !ok {
			t.Errorf("no %s in %v", k, got)
		}
	}
	if root := git(t, dir, "ls-tree", "--name-only", "main"); root != "README.md\na\nb\np" {
		t.Errorf("main's root tree holds %q, want README.md, a, b and p", root)
	}
}
