package repotest

import (
	"errors"
	"slices"
	"testing"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// bareFiles returns a package without a Kptfile or any other marker.
func bareFiles(marker string) revision.Files {
	return revision.MustFiles(map[string]string{
		"cm.yaml":       "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  marker: " + marker + "\n",
		"docs/notes.md": "# notes\n",
	})
}

// markedFiles returns a package whose only marker is cad's package file,
// recording an upstream lock and a readiness gate.
func markedFiles(marker string) revision.Files {
	return revision.MustFiles(map[string]string{
		revision.PackageFileName: "apiVersion: " + revision.PackageFileAPIVersion + "\nkind: " + revision.PackageFileKind +
			"\nmetadata:\n  name: marked\nspec:\n  upstreamLock:\n    type: git\n    git:\n      repo: up\n      directory: base\n      ref: base/v1\n      commit: c0ffee\n" +
			"  readinessGates:\n  - conditionType: Tested\n",
		"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  marker: " + marker + "\n",
	})
}

func commitFiles(t *testing.T, r repository.Repository, k revision.Key, f revision.Files) revision.PackageRevision {
	t.Helper()
	d, err := r.CreateDraft(ctx(t), k, repository.CreateDraftOptions{Files: f})
	if err != nil {
		t.Fatalf("CreateDraft(%s): %v", k, err)
	}
	pr, err := d.Commit(ctx(t), revision.CommitOptions{Message: "test draft"})
	if err != nil {
		t.Fatalf("Commit(%s): %v", k, err)
	}
	return pr
}

// testNoKptfile checks that packages without a Kptfile live through the
// whole lifecycle, with or without cad's package file, and that the
// package file's Info is read.
func (s *suite) testNoKptfile(t *testing.T) {
	r := s.open(t)
	c := ctx(t)
	commitFiles(t, r, key("bare", "ws1"), bareFiles("one"))
	got, err := r.Get(c, key("bare", "ws1"))
	if err != nil {
		t.Fatalf("Get of a draft without a Kptfile: %v", err)
	}
	if !files(t, got).Equal(bareFiles("one")) {
		t.Fatalf("draft without a Kptfile reads back %v", files(t, got).Paths())
	}
	move(t, r, key("bare", "ws1"), revision.LifecycleProposed)
	pub := move(t, r, key("bare", "ws1"), revision.LifecyclePublished)
	if pub.Meta().Key.Revision != 1 {
		t.Fatalf("approved as revision %d, want 1", pub.Meta().Key.Revision)
	}
	commitFiles(t, r, key("bare", "ws2"), bareFiles("two"))
	move(t, r, key("bare", "ws2"), revision.LifecycleProposed)
	if pr := move(t, r, key("bare", "ws2"), revision.LifecyclePublished); pr.Meta().Key.Revision != 2 {
		t.Fatalf("second approval got revision %d, want 2", pr.Meta().Key.Revision)
	}
	want := []revision.Key{{Package: "bare", Workspace: "ws1", Revision: 1}, {Package: "bare", Workspace: "ws2", Revision: 2}}
	// Without a marker a package is not found on the branch: no
	// placeholder, only the revisions the repository registered.
	if k := keys(list(t, r, repository.ListOptions{Package: "bare"}), true); !slices.Equal(k, want) {
		t.Fatalf("List(bare) = %v, want %v", k, want)
	}
	v1, err := r.Get(c, revision.Key{Package: "bare", Revision: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !files(t, v1).Equal(bareFiles("one")) {
		t.Fatalf("revision 1 reads %v", files(t, v1).Paths())
	}
	if info, err := v1.Info(c); err != nil || info.UpstreamLock != nil || len(info.ReadinessGates) != 0 {
		t.Fatalf("Info of a package with no marker: %+v, %v", info, err)
	}

	commitFiles(t, r, key("marked", "ws"), markedFiles("m"))
	move(t, r, key("marked", "ws"), revision.LifecycleProposed)
	mp := move(t, r, key("marked", "ws"), revision.LifecyclePublished)
	info, err := mp.Info(c)
	if err != nil || info.UpstreamLock == nil || info.UpstreamLock.Git == nil || info.UpstreamLock.Git.Commit != "c0ffee" ||
		len(info.ReadinessGates) != 1 || info.ReadinessGates[0].ConditionType != "Tested" {
		t.Fatalf("Info from the package file: %+v, %v", info, err)
	}
	if !s.h.NoPlaceholder {
		// The package file marks the package on the branch, as a Kptfile does.
		ph, err := r.Get(c, revision.Key{Package: "marked", Revision: revision.Placeholder})
		if err != nil {
			t.Fatalf("placeholder of a package marked by its package file: %v", err)
		}
		if !files(t, ph).Equal(markedFiles("m")) {
			t.Fatalf("placeholder reads %v", files(t, ph).Paths())
		}
	}
	if s.h.Reopen != nil {
		r2 := s.h.Reopen(t, r)
		t.Cleanup(func() { _ = r2.Close() })
		if k := keys(list(t, r2, repository.ListOptions{Package: "bare"}), false); !slices.Equal(k, want) {
			t.Fatalf("a second handle lists %v, want %v", k, want)
		}
	}
}

// testAdopt checks Adopter: a revision registered at existing content,
// published at a number or as a draft, and bad input that writes nothing.
func (s *suite) testAdopt(t *testing.T) {
	r := s.open(t)
	c := ctx(t)
	if _, ok := r.(repository.Adopter); !ok {
		_, err := repository.Adopt(c, r, key("app", "ws"), repository.AdoptOptions{Ref: "x"})
		if !errors.Is(err, repository.ErrNotSupported) {
			t.Fatalf("repository.Adopt on a backend without Adopter: %v, want ErrNotSupported", err)
		}
		t.Skip("backend does not implement repository.Adopter")
	}
	commitFiles(t, r, key("app", "ws1"), bareFiles("one"))
	move(t, r, key("app", "ws1"), revision.LifecycleProposed)
	v1 := move(t, r, key("app", "ws1"), revision.LifecyclePublished)
	ref := v1.Meta().Commit
	if ref == "" {
		t.Fatal("a published revision has no Meta.Commit to adopt")
	}

	pr, err := repository.Adopt(c, r, revision.Key{Package: "app", Revision: 5}, repository.AdoptOptions{Ref: ref})
	if err != nil {
		t.Fatalf("Adopt as revision 5: %v", err)
	}
	if m := pr.Meta(); m.Key.Revision != 5 || m.Key.Workspace != "v5" || m.Lifecycle != revision.LifecyclePublished {
		t.Fatalf("adopted %s %s", m.Key, m.Lifecycle)
	}
	got, err := r.Get(c, revision.Key{Package: "app", Revision: 5})
	if err != nil {
		t.Fatalf("Get of the adopted revision: %v", err)
	}
	if !files(t, got).Equal(bareFiles("one")) {
		t.Fatalf("adopted revision reads %v", files(t, got).Paths())
	}

	d, err := repository.Adopt(c, r, key("app", "adopted"), repository.AdoptOptions{Ref: ref, Lifecycle: revision.LifecycleDraft})
	if err != nil {
		t.Fatalf("Adopt as a draft: %v", err)
	}
	if m := d.Meta(); m.Lifecycle != revision.LifecycleDraft || m.Key.Revision != 0 {
		t.Fatalf("adopted draft %s %s", m.Key, m.Lifecycle)
	}
	dr, err := r.OpenDraft(c, key("app", "adopted"))
	if err != nil {
		t.Fatalf("OpenDraft of the adopted draft: %v", err)
	}
	if !dr.Files().Equal(bareFiles("one")) {
		t.Fatalf("adopted draft opens with %v", dr.Files().Paths())
	}
	if err := dr.SetFile("extra.yaml", []byte("a: 1\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := dr.Commit(c, revision.CommitOptions{}); err != nil {
		t.Fatalf("Commit of the adopted draft: %v", err)
	}
	move(t, r, key("app", "adopted"), revision.LifecycleProposed)
	if pr := move(t, r, key("app", "adopted"), revision.LifecyclePublished); pr.Meta().Key.Revision != 6 {
		t.Fatalf("approving the adopted draft gave revision %d, want 6", pr.Meta().Key.Revision)
	}
	next, err := repository.Adopt(c, r, revision.Key{Package: "app"}, repository.AdoptOptions{Ref: ref})
	if err != nil || next.Meta().Key.Revision != 7 || next.Meta().Key.Workspace != "v7" {
		t.Fatalf("Adopt with no number: %v %v", next, err)
	}

	before := keys(list(t, r, repository.ListOptions{}), true)
	var version string
	if _, ok := r.(repository.Versioner); ok {
		version, _ = repository.Version(c, r)
	}
	for _, bad := range []struct {
		what string
		key  revision.Key
		opts repository.AdoptOptions
		want error
	}{
		{"no ref", revision.Key{Package: "app", Revision: 9}, repository.AdoptOptions{}, repository.ErrInvalidInput},
		{"no such ref", revision.Key{Package: "app", Revision: 9}, repository.AdoptOptions{Ref: "no-such-ref"}, repository.ErrNotFound},
		{"number taken", revision.Key{Package: "app", Revision: 1}, repository.AdoptOptions{Ref: ref}, repository.ErrAlreadyExists},
		{"workspace taken", key("app", "adopted"), repository.AdoptOptions{Ref: ref, Lifecycle: revision.LifecycleDraft}, repository.ErrAlreadyExists},
		{"unsafe path", revision.Key{Package: "a/../b", Revision: 9}, repository.AdoptOptions{Ref: ref}, repository.ErrInvalidInput},
		{"bad lifecycle", key("app", "p"), repository.AdoptOptions{Ref: ref, Lifecycle: revision.LifecycleProposed}, repository.ErrInvalidInput},
		{"draft without workspace", revision.Key{Package: "app"}, repository.AdoptOptions{Ref: ref, Lifecycle: revision.LifecycleDraft}, repository.ErrInvalidInput},
		{"negative revision", revision.Key{Package: "app", Revision: -1}, repository.AdoptOptions{Ref: ref}, repository.ErrInvalidInput},
		{"no such directory", revision.Key{Package: "other", Revision: 1}, repository.AdoptOptions{Ref: ref}, repository.ErrNotFound},
	} {
		_, err := repository.Adopt(c, r, bad.key, bad.opts)
		wantErr(t, err, bad.want, "Adopt with "+bad.what)
	}
	if after := keys(list(t, r, repository.ListOptions{}), true); !slices.Equal(after, before) {
		t.Fatalf("bad adoptions changed the revisions: %v, was %v", after, before)
	}
	if version != "" {
		if v, _ := repository.Version(c, r); v != version {
			t.Fatal("bad adoptions changed the repository's Version")
		}
	}
}
