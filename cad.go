package cad

import (
	"context"
	"fmt"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// The types most programs touch, so that a program can start with one
// import. Each is an alias: a cad.Key is a revision.Key.
type (
	// Key identifies a package revision; see revision.Key.
	Key = revision.Key
	// Lifecycle is Draft, Proposed, Published or DeletionProposed.
	Lifecycle = revision.Lifecycle
	// PackageRevision is an immutable view of a package revision.
	PackageRevision = revision.PackageRevision
	// Draft is a mutable overlay over a draft revision.
	Draft = revision.Draft
	// Files is the content of a package, an fs.FS.
	Files = revision.Files
	// Kptfile is the kpt.dev/v1 Kptfile.
	Kptfile = revision.Kptfile
	// Metadata is a revision's labels and annotations, kept in the
	// repository beside it.
	Metadata = revision.Metadata
	// Repository is the contract every backend implements.
	Repository = repository.Repository
	// Spec describes a repository, in the shape of Porch's Repository.
	Spec = repository.Spec
)

// The lifecycle states.
const (
	LifecycleDraft            = revision.LifecycleDraft
	LifecycleProposed         = revision.LifecycleProposed
	LifecyclePublished        = revision.LifecyclePublished
	LifecycleDeletionProposed = revision.LifecycleDeletionProposed
)

// Opener opens a repository of one type from its spec. A backend package
// offers one (a closure over its options), for example:
//
//	cad.Backends{repository.TypeGit: func(ctx context.Context, s cad.Spec) (cad.Repository, error) {
//		return gitrepo.Open(ctx, s, &gitrepo.Options{Auth: auth})
//	}}
type Opener func(ctx context.Context, spec Spec) (Repository, error)

// Backends maps a repository type to the Opener for it.
type Backends map[repository.Type]Opener

// Open validates spec, fills in its defaults and opens it with the Opener
// that backends has for its type. It returns an error matching
// repository.ErrInvalidInput for a bad spec, repository.ErrNotSupported
// when backends has no Opener for the type, and the Opener's error
// otherwise.
func Open(ctx context.Context, spec Spec, backends Backends) (Repository, error) {
	spec = spec.Defaulted()
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	open, ok := backends[spec.Type]
	if !ok || open == nil {
		return nil, &repository.Error{Op: "open", Repository: spec.Name, Err: fmt.Errorf("%w: no backend for repository type %q", repository.ErrNotSupported, spec.Type)}
	}
	r, err := open(ctx, spec)
	if err != nil {
		// An Opener that returns a typed nil pointer with its error must
		// not hand the caller a non-nil Repository.
		return nil, err
	}
	return r, nil
}

// NewFiles returns package Files holding a copy of path → content; it is
// revision.NewFiles, with the same map type. It returns an error matching
// repository.ErrInvalidInput for an unsafe path.
func NewFiles(m map[string][]byte) (Files, error) { return revision.NewFiles(m) }

// FilesFromStrings returns package Files from path → text, as in Porch's
// PackageRevisionResources; it is revision.FilesFromStrings. It returns an
// error matching repository.ErrInvalidInput for an unsafe path.
func FilesFromStrings(m map[string]string) (Files, error) { return revision.FilesFromStrings(m) }
