package repository

import (
	"context"
	"iter"
	"strconv"

	"github.com/configasdata/cad/revision"
)

// EventType says what happened to a revision.
type EventType string

// Event types, as in Kubernetes watches.
const (
	Added    EventType = "ADDED"
	Modified EventType = "MODIFIED"
	Deleted  EventType = "DELETED"
)

// Event is one change seen by a watch. For Deleted, Revision is the last
// state seen.
type Event struct {
	Type     EventType
	Revision revision.PackageRevision
}

// Watcher is implemented by repositories that report changes.
type Watcher interface {
	// Watch calls handle for every change to a revision opts selects, in
	// order, from the moment it is called until ctx is done or handle
	// returns an error. It blocks; it returns nil when ctx is done and
	// handle's error otherwise.
	Watch(ctx context.Context, opts ListOptions, handle func(Event) error) error
}

// Watch calls r's Watch when r implements [Watcher] and returns an *Error
// wrapping ErrNotSupported otherwise.
func Watch(ctx context.Context, r Repository, opts ListOptions, handle func(Event) error) error {
	if w, ok := r.(Watcher); ok {
		return w.Watch(ctx, opts, handle)
	}
	return &Error{Op: "watch", Repository: r.Name(), Err: ErrNotSupported}
}

// Versioner is implemented by repositories that can cheaply report a token
// of their whole state: the token changes whenever any revision is
// created, changed or deleted, and stays the same otherwise.
type Versioner interface {
	Version(ctx context.Context) (string, error)
}

// Version calls r's Version when r implements [Versioner] and returns an
// *Error wrapping ErrNotSupported otherwise.
func Version(ctx context.Context, r Repository) (string, error) {
	if v, ok := r.(Versioner); ok {
		return v.Version(ctx)
	}
	return "", &Error{Op: "version", Repository: r.Name(), Err: ErrNotSupported}
}

// MetadataWriter is implemented by repositories that keep each revision's
// revision.Metadata (its labels, annotations, readiness gates and
// conditions) in the repository itself, so that it survives a restart and
// every process sees it. Such a repository returns the Metadata in every
// Meta it lists or gets, and folds it into Meta.Version, so that a
// lifecycle change given the Version a caller read (UpdateOptions.Version)
// fails with ErrConflict when the Metadata changed since: that is how
// approval checks readiness atomically with the publish.
type MetadataWriter interface {
	// SetMetadata replaces the Metadata of the revision key selects and
	// returns the revision as it now is; its Version changes unless md
	// equals what it had. Revisions of every lifecycle take labels and
	// annotations; readiness gates and conditions change only on Drafts
	// and Proposed revisions. Metadata stays through lifecycle changes and
	// is removed with the revision by Delete. Errors match ErrNotFound,
	// ErrInvalidInput for a bad key or metadata md.Validate refuses,
	// ErrImmutable when md changes the readiness gates or conditions of a
	// Published or DeletionProposed revision, ErrConflict when the
	// revision changed since opts.Version, ErrClosed, or wrap ctx's error.
	SetMetadata(ctx context.Context, key revision.Key, md revision.Metadata, opts UpdateOptions) (revision.PackageRevision, error)
}

// SetMetadata calls r's SetMetadata when r implements [MetadataWriter] and
// returns an *Error wrapping ErrNotSupported otherwise.
func SetMetadata(ctx context.Context, r Repository, key revision.Key, md revision.Metadata, opts UpdateOptions) (revision.PackageRevision, error) {
	if w, ok := r.(MetadataWriter); ok {
		return w.SetMetadata(ctx, key, md, opts)
	}
	return nil, &Error{Op: "set metadata", Repository: r.Name(), Key: key, Err: ErrNotSupported}
}

