package gitrepo

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/storage/memory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/configasdata/cad/internal/porchtask"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// metaBefore is how a revision's Meta was built before revMeta: the
// reference the compact form must reproduce field for field.
func metaBefore(x *rev) revision.Meta {
	h := x.commit.Hash
	if x.key.IsPlaceholder() {
		h = x.pkgTree
	}
	version := h.String() + "." + strings.ToLower(string(x.lifecycle))
	if mh := x.md.Hash(); mh != "" {
		version += "." + mh
	}
	commit := version[:40]
	if x.key.IsPlaceholder() {
		commit = x.commit.Hash.String()
	}
	m := revision.Meta{Key: x.key, Lifecycle: x.lifecycle, Version: version, Commit: commit, Metadata: x.md.Clone(),
		Creation: porchtask.Decode(x.creationTask())}
	if x.lifecycle.IsPublished() && !x.key.IsPlaceholder() {
		m.PublishedBy = x.commit.Author.Email
		if m.PublishedBy == "" {
			m.PublishedBy = x.commit.Author.Name
		}
		m.PublishedAt = x.commit.Author.When
	}
	if x.key.IsPlaceholder() && x.published != nil {
		m.PublishedBy = x.published.Email
		if m.PublishedBy == "" {
			m.PublishedBy = x.published.Name
		}
		m.PublishedAt = x.published.When
	}
	return m
}

// TestMetaSameEverywhere checks that every field of every revision's Meta
// is the same from List, Range and Get, equal from call to call, and
// equal to what the full form built before revMeta: drafts, proposals,
// published and deletion-proposed revisions and placeholders, with and
// without metadata, a creation record and a publisher without an email.
func TestMetaSameEverywhere(t *testing.T) {
	ctx := context.Background()
	opens := map[string]func(t *testing.T) *Repository{
		"memory": func(t *testing.T) *Repository {
			r, err := Open(ctx, repository.Spec{Name: "meta", Type: repository.TypeGit, Git: &repository.GitSpec{Repo: MemoryURL, CreateBranch: true, Directory: "pkgs"}}, &Options{Storage: memory.NewStorage()})
			require.NoError(t, err)
			return r
		},
		"bare": func(t *testing.T) *Repository {
			dir := filepath.Join(t.TempDir(), "repo.git")
			out, err := exec.Command("git", "init", "--quiet", "--bare", "-b", "main", dir).CombinedOutput()
			require.NoError(t, err, string(out))
			r, err := Open(ctx, repository.Spec{Name: "meta", Type: repository.TypeGit, Git: &repository.GitSpec{Repo: dir, CreateBranch: true, Directory: "pkgs"}}, nil)
			require.NoError(t, err)
			return r
		},
	}
	for name, open := range opens {
		t.Run(name, func(t *testing.T) {
			r := open(t)
			defer r.Close()
			metaFixture(t, r)

			revs, err := r.List(ctx, repository.ListOptions{})
			require.NoError(t, err)
			ranged := map[revision.Key]revision.Meta{}
			for pr, err := range r.Range(ctx, repository.ListOptions{}) {
				require.NoError(t, err)
				ranged[pr.Meta().Key] = pr.Meta()
			}
			assert.Len(t, ranged, len(revs))
			seen := map[revision.Lifecycle]int{}
			var withMetadata, withCreation, placeholders, byName int
			for _, pr := range revs {
				m := pr.Meta()
				assert.Equal(t, m, pr.Meta(), "Meta of %s from one call to the next", m.Key)
				assert.Equal(t, m, ranged[m.Key], "Meta of %s from List and Range", m.Key)
				got, err := r.Get(ctx, m.Key)
				if assert.NoError(t, err, "Get(%s)", m.Key) {
					assert.Equal(t, m, got.Meta(), "Meta of %s from List and Get", m.Key)
				}
				var x *rev
				require.NoError(t, r.read(ctx, func(v *view) error {
					var err error
					x, err = r.resolve(v, m.Key)
					return err
				}))
				assert.Equal(t, metaBefore(x), m, "Meta of %s as it was built before", m.Key)
				assert.Equal(t, metaBefore(x), x.meta(), "rev.meta of %s", m.Key)

				seen[m.Lifecycle]++
				if !m.Metadata.IsZero() {
					withMetadata++
				}
				if m.Creation != nil {
					withCreation++
				}
				if m.Key.IsPlaceholder() {
					placeholders++
				}
				if m.PublishedBy == "Approver Without Email" {
					byName++
				}
			}
			// The fixture has every case the comparison is meant to cover.
			for _, lc := range []revision.Lifecycle{revision.LifecycleDraft, revision.LifecycleProposed, revision.LifecyclePublished, revision.LifecycleDeletionProposed} {
				assert.NotZero(t, seen[lc], "no %s revision listed", lc)
			}
			assert.NotZero(t, withMetadata, "no revision with metadata")
			assert.NotZero(t, withCreation, "no revision with a creation record")
			assert.GreaterOrEqual(t, placeholders, 2, "placeholders")
			assert.GreaterOrEqual(t, byName, 2, "revisions published by an author without an email (the revision and its placeholder)")
		})
	}
}

