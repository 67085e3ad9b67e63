package repotest

import (
	"testing"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// testCreation checks revision.CommitOptions.Creation: a backend returns
// it in Meta.Creation and keeps it through later commits, the proposal and
// the approval; one whose harness says NoCreation returns nil everywhere.
func (s *suite) testCreation(t *testing.T) {
	r := s.open(t)
	src := revision.Key{Repository: "blueprints", Package: "base/ns", Workspace: "v1"}
	for _, c := range []*revision.Creation{
		{Op: revision.CreatedByInit, Description: "a package", Keywords: []string{"a", "b"}, Site: "https://example.com"},
		{Op: revision.CreatedByClone, Source: &src, Strategy: revision.ResourceMerge},
		{Op: revision.CreatedByClone, Git: &revision.GitUpstreamRef{Repo: "https://example.com/repo.git", Ref: "v2", Directory: "base/ns"}},
		{Op: revision.CreatedByCopy, Source: &revision.Key{Repository: "test", Package: "created/3", Workspace: "v0"}},
		{Op: revision.CreatedByUpgrade, OldUpstream: &src, NewUpstream: &revision.Key{Repository: "blueprints", Package: "base/ns", Workspace: "v2"},
			Local: &revision.Key{Repository: "test", Package: "created/4", Workspace: "v1"}, Strategy: revision.FastForward},
	} {
		pkg := "created/" + string(rune('0'+len(list(t, r, repository.ListOptions{PackagePrefix: "created"}))))
		d, err := r.CreateDraft(ctx(t), key(pkg, "ws"), repository.CreateDraftOptions{Files: pkgFiles(pkg, "1")})
		if err != nil {
			t.Fatal(err)
		}
		pr, err := d.Commit(ctx(t), revision.CommitOptions{Creation: c})
		if err != nil {
			t.Fatal(err)
		}
		got := pr.Meta().Creation
		if s.h.NoCreation {
			if get := getMeta(t, r, key(pkg, "ws")); got != nil || get.Creation != nil {
				t.Fatalf("%s: the harness says NoCreation, but the commit returned %+v and Get %+v", c.Op, got, get.Creation)
			}
			continue
		}
		if got == nil {
			t.Fatalf("%s: the commit returned no creation (a backend that records none sets Harness.NoCreation)", c.Op)
		}
		check := func(what string, m revision.Meta) {
			t.Helper()
			if !m.Creation.Equal(c) {
				t.Fatalf("%s: %s has creation %+v, want %+v", c.Op, what, m.Creation, c)
			}
		}
		check("the commit's result", pr.Meta())
		check("Get", getMeta(t, r, key(pkg, "ws")))
		dr, err := r.OpenDraft(ctx(t), key(pkg, "ws"))
		if err != nil {
			t.Fatal(err)
		}
		if err := dr.SetFile("more.yaml", []byte("a: 1\n")); err != nil {
			t.Fatal(err)
		}
		edited, err := dr.Commit(ctx(t), revision.CommitOptions{})
		if err != nil {
			t.Fatal(err)
		}
		check("a later commit", edited.Meta())
		check("the proposal", move(t, r, key(pkg, "ws"), revision.LifecycleProposed).Meta())
		pub := move(t, r, key(pkg, "ws"), revision.LifecyclePublished)
		check("the approval", pub.Meta())
		check("Get of the published revision", getMeta(t, r, pub.Meta().Key))
	}
}

// testPlaceholderPublished checks that the placeholder revision is
// published by and at what the latest approval of its package was, as
// Porch reads it from the latest commit naming the package.
func (s *suite) testPlaceholderPublished(t *testing.T) {
	if s.h.NoPlaceholder {
		t.Skip("the backend has no placeholder revisions")
	}
	r := s.open(t)
	ph := revision.Key{Package: "pub/a", Revision: revision.Placeholder}
	approve := func(pkg, ws, email string) revision.Meta {
		t.Helper()
		createDraft(t, r, pkg, ws, ws)
		move(t, r, key(pkg, ws), revision.LifecycleProposed)
		pr, err := r.UpdateLifecycle(ctx(t), key(pkg, ws), revision.LifecyclePublished, repository.UpdateOptions{AuthorName: "Approver", AuthorEmail: email})
		if err != nil {
			t.Fatal(err)
		}
		return pr.Meta()
	}
	same := func(what string, got, want revision.Meta) {
		t.Helper()
		if got.PublishedBy != want.PublishedBy || got.PublishedAt.Unix() != want.PublishedAt.Unix() || want.PublishedBy == "" {
			t.Fatalf("%s: placeholder published by %q at %v, want %q at %v", what, got.PublishedBy, got.PublishedAt, want.PublishedBy, want.PublishedAt)
		}
	}
	v1 := approve("pub/a", "v1", "first@example.com")
	same("after v1", getMeta(t, r, ph), v1)
	// Another package's approval does not change it.
	b1 := approve("pub/b", "v1", "other@example.com")
	same("after another package's approval", getMeta(t, r, ph), v1)
	v2 := approve("pub/a", "v2", "second@example.com")
	same("after v2", getMeta(t, r, ph), v2)
	want := map[string]revision.Meta{"pub/a": v2, "pub/b": b1}
	for _, opts := range []repository.ListOptions{{Package: "pub/a"}, {PackagePrefix: "pub"}, {}} {
		for _, pr := range list(t, r, opts) {
			if m := pr.Meta(); m.Key.IsPlaceholder() {
				if w, ok := want[m.Key.Package]; ok {
					same("listed "+m.Key.Package, m, w)
				}
			}
		}
	}
}

func getMeta(t *testing.T, r repository.Repository, k revision.Key) revision.Meta {
	t.Helper()
	pr, err := r.Get(ctx(t), k)
	if err != nil {
		t.Fatalf("Get(%s): %v", k, err)
	}
	return pr.Meta()
}