// Adopter is implemented by repositories that can register content already
// in the repository as a package revision without rewriting it: a revision
// as a pointer into the repository. The content need not have a Kptfile or
// any other marker; the registration is what makes it a package revision.
type Adopter interface {
	// Adopt registers the directory key.Package of the content opts.Ref
	// names as the revision key and returns it. With opts.Lifecycle
	// Published (the default) the revision is published with number
	// key.Revision (0 means one more than the package's highest); its
	// workspace is key.Workspace, by default "v<N>". With Draft it is a
	// new draft of workspace key.Workspace whose content is the
	// directory's, ready for editing.
	//
	// Errors match ErrInvalidInput for a bad key (an unsafe path, a
	// missing workspace for a draft) or lifecycle, ErrNotFound when opts.Ref
	// names nothing or holds no directory key.Package, ErrAlreadyExists
	// when the revision number or workspace is taken, ErrClosed, or wrap
	// ctx's error. On error nothing is written.
	Adopt(ctx context.Context, key revision.Key, opts AdoptOptions) (revision.PackageRevision, error)
}

// AdoptOptions configure Adopt.
type AdoptOptions struct {
	// Ref names the content, in the backend's terms: a commit id, tag or
	// branch in git; a tag or digest of the package's image repository in
	// OCI; the Meta.Commit of a revision in memrepo. Required.
	Ref string
	// Lifecycle is LifecyclePublished (the default when empty) or
	// LifecycleDraft.
	Lifecycle revision.Lifecycle
	// Message is the message a backend records with the registration
	// where it writes one; empty means a backend default.
	Message string
	// AuthorName and AuthorEmail identify who adopted; empty means the
	// repository's configured author.
	AuthorName, AuthorEmail string
}

// Normalize checks key and o for Adopt and returns them with the defaults
// applied: the lifecycle Published when empty, and for a published
// revision the workspace "v<N>" when key has none and a number. next
// returns one more than the package's highest revision number; it is
// called only when key.Revision is 0 and the lifecycle is Published. It
// returns an error matching ErrInvalidInput for an empty Ref, another
// lifecycle, a bad package path or workspace, a negative revision, or a
// draft with a revision number.
func (o AdoptOptions) Normalize(key revision.Key, next func() (int, error)) (revision.Key, AdoptOptions, error) {
	bad := func(format string, args ...any) (revision.Key, AdoptOptions, error) {
		return key, o, Errorf("adopt", key.Repository, key, ErrInvalidInput, format, args...)
	}
	if o.Ref == "" {
		return bad("adopt needs a ref")
	}
	if o.Lifecycle == "" {
		o.Lifecycle = revision.LifecyclePublished
	}
	if err := revision.ValidatePackagePath(key.Package); err != nil {
		return bad("%w", err)
	}
	switch o.Lifecycle {
	case revision.LifecycleDraft:
		if err := key.ValidateNew(); err != nil {
			return bad("%w", err)
		}
	case revision.LifecyclePublished:
		if key.Revision < 0 {
			return bad("a published revision has a number of 1 or more, not %d", key.Revision)
		}
		if key.Revision == 0 {
			n, err := next()
			if err != nil {
				return key, o, err
			}
			key.Revision = n
		}
		if key.Workspace == "" {
			key.Workspace = "v" + strconv.Itoa(key.Revision)
		}
		if err := revision.ValidateWorkspace(key.Workspace); err != nil {
			return bad("%w", err)
		}
	default:
		return bad("can adopt only as Published or Draft, not %s", o.Lifecycle)
	}
	return key, o, nil
}

// Adopt calls r's Adopt when r implements [Adopter] and returns an *Error
// wrapping ErrNotSupported otherwise.
func Adopt(ctx context.Context, r Repository, key revision.Key, opts AdoptOptions) (revision.PackageRevision, error) {
	if a, ok := r.(Adopter); ok {
		return a.Adopt(ctx, key, opts)
	}
	return nil, &Error{Op: "adopt", Repository: r.Name(), Key: key, Err: ErrNotSupported}
}

