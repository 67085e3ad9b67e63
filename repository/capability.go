package repository

import (
	"context"

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
	return &Error{Op: "watch", Repo: r.Name(), Err: ErrNotSupported}
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
	return "", &Error{Op: "version", Repo: r.Name(), Err: ErrNotSupported}
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
	return nil, &Error{Op: "set metadata", Repo: r.Name(), Key: key, Err: ErrNotSupported}
}

// Specified is implemented by repositories opened from a [Spec]: Spec
// returns a copy of it, with any credentials a URL carried removed. It
// lets a caller that holds only the Repository (a fixed set such as
// engine.Repos) learn what it was registered with, such as
// Spec.Deployment.
type Specified interface {
	Spec() Spec
}
