package repotest

import (
	"errors"
	"testing"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// testBatch runs one batched sync, the same on every backend that
// batches: several drafts created, a proposal approved and a draft
// edited through a repository.Batch. Reads through the batch see all of
// it, reads outside (this handle and another) none of it until Commit,
// a failed write leaves the others, Commit makes all of it visible,
// and the batch and what was obtained through it refuse every use after
// Commit or Discard (ErrBatchDone), writing nothing. A Discard leaves
// nothing, and a Commit that lost a race to another writer writes none
// of the batch (ErrConflict). A backend that cannot batch (Harness.NoBatch)
// must refuse with ErrNotSupported.
func (s *suite) testBatch(t *testing.T) {
	r := s.open(t)
	c := ctx(t)
	if s.h.NoBatch {
		b, err := repository.BeginBatch(c, r)
		wantErr(t, err, repository.ErrNotSupported, "BeginBatch on a backend that cannot batch")
		if b != nil {
			t.Fatal("BeginBatch refused and returned a batch")
		}
		return
	}
	handles := []repository.Repository{r}
	if s.h.Reopen != nil {
		o := s.h.Reopen(t, r)
		t.Cleanup(func() { _ = o.Close() })
		handles = append(handles, o)
	}
	// lifecycle returns the lifecycle of k as rr sees it, "" when absent.
	lifecycle := func(t *testing.T, rr repository.Repository, k revision.Key) revision.Lifecycle {
		t.Helper()
		pr, err := rr.Get(c, k)
		if errors.Is(err, repository.ErrNotFound) {
			return ""
		}
		if err != nil {
			t.Fatalf("Get(%s): %v", k, err)
		}
		return pr.Meta().Lifecycle
	}
	marker := func(t *testing.T, rr repository.Repository, k revision.Key) string {
		t.Helper()
		pr, err := rr.Get(c, k)
		if err != nil {
			t.Fatalf("Get(%s): %v", k, err)
		}
		data, _ := files(t, pr).ReadFile("cm.yaml")
		return string(data)
	}
	drafts := []string{"sync/a", "sync/b", "sync/c"}

	t.Run("Commit", func(t *testing.T) {
		// Before the batch: a proposal to approve and a draft to edit.
		createDraft(t, r, "sync/up", "p", "1")
		move(t, r, key("sync/up", "p"), revision.LifecycleProposed)
		createDraft(t, r, "sync/edit", "e", "1")

		b, err := repository.BeginBatch(c, r)
		if err != nil {
			t.Fatalf("BeginBatch: %v", err)
		}
		defer b.Discard()
		if b.Name() != r.Name() {
			t.Fatalf("the batch is called %q, its repository %q", b.Name(), r.Name())
		}
		for _, p := range drafts {
			createDraft(t, b, p, "ws", "batched")
		}
		pub := move(t, b, key("sync/up", "p"), revision.LifecyclePublished)
		if pub.Meta().Key.Revision != 1 {
			t.Fatalf("approved in the batch as revision %d, want 1", pub.Meta().Key.Revision)
		}
		edit, err := b.OpenDraft(c, key("sync/edit", "e"))
		if err != nil {
			t.Fatalf("OpenDraft through the batch: %v", err)
		}
		edit.SetFiles(pkgFiles("sync/edit", "2"))
		if _, err := edit.Commit(c, revision.CommitOptions{Message: "edit"}); err != nil {
			t.Fatalf("a draft's Commit through the batch: %v", err)
		}
		// A failed write leaves nothing and the others stay.
		_, err = b.CreateDraft(c, key("sync/a", "ws"), repository.CreateDraftOptions{Files: pkgFiles("sync/a", "again")})
		wantErr(t, err, repository.ErrAlreadyExists, "a workspace taken in the batch")

		// The batch sees its writes.
		for _, p := range drafts {
			if got := lifecycle(t, b, key(p, "ws")); got != revision.LifecycleDraft {
				t.Fatalf("through the batch %s is %q, want Draft", p, got)
			}
			if got := marker(t, b, key(p, "ws")); got != pkgFileContent(t, p, "batched") {
				t.Fatalf("through the batch %s holds %q", p, got)
			}
		}
		if got := lifecycle(t, b, key("sync/up", "p")); got != revision.LifecyclePublished {
			t.Fatalf("through the batch the approved revision is %q", got)
		}
		if got := marker(t, b, key("sync/edit", "e")); got != pkgFileContent(t, "sync/edit", "2") {
			t.Fatalf("through the batch the edited draft holds %q", got)
		}
		revs, err := b.List(c, repository.ListOptions{PackagePrefix: "sync"})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(keys(revs, false)); n != 5 {
			t.Fatalf("the batch lists %d revisions under sync, want 5: %v", n, keys(revs, false))
		}
		// Nobody else does.
		for _, h := range handles {
			for _, p := range drafts {
				if got := lifecycle(t, h, key(p, "ws")); got != "" {
					t.Fatalf("before Commit, outside the batch, %s is %q", p, got)
				}
			}
			if got := lifecycle(t, h, key("sync/up", "p")); got != revision.LifecycleProposed {
				t.Fatalf("before Commit, outside the batch, the approved revision is %q", got)
			}
			if got := marker(t, h, key("sync/edit", "e")); got != pkgFileContent(t, "sync/edit", "1") {
				t.Fatalf("before Commit, outside the batch, the edited draft holds %q", got)
			}
		}
		// A draft opened through the batch, kept past its Commit.
		late, err := b.OpenDraft(c, key("sync/a", "ws"))
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Commit(c); err != nil {
			t.Fatalf("Commit: %v", err)
		}
		for _, h := range handles {
			for _, p := range drafts {
				if got := marker(t, h, key(p, "ws")); got != pkgFileContent(t, p, "batched") {
					t.Fatalf("after Commit %s holds %q", p, got)
				}
			}
			pr, err := h.Get(c, revision.Key{Package: "sync/up", Revision: 1})
			if err != nil || pr.Meta().Key.Workspace != "p" || pr.Meta().Lifecycle != revision.LifecyclePublished {
				t.Fatalf("after Commit revision 1 of sync/up: %v", err)
			}
			if got := marker(t, h, key("sync/edit", "e")); got != pkgFileContent(t, "sync/edit", "2") {
				t.Fatalf("after Commit the edited draft holds %q", got)
			}
		}

		// The batch is done: every use fails and writes nothing.
		wantDone := func(err error, what string) {
			t.Helper()
			wantErr(t, err, repository.ErrBatchDone, what+" after Commit")
		}
		_, err = b.List(c, repository.ListOptions{})
		wantDone(err, "List")
		_, err = b.Get(c, key("sync/a", "ws"))
		wantDone(err, "Get")
		_, err = b.CreateDraft(c, key("sync/late", "ws"), repository.CreateDraftOptions{Files: pkgFiles("sync/late", "1")})
		wantDone(err, "CreateDraft")
		_, err = b.OpenDraft(c, key("sync/a", "ws"))
		wantDone(err, "OpenDraft")
		_, err = b.UpdateLifecycle(c, key("sync/a", "ws"), revision.LifecycleProposed, repository.UpdateOptions{})
		wantDone(err, "UpdateLifecycle")
		wantDone(b.Delete(c, key("sync/b", "ws"), repository.UpdateOptions{}), "Delete")
		late.SetFiles(pkgFiles("sync/a", "late"))
		_, err = late.Commit(c, revision.CommitOptions{})
		wantDone(err, "a draft's Commit")
		wantDone(b.Commit(c), "Commit")
		for _, h := range handles {
			if got := marker(t, h, key("sync/a", "ws")); got != pkgFileContent(t, "sync/a", "batched") {
				t.Fatalf("a write after Commit changed sync/a: %q", got)
			}
			if got := lifecycle(t, h, key("sync/a", "ws")); got != revision.LifecycleDraft {
				t.Fatalf("a write after Commit moved sync/a to %q", got)
			}
			if got := lifecycle(t, h, key("sync/b", "ws")); got != revision.LifecycleDraft {
				t.Fatalf("a delete after Commit: sync/b is %q", got)
			}
		}
	})

	t.Run("Discard", func(t *testing.T) {
		createDraft(t, r, "discard/up", "p", "1")
		move(t, r, key("discard/up", "p"), revision.LifecycleProposed)
		b, err := repository.BeginBatch(c, r)
		if err != nil {
			t.Fatal(err)
		}
		createDraft(t, b, "discard/a", "ws", "1")
		move(t, b, key("discard/up", "p"), revision.LifecyclePublished)
		d, err := b.OpenDraft(c, key("discard/a", "ws"))
		if err != nil {
			t.Fatal(err)
		}
		b.Discard()
		b.Discard() // again: nothing
		_, err = d.Commit(c, revision.CommitOptions{})
		wantErr(t, err, repository.ErrBatchDone, "a draft's Commit after Discard")
		wantErr(t, b.Commit(c), repository.ErrBatchDone, "Commit after Discard")
		for _, h := range handles {
			if got := lifecycle(t, h, key("discard/a", "ws")); got != "" {
				t.Fatalf("a discarded draft is %q", got)
			}
			if got := lifecycle(t, h, key("discard/up", "p")); got != revision.LifecycleProposed {
				t.Fatalf("a discarded approval left the revision %q", got)
			}
		}
	})

	t.Run("Conflict", func(t *testing.T) {
		b, err := repository.BeginBatch(c, r)
		if err != nil {
			t.Fatal(err)
		}
		createDraft(t, b, "race/mine", "ws", "batch")
		createDraft(t, b, "race/both", "ws", "batch")
		// Another writer takes a workspace the batch took, first.
		createDraft(t, handles[len(handles)-1], "race/both", "ws", "other")
		wantErr(t, b.Commit(c), repository.ErrConflict, "Commit after another writer took the batch's workspace")
		for _, h := range handles {
			if got := lifecycle(t, h, key("race/mine", "ws")); got != "" {
				t.Fatalf("a batch whose Commit failed wrote race/mine (%q)", got)
			}
			if got := marker(t, h, key("race/both", "ws")); got != pkgFileContent(t, "race/both", "other") {
				t.Fatalf("race/both holds %q, want the other writer's", got)
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
