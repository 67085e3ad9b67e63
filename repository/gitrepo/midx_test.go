package gitrepo_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/configasdata/cad/repository/gitrepo"
)

// A repository kept by git maintenance (its packs merged with a
// multi-pack-index beside them, which cad reads) reads the same through
// cad as before, from a new Repository and from one that read it before;
// cad's writes beside the multi-pack-index read the same as from a copy
// without it; Maintain merging packs removes it, git fsck stays clean.
func TestGitMaintenanceMultiPackIndex(t *testing.T) {
	ctx := context.Background()
	dir := newBare(t)
	r := openMaint(t, dir, nil)
	ageRepo(t, r, "m", 8, 12)
	want := snapshot(t, dir)
	for range 2 {
		git(t, dir, "maintenance", "run", "--task=loose-objects", "--task=incremental-repack", "--task=pack-refs")
	}
	midx := filepath.Join(dir, "objects", "pack", "multi-pack-index")
	if _, err := os.Stat(midx); err != nil {
		t.Fatalf("git maintenance wrote no multi-pack-index: %v", err)
	}
	if loose, packs := objectCounts(t, dir); loose != 0 || packs < 2 {
		t.Fatalf("after git maintenance: %d loose objects, %d packs; want 0 and several", loose, packs)
	}
	sameSnapshot(t, "new Repository after git maintenance", snapshot(t, dir), want)
	sameSnapshot(t, "Repository from before git maintenance", snapshotOf(t, r), want)

	// cad writes beside it: new packs and loose objects it does not name.
	ageRepo(t, r, "n", 3, 3)
	noMidx := copyTB(t, dir)
	if err := os.Remove(filepath.Join(noMidx, "objects", "pack", "multi-pack-index")); err != nil {
		t.Fatal(err)
	}
	want = snapshot(t, noMidx)
	sameSnapshot(t, "new Repository after cad's writes", snapshot(t, dir), want)
	sameSnapshot(t, "the Repository that wrote", snapshotOf(t, r), want)
	fsckStrict(t, dir, "after cad's writes beside a multi-pack-index")
	git(t, dir, "multi-pack-index", "verify")

	// Maintain merges packs it names: it goes.
	if _, err := r.Maintain(ctx, gitrepo.MaintainOptions{Full: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(midx); !os.IsNotExist(err) {
		t.Errorf("a multi-pack-index naming merged packs is left: %v", err)
	}
	fsckStrict(t, dir, "after Maintain")
	sameSnapshot(t, "after Maintain", snapshot(t, dir), want)
	sameSnapshot(t, "the Repository that maintained", snapshotOf(t, r), want)
}

// Maintain packing only loose objects leaves a multi-pack-index naming
// packs it keeps; git verifies it and cad reads through it.
func TestMaintainKeepsMultiPackIndex(t *testing.T) {
	ctx := context.Background()
	dir := newBare(t)
	r := openMaint(t, dir, nil)
	ageRepo(t, r, "k", 4, 20)
	git(t, dir, "repack", "-a", "-d", "-q", "--write-midx")
	ageRepo(t, r, "l", 3, 0) // loose objects only
	want := snapshot(t, dir)
	st, err := r.Maintain(ctx, gitrepo.MaintainOptions{NoRefs: true})
	if err != nil {
		t.Fatal(err)
	}
	if st.PacksMerged != 0 || st.LoosePacked == 0 {
		t.Fatalf("maintain: %+v; want loose objects packed and no pack merged", st)
	}
	if _, err := os.Stat(filepath.Join(dir, "objects", "pack", "multi-pack-index")); err != nil {
		t.Errorf("the multi-pack-index went though every pack it names stays: %v", err)
	}
	git(t, dir, "multi-pack-index", "verify")
	fsckStrict(t, dir, "after Maintain")
	sameSnapshot(t, "after Maintain", snapshot(t, dir), want)
	sameSnapshot(t, "the Repository that maintained", snapshotOf(t, r), want)
}
