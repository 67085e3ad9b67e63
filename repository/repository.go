package repository

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/configasdata/cad/revision"
)

// Repository is the contract every backend implements. Implementations are
// safe for concurrent use.
type Repository interface {
	// Name returns the repository's name, the Repository field of the keys
	// it returns.
	Name() string

	// List returns the revisions that opts selects, sorted by package path,
	// then by revision number, then by workspace. It reads only metadata;
	// files are read on demand.
	//
	// Damage stays where it is: what the backend cannot read (a damaged
	// ref or tag) is left out, and List returns the revisions it could
	// read together with a *DamageError (matching ErrDamaged) naming each
	// thing left out. A caller that acts on what is absent (deletes what
	// is no longer listed, creates what does not seem to exist) must not
	// do so on such a list, or only for what the damage cannot concern;
	// one that only shows revisions may show them and the damage. Any
	// other error comes with no revisions.
	List(ctx context.Context, opts ListOptions) ([]revision.PackageRevision, error)

	// Get returns the revision that key selects (see revision.Key). It
	// returns ErrNotFound when none matches and ErrInvalidInput for a key
	// that selects nothing in particular.
	Get(ctx context.Context, key revision.Key) (revision.PackageRevision, error)

	// CreateDraft starts a new draft revision with the package path and
	// workspace of key, whose content starts as opts.Files. Nothing is
	// written until the draft is committed. It returns ErrInvalidInput for
	// a bad key and ErrAlreadyExists when the package already has a
	// revision with that workspace; Commit checks the latter again.
	CreateDraft(ctx context.Context, key revision.Key, opts CreateDraftOptions) (revision.Draft, error)

	// OpenDraft opens an existing Draft revision for editing. It returns
	// ErrNotFound when there is none and ErrImmutable when the revision is
	// not in the Draft lifecycle.
	OpenDraft(ctx context.Context, key revision.Key) (revision.Draft, error)

	// UpdateLifecycle moves the revision key selects to lifecycle to and
	// returns it as it now is. Only revision.Transitions are allowed
	// (else ErrInvalidTransition). Approving (Proposed to Published)
	// assigns the next revision number of the package, one more than the
	// highest published one that exists (Published or DeletionProposed;
	// a deleted revision's number counts no more), and is one atomic
	// write; the returned key has that number. When the revision changed since opts.Version, it
	// returns ErrConflict.
	UpdateLifecycle(ctx context.Context, key revision.Key, to revision.Lifecycle, opts UpdateOptions) (revision.PackageRevision, error)

	// Delete removes the revision key selects. Drafts, proposals and
	// revisions proposed for deletion can be deleted; a Published revision
	// returns ErrImmutable. Deleting the placeholder revision removes the
	// package from the branch. When the revision changed since
	// opts.Version, it returns ErrConflict.
	Delete(ctx context.Context, key revision.Key, opts UpdateOptions) error

	// Close releases the repository's resources. Calls after Close return
	// ErrClosed.
	Close() error
}

// ListOptions selects revisions. The zero value selects every revision.
type ListOptions struct {
	// Package selects one package path exactly; empty selects all.
	Package string
	// PackagePrefix selects the package at this path and every package
	// nested under it ("a/b" selects "a/b" and "a/b/c", not "a/bc");
	// empty selects all. Backends read only those packages where they
	// can, so it is how to ask cheaply whether a path is free.
	PackagePrefix string
	// Workspace selects one workspace; empty selects all.
	Workspace string
	// Revision selects one revision number; 0 selects all (drafts and
	// proposals are selected with Lifecycles instead).
	Revision int
	// Lifecycles selects revisions in any of these states; empty selects
	// all.
	Lifecycles []revision.Lifecycle
}

// Matches reports whether a revision with meta m is selected by o.
func (o ListOptions) Matches(m revision.Meta) bool {
	if o.Package != "" && o.Package != m.Key.Package {
		return false
	}
	if o.PackagePrefix != "" && o.PackagePrefix != m.Key.Package && !strings.HasPrefix(m.Key.Package, o.PackagePrefix+"/") {
		return false
	}
	if o.Workspace != "" && o.Workspace != m.Key.Workspace {
		return false
	}
	if o.Revision != 0 && o.Revision != m.Key.Revision {
		return false
	}
	if len(o.Lifecycles) > 0 && !slices.Contains(o.Lifecycles, m.Lifecycle) {
		return false
	}
	return true
}

// CreateDraftOptions configure CreateDraft.
type CreateDraftOptions struct {
	// Files is the initial content of the draft; empty by default.
	Files revision.Files
}

// UpdateOptions configure UpdateLifecycle and Delete.
type UpdateOptions struct {
	// Version, when set, is the revision's Version the caller last read;
	// the change fails with ErrConflict if the revision changed since.
	Version string
	// AuthorName and AuthorEmail identify who approved or deleted; empty
	// means the repository's configured author.
	AuthorName, AuthorEmail string
}

// SortRevisions sorts revisions in List order: by package path, revision
// number and workspace. It reads each revision's Meta once.
func SortRevisions(revs []revision.PackageRevision) {
	type item struct {
		key revision.Key
		pr  revision.PackageRevision
	}
	items := make([]item, len(revs))
	for i, pr := range revs {
		items[i] = item{pr.Meta().Key, pr}
	}
	slices.SortStableFunc(items, func(a, b item) int {
		if c := strings.Compare(a.key.Package, b.key.Package); c != 0 {
			return c
		}
		if c := cmp.Compare(a.key.Revision, b.key.Revision); c != 0 {
			return c
		}
		return strings.Compare(a.key.Workspace, b.key.Workspace)
	})
	for i := range items {
		revs[i] = items[i].pr
	}
}
