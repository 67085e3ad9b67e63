package revision

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Meta is what is known about a package revision without reading its
// files: cheap to list.
type Meta struct {
	Key       Key
	Lifecycle Lifecycle
	// Version is an opaque token that changes whenever the revision's
	// content, lifecycle or Metadata changes: built from the commit id in
	// git, the manifest digest in OCI. Two reads with the same Version saw
	// the same revision.
	Version string
	// Commit is the id of the immutable content the revision points at,
	// where the backend has one: the git commit id, the OCI manifest
	// digest. Unlike Version it does not change with the lifecycle. It is
	// what an upstream lock records ("" when the backend has none).
	Commit string
	// PublishedBy and PublishedAt are set for published revisions where
	// the backend records them (the approving commit's author in git).
	PublishedBy string
	PublishedAt time.Time
	// Metadata is the revision's labels and annotations, where the backend
	// keeps them (see repository.MetadataWriter); zero otherwise.
	Metadata
	// Creation is how the revision was created, where the backend records
	// it (see CommitOptions.Creation); nil otherwise.
	Creation *Creation
}

// Info is the part of a revision's metadata that lives in its content: the
// upstream it was cloned from, the upstream lock, its readiness gates and
// conditions. For a kpt package it comes from the root Kptfile; for a
// package without one, from its [PackageFile]; a package with neither has a
// zero Info.
type Info struct {
	Upstream       *Upstream
	UpstreamLock   *UpstreamLock
	ReadinessGates []ReadinessGate
	Conditions     []Condition
}

// InfoFromFiles returns the Info recorded in files' root Kptfile; without
// a Kptfile, in its root [PackageFileName]; with neither, a zero Info. The
// Kptfile wins whole: a PackageFile beside it is not read. It returns an
// error matching [ErrInvalid] when the file it reads does not parse.
func InfoFromFiles(files Files) (Info, error) {
	data, ok := files.Get(KptfileName)
	if !ok {
		if data, ok = files.Get(PackageFileName); !ok {
			return Info{}, nil
		}
		p, err := ParsePackageFile(data)
		if err != nil {
			return Info{}, err
		}
		return p.PackageRevisionInfo(), nil
	}
	kf, err := ParseKptfile(data)
	if err != nil {
		return Info{}, err
	}
	return kf.PackageRevisionInfo(), nil
}

// PackageRevisionInfo returns the Info that kf records.
func (kf *Kptfile) PackageRevisionInfo() Info {
	info := Info{Upstream: kf.Upstream, UpstreamLock: kf.UpstreamLock}
	if kf.Info != nil {
		info.ReadinessGates = kf.Info.ReadinessGates
	}
	if kf.Status != nil {
		info.Conditions = kf.Status.Conditions
	}
	return info
}

// PackageRevision is an immutable view of one revision of a package. Its
// Meta never changes; a later change of the revision in its repository is a
// new PackageRevision with a new Version. Implementations are safe for
// concurrent use.
type PackageRevision interface {
	// Meta returns the revision's key, lifecycle and version.
	Meta() Meta
	// Files returns the package content. It may read from the backend; the
	// error wraps the backend's cause and ctx's error when cancelled.
	Files(ctx context.Context) (Files, error)
	// Info returns the upstream, upstream lock, readiness gates and
	// conditions recorded in the content (see [InfoFromFiles]).
	Info(ctx context.Context) (Info, error)
}

// Loader reads a revision's files on demand.
type Loader func(ctx context.Context) (Files, error)

// New returns a PackageRevision for meta whose files are read by load on
// first use and then kept. A failed load is not kept, so a later call
// tries again. Backends use it so that they implement only a loader.
func New(meta Meta, load Loader) PackageRevision {
	return &lazyRevision{meta: meta, load: load}
}

// NewWithFiles returns a PackageRevision for meta with files already read.
func NewWithFiles(meta Meta, files Files) PackageRevision {
	return &lazyRevision{meta: meta, files: &files}
}

// InfoLoader reads a revision's Info without reading all its files.
type InfoLoader func(ctx context.Context) (Info, error)

// NewWithInfo is New with a cheaper way to the Info: until the files have
// been read, Info calls info (once, keeping a success) instead of loading
// every file. Backends that can read the root Kptfile alone use it, so
// that callers going through many revisions' upstream locks and readiness
// (an upstream-reference check, a server listing) do not read whole
// packages. info must agree with InfoFromFiles on the same content.
func NewWithInfo(meta Meta, load Loader, info InfoLoader) PackageRevision {
	return &lazyRevision{meta: meta, load: load, loadInfo: info}
}

type lazyRevision struct {
	meta     Meta
	load     Loader
	loadInfo InfoLoader

	mu    sync.Mutex
	files *Files
	info  *Info
}

func (r *lazyRevision) Meta() Meta { return r.meta }

func (r *lazyRevision) Files(ctx context.Context) (Files, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.files != nil {
		return *r.files, nil
	}
	if err := ctx.Err(); err != nil {
		return Files{}, err
	}
	f, err := r.load(ctx)
	if err != nil {
		return Files{}, fmt.Errorf("read files of %s: %w", r.meta.Key, err)
	}
	r.files = &f
	return f, nil
}

