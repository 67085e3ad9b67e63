package gitrepo_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
)

// A new draft's check that its workspace is free reads each tag's
// commit, not the revision behind it: a published revision of another
// workspace whose root tree is missing does not stop a draft, while the
// workspaces taken stay taken, and one whose revision cannot be read is
// reported, not taken for free.
func TestWorkspaceFreeReadsNoOtherRevision(t *testing.T) {
	ctx := context.Background()
	dir := newBare(t)
	spec := benchSpec(dir)
	spec.Git.CreateBranch = true
	r := mustOpen(t, spec, nil)
	defer r.Close()
	for _, ws := range []string{"a", "b"} {
		propose(t, r, "pkg", ws)
		if _, err := r.UpdateLifecycle(ctx, revision.Key{Package: "pkg", Workspace: ws}, revision.LifecyclePublished, repository.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Remove v1's root tree (only v1's commit holds it), and cad-paths,
	// where the approval recorded v1's package tree (which would spare a
	// read of the root tree).
	root := git(t, dir, "rev-parse", "pkg/v1^{tree}")
	if err := os.Remove(filepath.Join(dir, "objects", root[:2], root[2:])); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "cad-paths")); err != nil {
		t.Fatal(err)
	}
	checkNewDrafts(t, dir, "a draft beside a damaged revision of another workspace")
}

// checkNewDrafts checks, each in a new Repository of dir (nothing
// cached), that package pkg takes a draft of the new workspace c (newCase
// names the situation), refuses b as taken, and fails on a, whose
// revision cannot be read, with another error than ErrAlreadyExists. It
// returns its way of creating a draft, for further cases.
func checkNewDrafts(t *testing.T, dir, newCase string) (create func(ws string) error) {
	t.Helper()
	create = func(ws string) error {
		r := mustOpen(t, benchSpec(dir), nil)
		defer r.Close()
		_, err := r.CreateDraft(context.Background(), revision.Key{Package: "pkg", Workspace: ws}, repository.CreateDraftOptions{Files: kptPkg("pkg", nil)})
		return err
	}
	if err := create("c"); err != nil {
		t.Fatalf("%s: %v", newCase, err)
	}
	if err := create("b"); !errors.Is(err, repository.ErrAlreadyExists) {
		t.Fatalf("workspace b, taken: %v", err)
	}
	if err := create("a"); err == nil || errors.Is(err, repository.ErrAlreadyExists) {
		t.Fatalf("workspace a, whose revision cannot be read: %v", err)
	}
	return create
}

// TestNewDraftCommitSeesWorkspaceTakenMeanwhile creates a draft, lets
// another Repository (another process, as far as the first can tell)
// take its workspace before the draft's first commit, as a draft, a
// proposal or a published revision, and checks that the commit fails
// with ErrAlreadyExists and leaves no draft branch: the first commit
// checks again what changed since CreateDraft's check.
func TestNewDraftCommitSeesWorkspaceTakenMeanwhile(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		take func(t *testing.T, other *gitrepo.Repository, k revision.Key)
	}{
		{"draft", func(t *testing.T, other *gitrepo.Repository, k revision.Key) {
			d, err := other.CreateDraft(ctx, k, repository.CreateDraftOptions{Files: kptPkg(k.Package, nil)})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := d.Commit(ctx, revision.CommitOptions{}); err != nil {
				t.Fatal(err)
			}
		}},
		{"proposal", func(t *testing.T, other *gitrepo.Repository, k revision.Key) {
			propose(t, other, k.Package, k.Workspace)
		}},
		{"published", func(t *testing.T, other *gitrepo.Repository, k revision.Key) {
			propose(t, other, k.Package, k.Workspace)
			if _, err := approve(ctx, other, k); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := newBare(t)
			spec := benchSpec(dir)
			spec.Git.CreateBranch = true
			r := mustOpen(t, spec, nil)
			defer r.Close()
			// Published revisions of other workspaces, packed, as the
			// check passes over them.
			for _, ws := range []string{"a", "b"} {
				propose(t, r, "pkg", ws)
				if _, err := approve(ctx, r, revision.Key{Package: "pkg", Workspace: ws}); err != nil {
					t.Fatal(err)
				}
			}
			git(t, dir, "pack-refs", "--all")
			k := revision.Key{Package: "pkg", Workspace: "new"}
			d, err := r.CreateDraft(ctx, k, repository.CreateDraftOptions{Files: kptPkg("pkg", map[string]string{"mine.yaml": "mine: 1\n"})})
			if err != nil {
				t.Fatal(err)
			}
			other := mustOpen(t, spec, nil)
			defer other.Close()
			c.take(t, other, k)
			before := git(t, dir, "for-each-ref", "--format=%(refname) %(objectname)")
			if _, err := d.Commit(ctx, revision.CommitOptions{}); !errors.Is(err, repository.ErrAlreadyExists) {
				t.Fatalf("first commit of a draft whose workspace another took as a %s: %v, want ErrAlreadyExists", c.name, err)
			}
			if after := git(t, dir, "for-each-ref", "--format=%(refname) %(objectname)"); after != before {
				t.Fatalf("the failed commit changed the refs:\n%s\nthen\n%s", before, after)
			}
		})
	}
}