// Locator is implemented by repositories that can say what kind of store
// they are and where, so that what cad records about them (a clone's
// upstream lock) is something other tools can follow.
type Locator interface {
	// Location returns the repository's type (TypeGit, TypeOCI) and its
	// address without credentials: the git URL, the OCI image prefix
	// "host[:port][/path]".
	Location() (typ Type, address string)
}

// LocationOf returns r's Location when r implements [Locator], and two
// empty strings otherwise.
func LocationOf(r Repository) (typ Type, address string) {
	if l, ok := r.(Locator); ok {
		return l.Location()
	}
	return "", ""
}

// Specified is implemented by repositories opened from a [Spec]: Spec
// returns a copy of it, with any credentials a URL carried removed. It
// lets a caller that holds only the Repository (a fixed set such as
// engine.Repos) learn what it was registered with, such as
// Spec.Deployment.
type Specified interface {
	Spec() Spec
}

// RangeLister is implemented by repositories that can list revisions one
// at a time instead of all at once, so that a list of a large repository
// holds in memory what the caller keeps, not every revision it selects.
type RangeLister interface {
	// Range returns an iterator over the revisions opts selects: the same
	// revisions List returns, in an order the backend chooses (List's
	// order is not promised; collect and call SortRevisions for it). The
	// iterator yields each revision with a nil error. When the listing
	// fails it yields a nil revision and an error, once, and stops; the
	// errors are List's (an *Error matching ErrClosed or ErrUnavailable,
	// or wrapping ctx's error when ctx is done during the loop). When the
	// listing left out damaged revisions (see List) it yields every
	// revision it could read and then, last, a nil revision and the
	// *DamageError.
	// Breaking out of the loop stops the listing and releases what it
	// holds. The loop body may call the repository, including the
	// yielded revisions' Files: no lock is held while it runs. Each call
	// of the iterator lists anew.
	Range(ctx context.Context, opts ListOptions) iter.Seq2[revision.PackageRevision, error]
}

// Range returns r's Range when r implements [RangeLister], and otherwise
// an iterator over what r's List returns (holding the whole list, in
// List's order) that yields List's error, once, when it fails (after the
// revisions List returned beside a *DamageError).
func Range(ctx context.Context, r Repository, opts ListOptions) iter.Seq2[revision.PackageRevision, error] {
	if rl, ok := r.(RangeLister); ok {
		return rl.Range(ctx, opts)
	}
	return func(yield func(revision.PackageRevision, error) bool) {
		revs, err := r.List(ctx, opts)
		for _, pr := range revs {
			if !yield(pr, nil) {
				return
			}
		}
		if err != nil {
			yield(nil, err)
		}
	}
}

// Maintainer is implemented by repositories whose storage wants upkeep
// that a caller may schedule: gitrepo packs loose objects, small packs
// and loose refs, as git maintenance does. A backend that runs its own
// upkeep after writes (gitrepo does) still benefits from a scheduled run
// in quiet periods, when no write triggers one.
type Maintainer interface {
	// MaintainStorage runs one maintenance pass with the backend's
	// defaults and waits for it to end. It is safe beside reads and
	// writes of this and other processes. Errors: ErrClosed, ErrNotSupported
	// where the backend cannot maintain this repository, ctx's error, or
	// the storage's.
	MaintainStorage(ctx context.Context) error
}

// Maintain calls r's MaintainStorage when r implements [Maintainer] and
// returns an *Error wrapping ErrNotSupported otherwise.
func Maintain(ctx context.Context, r Repository) error {
	if m, ok := r.(Maintainer); ok {
		return m.MaintainStorage(ctx)
	}
	return &Error{Op: "maintain", Repository: r.Name(), Err: ErrNotSupported}
}

// Notifiable is implemented by repositories that other writers change and
// that can be told when they did (a git server's push webhook), so that
// callers may poll them rarely.
type Notifiable interface {
	// Changed tells the repository that it changed outside it: its next
	// read asks the source of truth (no cached state is trusted) and its
	// watches read it at once. It does no I/O itself and never fails.
	Changed()
}