// metaFixture writes revisions of every lifecycle to r.
func metaFixture(t testing.TB, r *Repository) {
	ctx := context.Background()
	kpt := func(name string) revision.Files {
		return revision.MustFiles(map[string]string{"Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: " + name + "\n"})
	}
	create := func(pkg, ws string, opts revision.CommitOptions) revision.Key {
		t.Helper()
		key := revision.Key{Package: pkg, Workspace: ws}
		d, err := r.CreateDraft(ctx, key, repository.CreateDraftOptions{Files: kpt(pkg)})
		require.NoError(t, err)
		_, err = d.Commit(ctx, opts)
		require.NoError(t, err)
		return key
	}
	to := func(key revision.Key, lc revision.Lifecycle, opts repository.UpdateOptions) revision.PackageRevision {
		t.Helper()
		pr, err := r.UpdateLifecycle(ctx, key, lc, opts)
		require.NoError(t, err)
		return pr
	}
	md := func(label string) *revision.Metadata {
		return &revision.Metadata{Labels: map[string]string{"app": label}, Annotations: map[string]string{"owner": "team-" + label}}
	}
	initial := &revision.Creation{Op: revision.CreatedByInit, Description: "a package", Keywords: []string{"x", "y"}}

	// A draft with metadata and a creation record, and a proposal.
	create("net/a", "d1", revision.CommitOptions{Metadata: md("a"), Creation: initial})
	to(create("net/a", "p1", revision.CommitOptions{}), revision.LifecycleProposed, repository.UpdateOptions{})
	// Published, with metadata, by an author with an email.
	b := create("net/b", "v1", revision.CommitOptions{Metadata: md("b"), Creation: initial})
	to(b, revision.LifecycleProposed, repository.UpdateOptions{})
	to(b, revision.LifecyclePublished, repository.UpdateOptions{AuthorName: "Approver", AuthorEmail: "approver@example.com"})
	// Published by an author without an email, then a second revision.
	c := create("c", "w1", revision.CommitOptions{})
	to(c, revision.LifecycleProposed, repository.UpdateOptions{})
	to(c, revision.LifecyclePublished, repository.UpdateOptions{AuthorName: "Approver Without Email"})
	// Deletion proposed.
	e := create("e", "w1", revision.CommitOptions{Metadata: md("e")})
	to(e, revision.LifecycleProposed, repository.UpdateOptions{})
	to(e, revision.LifecyclePublished, repository.UpdateOptions{})
	to(revision.Key{Package: "e", Revision: 1}, revision.LifecycleDeletionProposed, repository.UpdateOptions{})
	// Metadata set afterwards on a published revision.
	_, err := r.SetMetadata(ctx, revision.Key{Package: "c", Revision: 1}, *md("c"), repository.UpdateOptions{})
	require.NoError(t, err)
}

// BenchmarkMeta measures building a listed revision's Meta, which the
// server calls for every revision it lists: a published revision with a
// publisher, and one with metadata.
func BenchmarkMeta(b *testing.B) {
	ctx := context.Background()
	r, err := Open(ctx, repository.Spec{Name: "meta", Type: repository.TypeGit, Git: &repository.GitSpec{Repo: MemoryURL, CreateBranch: true, Directory: "pkgs"}}, &Options{Storage: memory.NewStorage()})
	require.NoError(b, err)
	defer r.Close()
	metaFixture(b, r)
	for _, key := range []revision.Key{{Package: "net/b", Revision: 1}, {Package: "c", Revision: 1}} {
		pr, err := r.Get(ctx, key)
		require.NoError(b, err)
		b.Run(key.Package, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = pr.Meta()
			}
		})
	}
}
