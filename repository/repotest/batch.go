package repotest

import (
	"context"
	"errors"
	"testing"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// testBatch checks repository.BeginBatch: for a backend that batches
// (repository.Batcher), that a batch's writes are seen only with its
// context until Commit, then by every handle, that a failed write leaves
// the others, and that Discard writes nothing; for the others, that the
// fallback writes at once.
func (s *suite) testBatch(t *testing.T) {
	r := s.open(t)
	c := ctx(t)
	batched := false
	if b, ok := r.(repository.Batcher); ok {
		_, bt, err := b.BeginBatch(c)
		switch {
		case err == nil:
			batched = true
			bt.Discard()
		case !errors.Is(err, repository.ErrNotSupported):
			t.Fatalf("BeginBatch: %v", err)
		}
	}
	write := func(t *testing.T, c context.Context, pkg, marker string) error {
		t.Helper()
		d, err := r.CreateDraft(c, key(pkg, "ws"), repository.CreateDraftOptions{Files: pkgFiles(pkg, marker)})
		if err != nil {
			return err
		}
		_, err = d.Commit(c, revision.CommitOptions{})
		return err
	}
	seen := func(t *testing.T, c context.Context, r repository.Repository, pkg string) bool {
		t.Helper()
		revs, err := r.List(c, repository.ListOptions{Package: pkg})
		if err != nil {
			t.Fatalf("List(%s): %v", pkg, err)
		}
		return len(revs) > 0
	}
	handles := func(t *testing.T) []repository.Repository {
		out := []repository.Repository{r}
		if s.h.Reopen != nil {
			o := s.h.Reopen(t, r)
			t.Cleanup(func() { _ = o.Close() })
			out = append(out, o)
		}
		return out
	}

	t.Run("Commit", func(t *testing.T) {
		bctx, b, err := repository.BeginBatch(c, r)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"batch/a", "batch/b"} {
			if err := write(t, bctx, p, "1"); err != nil {
				t.Fatalf("write %s in the batch: %v", p, err)
			}
		}
		// A failed write leaves nothing and the others stay.
		err = write(t, bctx, "batch/a", "2")
		wantErr(t, err, repository.ErrAlreadyExists, "a workspace taken in the batch")
		if !seen(t, bctx, r, "batch/b") {
			t.Fatal("the batch does not see its own write")
		}
		for _, h := range handles(t) {
			if got := seen(t, c, h, "batch/a"); got == batched {
				t.Fatalf("before Commit: seen %v, want %v (batched %v)", got, !batched, batched)
			}
		}
		if err := b.Commit(c); err != nil {
			t.Fatalf("Commit: %v", err)
		}
		for _, h := range handles(t) {
			for _, p := range []string{"batch/a", "batch/b"} {
				if !seen(t, c, h, p) {
					t.Fatalf("after Commit: %s not seen", p)
				}
			}
			pr, err := h.Get(c, key("batch/a", "ws"))
			if err != nil {
				t.Fatal(err)
			}
			files, err := pr.Files(c)
			if err != nil {
				t.Fatal(err)
			}
			if data, _ := files.ReadFile("cm.yaml"); string(data) != pkgFileContent(t, "batch/a", "1") {
				t.Fatalf("batch/a holds %q", data)
			}
		}
	})
	t.Run("Discard", func(t *testing.T) {
		if !batched {
			t.Skip("the fallback writes at once: nothing to discard")
		}
		bctx, b, err := repository.BeginBatch(c, r)
		if err != nil {
			t.Fatal(err)
		}
		if err := write(t, bctx, "batch/discarded", "1"); err != nil {
			t.Fatal(err)
		}
		b.Discard()
		if err := b.Commit(c); err != nil {
			t.Fatalf("Commit after Discard: %v", err)
		}
		for _, h := range handles(t) {
			if seen(t, c, h, "batch/discarded") {
				t.Fatal("a discarded write is seen")
			}
		}
	})
}

// pkgFileContent returns the cm.yaml of pkgFiles(pkg, marker).
func pkgFileContent(t *testing.T, pkg, marker string) string {
	t.Helper()
	data, ok := pkgFiles(pkg, marker).Get("cm.yaml")
	if !ok {
		t.Fatal("pkgFiles has no cm.yaml")
	}
	return string(data)
}