func (r *lazyRevision) Info(ctx context.Context) (Info, error) {
	r.mu.Lock()
	if r.info != nil {
		defer r.mu.Unlock()
		return *r.info, nil
	}
	if r.files == nil && r.loadInfo != nil {
		defer r.mu.Unlock()
		if err := ctx.Err(); err != nil {
			return Info{}, err
		}
		info, err := r.loadInfo(ctx)
		if err != nil {
			return Info{}, fmt.Errorf("%s: %w", r.meta.Key, err)
		}
		r.info = &info
		return info, nil
	}
	r.mu.Unlock()
	f, err := r.Files(ctx)
	if err != nil {
		return Info{}, err
	}
	info, err := InfoFromFiles(f)
	if err != nil {
		return Info{}, fmt.Errorf("%s: %w", r.meta.Key, err)
	}
	return info, nil
}

// CommitOptions describe one commit of a [Draft].
type CommitOptions struct {
	// Message is the commit message; empty means a backend default
	// ("Intermediate commit" in git, as Porch writes).
	Message string
	// AuthorName and AuthorEmail identify who made the change; empty means
	// the repository's configured author.
	AuthorName, AuthorEmail string
	// Metadata, when not nil, becomes the revision's Metadata in the same
	// atomic write as the content. Backends that keep no metadata (that
	// are not a repository.MetadataWriter) refuse non-zero Metadata with
	// an error matching repository.ErrNotSupported.
	Metadata *Metadata
	// Creation, when not nil, records how the revision was created; the
	// engine sets it on the first commit of a new draft. Backends that
	// record it return it in Meta.Creation and keep it through later
	// commits and the approval; gitrepo writes it as the task of the kpt:
	// annotation, as Porch does. Others ignore it.
	Creation *Creation
}

// Draft is a mutable overlay over the files of a draft revision. Changes are
// buffered in memory and become visible in the repository only when
// committed. A Draft is used by one goroutine at a time.
type Draft interface {
	// Key returns the key of the draft revision.
	Key() Key
	// Base returns the Meta the draft was opened at; for a new draft that
	// was never committed its Version is empty.
	Base() Meta
	// Files returns the current content: the base with the changes made so
	// far applied.
	Files() Files
	// SetFile sets the content of the file at path. It returns a
	// *PathError matching [ErrInvalid] for an unsafe path.
	SetFile(path string, data []byte) error
	// RemoveFile removes the file at path, or every file under it when it
	// names a directory. Removing a missing file is not an error.
	RemoveFile(path string)
	// SetFiles replaces the whole content.
	SetFiles(files Files)
	// Commit writes the current content as the new state of the draft
	// revision and returns it. The write is a compare-and-swap against
	// Base: when the revision changed in the repository since, or (for a
	// new draft) was created by someone else, it fails with an error
	// matching repository.ErrConflict or repository.ErrAlreadyExists and
	// writes nothing. After a successful commit Base is the new revision.
	Commit(ctx context.Context, opts CommitOptions) (PackageRevision, error)
}

// CommitFunc writes files as the new content of the draft whose last
// committed state is base, and returns the written revision.
type CommitFunc func(ctx context.Context, base Meta, files Files, opts CommitOptions) (PackageRevision, error)

// NewDraft returns a Draft for the revision base, starting from files, whose
// Commit calls commit. Backends use it so that they implement only the
// write.
func NewDraft(base Meta, files Files, commit CommitFunc) Draft {
	return &overlayDraft{base: base, files: files, commit: commit}
}

type overlayDraft struct {
	base   Meta
	files  Files
	commit CommitFunc
}

func (d *overlayDraft) Key() Key         { return d.base.Key }
func (d *overlayDraft) Base() Meta       { return d.base }
func (d *overlayDraft) Files() Files     { return d.files }
func (d *overlayDraft) SetFiles(f Files) { d.files = f }

func (d *overlayDraft) SetFile(path string, data []byte) error {
	f, err := d.files.With(path, data)
	if err != nil {
		return err
	}
	d.files = f
	return nil
}

func (d *overlayDraft) RemoveFile(path string) { d.files = d.files.Without(path) }

func (d *overlayDraft) Commit(ctx context.Context, opts CommitOptions) (PackageRevision, error) {
	if d.commit == nil {
		return nil, errors.New("draft has no commit function")
	}
	pr, err := d.commit(ctx, d.base, d.files, opts)
	if err != nil {
		return nil, err
	}
	d.base = pr.Meta()
	return pr, nil
}

// Equal reports whether m and o describe the same revision state: every
// field equal, times by time.Time.Equal and the Metadata maps by content.
func (m Meta) Equal(o Meta) bool {
	return m.Key == o.Key && m.Lifecycle == o.Lifecycle && m.Version == o.Version && m.Commit == o.Commit &&
		m.PublishedBy == o.PublishedBy && m.PublishedAt.Equal(o.PublishedAt) && m.Metadata.Equal(o.Metadata) && m.Creation.Equal(o.Creation)
}
