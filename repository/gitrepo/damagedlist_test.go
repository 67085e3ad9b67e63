package gitrepo_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/repository/repotest"
	"github.com/configasdata/cad/revision"
)

// damagedRefs returns the refs of the *DamagedRefErrors err holds.
func damagedRefs(err error) []string {
	var out []string
	d := repository.Damage(err)
	if d == nil {
		return nil
	}
	for _, e := range d.Damaged {
		var dr *gitrepo.DamagedRefError
		if errors.As(e, &dr) {
			out = append(out, dr.Ref)
		}
	}
	slices.Sort(out)
	return out
}

// One damaged ref costs its revision only: List returns the good package
// and an error naming the damaged ref (matching ErrDamaged and
// ErrCorrupt, and a *DamagedRefError through errors.As); a tag whose
// Kptfile does not parse lists, and fails when its Kptfile is read.
func TestListReportsDamage(t *testing.T) {
	ctx := context.Background()
	dir := repotest.DamagedGitRepo(t)
	r, err := gitrepo.Open(ctx, repository.Spec{Name: "damaged", Type: repository.TypeGit,
		Git: &repository.GitSpec{Repo: dir, Branch: "main"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	revs, err := r.List(ctx, repository.ListOptions{})
	got := strings.Join(keysOf(revs), " ")
	if !errors.Is(err, repository.ErrDamaged) || !errors.Is(err, repository.ErrCorrupt) {
		t.Fatalf("list: %v, want ErrDamaged and ErrCorrupt (listed %s)", err, got)
	}
	var re *repository.Error
	if !errors.As(err, &re) || re.Op != "list" || re.Repository != "damaged" {
		t.Fatalf("list: %#v, want a *repository.Error of list in damaged", err)
	}
	var dr *gitrepo.DamagedRefError
	if !errors.As(err, &dr) || dr.Ref != repotest.DamagedMissingRef {
		t.Fatalf("list: %v, want a *DamagedRefError naming %s", err, repotest.DamagedMissingRef)
	}
	if refs := damagedRefs(err); !slices.Equal(refs, []string{repotest.DamagedMissingRef}) {
		t.Fatalf("damaged refs %v, want only %s", refs, repotest.DamagedMissingRef)
	}
	if !strings.Contains(err.Error(), repotest.DamagedMissingRef) {
		t.Fatalf("the message does not name the ref: %v", err)
	}
	for _, want := range []string{"good@main/placeholder", "good@v1/v1", "unclosed@v1/v1", "bomb@v1/v1"} {
		if !strings.Contains(got, want) {
			t.Fatalf("listed %s, want %s among them", got, want)
		}
	}
	if strings.Contains(got, "missing") {
		t.Fatalf("listed %s, with the missing tag", got)
	}
	// The good package reads; the bad Kptfiles fail their own reads.
	for _, pr := range revs {
		k := pr.Meta().Key
		_, err := pr.Info(ctx)
		switch k.Package {
		case "good":
			if err != nil {
				t.Fatalf("info of %s: %v", k, err)
			}
		case "unclosed":
			if !errors.Is(err, revision.ErrInvalid) {
				t.Fatalf("info of %s: %v, want ErrInvalid", k, err)
			}
		case "bomb":
			if !errors.Is(err, revision.ErrLimit) {
				t.Fatalf("info of %s: %v, want ErrLimit", k, err)
			}
		}
	}
	// Range: the same revisions, then the same damage, last.
	var ranged []revision.PackageRevision
	var rerr error
	for pr, err := range r.Range(ctx, repository.ListOptions{}) {
		if err != nil {
			rerr = err
			break
		}
		ranged = append(ranged, pr)
	}
	repository.SortRevisions(ranged)
	if g := strings.Join(keysOf(ranged), " "); g != got {
		t.Fatalf("range %s, list %s", g, got)
	}
	if refs := damagedRefs(rerr); !slices.Equal(refs, []string{repotest.DamagedMissingRef}) {
		t.Fatalf("range: %v, want the damage of %s", rerr, repotest.DamagedMissingRef)
	}
	// A list of the good package alone is whole; one of the missing
	// package is empty and damaged, never empty and whole.
	if revs, err := r.List(ctx, repository.ListOptions{Package: "good"}); err != nil || len(revs) != 2 {
		t.Fatalf("list good: %d, %v", len(revs), err)
	}
	if revs, err := r.List(ctx, repository.ListOptions{Package: "missing"}); len(revs) != 0 || !errors.Is(err, repository.ErrDamaged) {
		t.Fatalf("list missing: %d, %v, want none and ErrDamaged", len(revs), err)
	}
	// Get names the ref.
	if _, err := r.Get(ctx, revision.Key{Package: "missing", Revision: 1}); !errors.As(err, &dr) || dr.Ref != repotest.DamagedMissingRef {
		t.Fatalf("get missing: %v", err)
	}
}

// A damaged ref that cannot hold a revision (another branch) is no damage
// of the list; a damaged metadata ref is, since revisions then list
// without their metadata.
func TestListDamageOnlyOfRevisions(t *testing.T) {
	dir, _, opts := damagedFixture(t)
	if err := os.WriteFile(filepath.Join(dir, "refs/heads/unrelated"), []byte("garbage\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, revs := openAndList(t, dir, opts)
	if len(revs) != 6 {
		t.Fatalf("listed %v", keysOf(revs))
	}
	if err := os.MkdirAll(filepath.Join(dir, "refs/cad"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "refs/cad/metadata"), []byte("garbage\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	revs, err := r.List(context.Background(), repository.ListOptions{})
	if refs := damagedRefs(err); !slices.Equal(refs, []string{"refs/cad/metadata"}) || len(revs) != 6 {
		t.Fatalf("list: %d revisions, %v, want all and the metadata ref damaged", len(revs), err)
	}
}
