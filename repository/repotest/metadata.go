package repotest

import (
	"errors"
	"sync"
	"testing"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// testMetadata checks repository.MetadataWriter: labels and annotations
// kept beside a revision, in its Meta and Version, through its lifecycle,
// across handles, and gone with it. A backend without it must refuse
// metadata on commit rather than drop it.
func (s *suite) testMetadata(t *testing.T) {
	r := s.open(t)
	mw, ok := r.(repository.MetadataWriter)
	if !ok {
		d, err := r.CreateDraft(ctx(t), key("nometa", "ws"), repository.CreateDraftOptions{Files: pkgFiles("nometa", "1")})
		if err != nil {
			t.Fatal(err)
		}
		md := revision.Metadata{Labels: map[string]string{"a": "b"}}
		_, err = d.Commit(ctx(t), revision.CommitOptions{Metadata: &md})
		wantErr(t, err, repository.ErrNotSupported, "commit with metadata on a backend without MetadataWriter")
		if revs := list(t, r, repository.ListOptions{}); len(revs) != 0 {
			t.Fatalf("a refused commit left %v", keys(revs, true))
		}
		_, err = repository.SetMetadata(ctx(t), r, key("nometa", "ws"), md, repository.UpdateOptions{})
		wantErr(t, err, repository.ErrNotSupported, "SetMetadata on a backend without MetadataWriter")
		return
	}
	md := revision.Metadata{
		Labels:      map[string]string{"app": "web", "example.com/tier": "front"},
		Annotations: map[string]string{"note": "multi\nline", "example.com/owner": "team-a"},
	}
	checkMeta := func(t *testing.T, what string, got revision.Meta, want revision.Metadata) {
		t.Helper()
		if !got.Metadata.Equal(want) {
			t.Fatalf("%s: metadata %+v, want %+v", what, got.Metadata, want)
		}
	}
	get := func(t *testing.T, r repository.Repository, k revision.Key) revision.Meta {
		t.Helper()
		pr, err := r.Get(ctx(t), k)
		if err != nil {
			t.Fatalf("Get(%s): %v", k, err)
		}
		return pr.Meta()
	}

	t.Run("SetGetList", func(t *testing.T) {
		d := createDraft(t, r, "meta/a", "ws", "1")
		checkMeta(t, "new draft", d.Meta(), revision.Metadata{})
		pr, err := mw.SetMetadata(ctx(t), key("meta/a", "ws"), md, repository.UpdateOptions{Version: d.Meta().Version})
		if err != nil {
			t.Fatalf("SetMetadata: %v", err)
		}
		checkMeta(t, "SetMetadata result", pr.Meta(), md)
		if pr.Meta().Version == d.Meta().Version {
			t.Fatal("Version did not change with the metadata")
		}
		if got := files(t, pr); !got.Equal(pkgFiles("meta/a", "1")) {
			t.Fatal("SetMetadata changed the files")
		}
		checkMeta(t, "Get", get(t, r, key("meta/a", "ws")), md)
		for _, l := range list(t, r, repository.ListOptions{Package: "meta/a"}) {
			checkMeta(t, "List", l.Meta(), md)
		}
		again, err := mw.SetMetadata(ctx(t), key("meta/a", "ws"), md.Clone(), repository.UpdateOptions{})
		if err != nil || again.Meta().Version != pr.Meta().Version {
			t.Fatalf("setting the same metadata again: version %v, err %v; want unchanged version %s", again, err, pr.Meta().Version)
		}
		// The maps returned are the caller's own.
		got := get(t, r, key("meta/a", "ws"))
		got.Labels["app"] = "changed"
		checkMeta(t, "after the caller changed a returned map", get(t, r, key("meta/a", "ws")), md)
	})

	t.Run("Refusals", func(t *testing.T) {
		d := createDraft(t, r, "meta/b", "ws", "1")
		_, err := mw.SetMetadata(ctx(t), key("meta/b", "ws"), revision.Metadata{Labels: map[string]string{"bad key": "x"}}, repository.UpdateOptions{})
		wantErr(t, err, repository.ErrInvalidInput, "SetMetadata with a bad label key")
		_, err = mw.SetMetadata(ctx(t), key("meta/b", "nope"), md, repository.UpdateOptions{})
		wantErr(t, err, repository.ErrNotFound, "SetMetadata of a missing revision")
		_, err = mw.SetMetadata(ctx(t), revision.Key{Workspace: "ws"}, md, repository.UpdateOptions{})
		wantErr(t, err, repository.ErrInvalidInput, "SetMetadata with a bad key")
		if _, err := mw.SetMetadata(ctx(t), key("meta/b", "ws"), md, repository.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err = mw.SetMetadata(ctx(t), key("meta/b", "ws"), revision.Metadata{}, repository.UpdateOptions{Version: d.Meta().Version})
		wantErr(t, err, repository.ErrConflict, "SetMetadata with a stale version")
		checkMeta(t, "after refusals", get(t, r, key("meta/b", "ws")), md)
		// A lifecycle change guarded by the version from before the
		// metadata changed conflicts too.
		_, err = r.UpdateLifecycle(ctx(t), key("meta/b", "ws"), revision.LifecycleProposed, repository.UpdateOptions{Version: d.Meta().Version})
		wantErr(t, err, repository.ErrConflict, "UpdateLifecycle with a version from before a metadata change")
	})

	t.Run("Lifecycle", func(t *testing.T) {
		createDraft(t, r, "meta/c", "ws", "1")
		if _, err := mw.SetMetadata(ctx(t), key("meta/c", "ws"), md, repository.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		// Editing the draft keeps the metadata.
		dr, err := r.OpenDraft(ctx(t), key("meta/c", "ws"))
		if err != nil {
			t.Fatal(err)
		}
		if err := dr.SetFile("extra.yaml", []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n")); err != nil {
			t.Fatal(err)
		}
		edited, err := dr.Commit(ctx(t), revision.CommitOptions{})
		if err != nil {
			t.Fatal(err)
		}
		checkMeta(t, "edited draft", edited.Meta(), md)
		checkMeta(t, "proposed", move(t, r, key("meta/c", "ws"), revision.LifecycleProposed).Meta(), md)
		pub := move(t, r, key("meta/c", "ws"), revision.LifecyclePublished)
		checkMeta(t, "published", pub.Meta(), md)
		checkMeta(t, "Get published", get(t, r, pub.Meta().Key), md)
		// Published revisions take metadata too.
		md2 := revision.Metadata{Labels: map[string]string{"stage": "prod"}}
		if _, err := mw.SetMetadata(ctx(t), pub.Meta().Key, md2, repository.UpdateOptions{}); err != nil {
			t.Fatalf("SetMetadata on a published revision: %v", err)
		}
		checkMeta(t, "published after SetMetadata", get(t, r, pub.Meta().Key), md2)
		checkMeta(t, "deletion proposed", move(t, r, pub.Meta().Key, revision.LifecycleDeletionProposed).Meta(), md2)
		if err := r.Delete(ctx(t), pub.Meta().Key, repository.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		// A new revision with the same workspace starts without metadata.
		again := createDraft(t, r, "meta/c", "ws", "2")
		checkMeta(t, "recreated draft", again.Meta(), revision.Metadata{})
		checkMeta(t, "Get recreated draft", get(t, r, key("meta/c", "ws")), revision.Metadata{})
	})

	t.Run("WithCommit", func(t *testing.T) {
		d, err := r.CreateDraft(ctx(t), key("meta/d", "ws"), repository.CreateDraftOptions{Files: pkgFiles("meta/d", "1")})
		if err != nil {
			t.Fatal(err)
		}
		bad := revision.Metadata{Annotations: map[string]string{"": "x"}}
		_, err = d.Commit(ctx(t), revision.CommitOptions{Metadata: &bad})
		wantErr(t, err, repository.ErrInvalidInput, "commit with invalid metadata")
		if revs := list(t, r, repository.ListOptions{Package: "meta/d"}); len(revs) != 0 {
			t.Fatalf("a refused commit left %v", keys(revs, true))
		}
		d, err = r.CreateDraft(ctx(t), key("meta/d", "ws"), repository.CreateDraftOptions{Files: pkgFiles("meta/d", "1")})
		if err != nil {
			t.Fatal(err)
		}
		pr, err := d.Commit(ctx(t), revision.CommitOptions{Metadata: &md})
		if err != nil {
			t.Fatal(err)
		}
		checkMeta(t, "commit with metadata", pr.Meta(), md)
		checkMeta(t, "Get after commit with metadata", get(t, r, key("meta/d", "ws")), md)
		// An empty non-nil Metadata clears it.
		dr, err := r.OpenDraft(ctx(t), key("meta/d", "ws"))
		if err != nil {
			t.Fatal(err)
		}
		if err := dr.SetFile("x.yaml", []byte("a: 1\n")); err != nil {
			t.Fatal(err)
		}
		cleared, err := dr.Commit(ctx(t), revision.CommitOptions{Metadata: &revision.Metadata{}})
		if err != nil {
			t.Fatal(err)
		}
		checkMeta(t, "commit with empty metadata", cleared.Meta(), revision.Metadata{})
		checkMeta(t, "Get after a commit with empty metadata", get(t, r, key("meta/d", "ws")), revision.Metadata{})
	})

	if !s.h.NoPlaceholder {
		t.Run("Placeholder", func(t *testing.T) {
			publish(t, r, "meta/e", "v1", "1")
			ph := revision.Key{Package: "meta/e", Revision: revision.Placeholder}
			if _, err := mw.SetMetadata(ctx(t), ph, md, repository.UpdateOptions{}); err != nil {
				t.Fatalf("SetMetadata on the placeholder: %v", err)
			}
			publish(t, r, "meta/e", "v2", "2")
			checkMeta(t, "placeholder after a new approval", get(t, r, ph), md)
			checkMeta(t, "v2", get(t, r, key("meta/e", "v2")), revision.Metadata{})
		})
	}

	t.Run("RaceSetMetadata", func(t *testing.T) {
		d := createDraft(t, r, "meta/f", "ws", "1")
		n := s.h.Concurrency
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				m := revision.Metadata{Labels: map[string]string{"writer": string(rune('a' + i%26))}}
				_, errs[i] = mw.SetMetadata(ctx(t), key("meta/f", "ws"), m, repository.UpdateOptions{Version: d.Meta().Version})
			}()
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, repository.ErrConflict):
				t.Errorf("a losing SetMetadata returned %v, want ErrConflict", err)
			}
		}
		if won != 1 {
			t.Fatalf("%d of %d SetMetadata calls with the same version won, want exactly 1", won, n)
		}
		if got := get(t, r, key("meta/f", "ws")); len(got.Labels) != 1 {
			t.Fatalf("metadata after the race: %+v", got.Metadata)
		}
	})

	if s.h.Reopen != nil {
		t.Run("Reopen", func(t *testing.T) {
			createDraft(t, r, "meta/g", "ws", "1")
			if _, err := mw.SetMetadata(ctx(t), key("meta/g", "ws"), md, repository.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			other := s.h.Reopen(t, r)
			t.Cleanup(func() { _ = other.Close() })
			checkMeta(t, "another handle", get(t, other, key("meta/g", "ws")), md)
			pr, err := repository.SetMetadata(ctx(t), other, key("meta/g", "ws"), revision.Metadata{}, repository.UpdateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			checkMeta(t, "cleared from another handle", pr.Meta(), revision.Metadata{})
			checkMeta(t, "first handle after the other cleared it", get(t, r, key("meta/g", "ws")), revision.Metadata{})
		})
	}
}
