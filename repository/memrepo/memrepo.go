// Package memrepo is an in-memory repository backend: a real, complete
// implementation of the repository contract, safe for concurrent use, that
// examples and users' unit tests run on.
//
// It models the git backend's behaviour without git: drafts and proposals
// are keyed by workspace, approving assigns the next revision number and
// updates the package's placeholder revision (revision -1, workspace = the
// branch name) to the approved content, and a revision proposed for
// deletion keeps its content until deleted. As in git, a package with
// neither a Kptfile nor a package file (revision.PackageFileName) has no
// placeholder revision. Adopt registers the content
// of an existing revision's commit (Meta.Commit), or a directory inside it,
// as a new revision. Nothing survives the process.
//
// Nothing it holds can be damaged, so its List never returns
// repository.ErrDamaged; to test how a caller handles a damaged
// repository, wrap it with repotest.Intercept and have List return the
// revisions with a *repository.DamageError.
package memrepo

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// Options configure New. The zero value, and nil, mean the defaults.
type Options struct {
	// Branch is the workspace name of placeholder revisions; default
	// "main".
	Branch string
	// Now returns the time recorded on published revisions; default
	// time.Now.
	Now func() time.Time
	// AuthorEmail is recorded as PublishedBy when an approval names no
	// author; default "".
	AuthorEmail string
}

func (o *Options) withDefaults() Options {
	var out Options
	if o != nil {
		out = *o
	}
	if out.Branch == "" {
		out.Branch = repository.DefaultBranch
	}
	if out.Now == nil {
		out.Now = time.Now
	}
	return out
}

// Repository is an in-memory repository. It is safe for concurrent use.
type Repository struct {
	name string
	opts Options

	mu       sync.Mutex
	closed   bool
	seq      uint64             // bumped on every write; the Versioner token
	instance uint64             // this repository's number in the process
	revs     map[string]*record // by package + "\x00" + workspace
	branch   map[string]*record // placeholder per package
	watches  map[*watch]struct{}

	// A batch's repository (batch.go) holds a copy of its parent's
	// records at the start (base), and the packages its writes touched.
	parent  *Repository
	base    *state
	touched map[string]bool
}

// state is the records of a repository at one moment.
type state struct {
	revs, branch map[string]*record
}

var (
	_ repository.Repository = (*Repository)(nil)
	_ repository.Watcher    = (*Repository)(nil)
	_ repository.Versioner  = (*Repository)(nil)

	_ repository.MetadataWriter = (*Repository)(nil)
	_ repository.Batcher        = (*Repository)(nil)
)

type record struct {
	meta  revision.Meta
	files revision.Files
}

// revision returns the record as a PackageRevision; its metadata maps are
// copies, so that a caller changing them cannot change the store.
func (r *record) revision() revision.PackageRevision {
	meta := r.meta
	meta.Metadata = meta.Metadata.Clone()
	meta.Creation = meta.Creation.Clone()
	return revision.NewWithFiles(meta, r.files)
}

// New returns an empty in-memory repository called name.
func New(name string, opts *Options) *Repository {
	return &Repository{
		name:     name,
		instance: instances.Add(1),
		opts:     opts.withDefaults(),
		revs:     map[string]*record{},
		branch:   map[string]*record{},
		watches:  map[*watch]struct{}{},
	}
}

// Name returns the repository's name.
func (r *Repository) Name() string { return r.name }

func id(pkg, ws string) string { return pkg + "\x00" + ws }

func (r *Repository) errorf(op string, key revision.Key, sentinel error, format string, args ...any) error {
	key.Repository = r.name
	return repository.Errorf(op, r.name, key, sentinel, format, args...)
}

// enter locks r and checks ctx and Close; on success the caller must unlock.
func (r *Repository) enter(ctx context.Context, op string, key revision.Key) error {
	if err := ctx.Err(); err != nil {
		return r.errorf(op, key, err, "%w", err)
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		if r.parent != nil {
			return r.errorf(op, key, repository.ErrBatchDone, "the batch was committed or discarded")
		}
		return r.errorf(op, key, repository.ErrClosed, "repository is closed")
	}
	return nil
}

// nextVersion returns a fresh version token; r.mu must be held.
// Tokens name the repository too, so that commits of two memrepos never
// look alike (an upstream lock records one).
func (r *Repository) nextVersion() string {
	r.seq++
	return "mem-" + strconv.FormatUint(r.instance, 10) + "-" + strconv.FormatUint(r.seq, 10)
}

// instances numbers the Repositories of the process.
var instances atomic.Uint64

// List returns the revisions opts selects, in repository.SortRevisions
// order. It returns ErrClosed after Close.
func (r *Repository) List(ctx context.Context, opts repository.ListOptions) ([]revision.PackageRevision, error) {
	if err := r.enter(ctx, "list", revision.Key{}); err != nil {
		return nil, err
	}
	defer r.mu.Unlock()
	var out []revision.PackageRevision
	for _, rec := range r.revs {
		if opts.Matches(rec.meta) {
			out = append(out, rec.revision())
		}
	}
	for _, rec := range r.branch {
		if opts.Matches(rec.meta) {
			out = append(out, rec.revision())
		}
	}
	repository.SortRevisions(out)
	return out, nil
}

// lookup finds the record key selects; r.mu must be held.
func (r *Repository) lookup(key revision.Key) (*record, error) {
	if err := key.ValidateLookup(); err != nil {
		return nil, err
	}
	if key.Repository != "" && key.Repository != r.name {
		return nil, fmt.Errorf("%w: key names repository %q", repository.ErrNotFound, key.Repository)
	}
	if key.Revision == revision.Placeholder {
		if rec, ok := r.branch[key.Package]; ok && (key.Workspace == "" || key.Workspace == rec.meta.Key.Workspace) {
			return rec, nil
		}
		return nil, repository.ErrNotFound
	}
	if key.Workspace != "" {
		if rec, ok := r.revs[id(key.Package, key.Workspace)]; ok && key.Matches(rec.meta.Key) {
			return rec, nil
		}
		if rec, ok := r.branch[key.Package]; ok && key.Matches(rec.meta.Key) {
			return rec, nil
		}
		return nil, repository.ErrNotFound
	}
	for _, rec := range r.revs {
		if key.Matches(rec.meta.Key) {
			return rec, nil
		}
	}
	return nil, repository.ErrNotFound
}

// Get returns the revision key selects. It returns ErrInvalidInput for a
// key that selects nothing in particular and ErrNotFound when none matches.
func (r *Repository) Get(ctx context.Context, key revision.Key) (revision.PackageRevision, error) {
	if err := r.enter(ctx, "get", key); err != nil {
		return nil, err
	}
	defer r.mu.Unlock()
	rec, err := r.lookup(key)
	if err != nil {
		return nil, r.errorf("get", key, sentinelOf(err), "%w", err)
	}
	return rec.revision(), nil
}

// sentinelOf returns the sentinel an internal error matches.
func sentinelOf(err error) error {
	for _, s := range []error{repository.ErrInvalidInput, repository.ErrNotFound, repository.ErrConflict,
		repository.ErrAlreadyExists, repository.ErrImmutable, repository.ErrInvalidTransition} {
		if errorsIs(err, s) {
			return s
		}
	}
	return nil
}

// CreateDraft starts a draft of key's package and workspace with
// opts.Files. Nothing is stored until Commit. It returns ErrInvalidInput
// for a bad key and ErrAlreadyExists when the workspace is taken; Commit
// returns ErrAlreadyExists when another draft took it meanwhile.
func (r *Repository) CreateDraft(ctx context.Context, key revision.Key, opts repository.CreateDraftOptions) (revision.Draft, error) {
	key.Repository = r.name
	if err := key.ValidateNew(); err != nil {
		return nil, r.errorf("create draft", key, repository.ErrInvalidInput, "%w", err)
	}
	if err := r.enter(ctx, "create draft", key); err != nil {
		return nil, err
	}
	defer r.mu.Unlock()
	if err := r.workspaceFree(key); err != nil {
		return nil, r.errorf("create draft", key, repository.ErrAlreadyExists, "%w", err)
	}
	meta := revision.Meta{Key: key, Lifecycle: revision.LifecycleDraft}
	return revision.NewDraft(meta, opts.Files, r.commit), nil
}

// workspaceFree reports an error when key's workspace is taken; r.mu held.
func (r *Repository) workspaceFree(key revision.Key) error {
	if _, ok := r.revs[id(key.Package, key.Workspace)]; ok {
		return fmt.Errorf("package %q already has a revision with workspace %q", key.Package, key.Workspace)
	}
	if rec, ok := r.branch[key.Package]; ok && rec.meta.Key.Workspace == key.Workspace {
		return fmt.Errorf("workspace %q is the branch of package %q", key.Workspace, key.Package)
	}
	return nil
}

// OpenDraft opens the Draft revision key selects. It returns ErrNotFound
// when there is none and ErrImmutable when it is not a Draft.
func (r *Repository) OpenDraft(ctx context.Context, key revision.Key) (revision.Draft, error) {
	if err := r.enter(ctx, "open draft", key); err != nil {
		return nil, err
	}
	defer r.mu.Unlock()
	rec, err := r.lookup(key)
	if err != nil {
		return nil, r.errorf("open draft", key, sentinelOf(err), "%w", err)
	}
	if rec.meta.Lifecycle != revision.LifecycleDraft {
		return nil, r.errorf("open draft", rec.meta.Key, repository.ErrImmutable, "revision is %s; only a Draft can be edited", rec.meta.Lifecycle)
	}
	return revision.NewDraft(rec.meta, rec.files, r.commit), nil
}

// commit is the revision.CommitFunc of every draft.
func (r *Repository) commit(ctx context.Context, base revision.Meta, files revision.Files, opts revision.CommitOptions) (revision.PackageRevision, error) {
	key := base.Key
	if opts.Metadata != nil {
		if err := opts.Metadata.Validate(); err != nil {
			return nil, r.errorf("commit", key, repository.ErrInvalidInput, "%w", err)
		}
	}
	if err := r.enter(ctx, "commit", key); err != nil {
		return nil, err
	}
	defer r.mu.Unlock()
	cur, exists := r.revs[id(key.Package, key.Workspace)]
	switch {
	case base.Version == "":
		if err := r.workspaceFree(key); err != nil {
			return nil, r.errorf("commit", key, repository.ErrAlreadyExists, "%w", err)
		}
	case !exists:
		return nil, r.errorf("commit", key, repository.ErrConflict, "the draft was deleted since it was opened")
	case cur.meta.Version != base.Version:
		return nil, r.errorf("commit", key, repository.ErrConflict, "the draft changed since it was opened (version %s, now %s)", base.Version, cur.meta.Version)
	case cur.meta.Lifecycle != revision.LifecycleDraft:
		return nil, r.errorf("commit", key, repository.ErrConflict, "the revision is now %s", cur.meta.Lifecycle)
	}
	v := r.nextVersion()
	rec := &record{meta: revision.Meta{Key: key, Lifecycle: revision.LifecycleDraft, Version: v, Commit: v}, files: files}
	if exists {
		rec.meta.Metadata = cur.meta.Metadata
		rec.meta.Creation = cur.meta.Creation
	}
	if opts.Metadata != nil {
		rec.meta.Metadata = opts.Metadata.Clone()
	}
	if opts.Creation != nil {
		rec.meta.Creation = opts.Creation.Clone()
	}
	r.revs[id(key.Package, key.Workspace)] = rec
	ev := repository.Modified
	if !exists {
		ev = repository.Added
	}
	r.notify(ev, rec)
	return rec.revision(), nil
}

// UpdateLifecycle moves the revision key selects to lifecycle to. See
// repository.Repository for the rules and errors.
func (r *Repository) UpdateLifecycle(ctx context.Context, key revision.Key, to revision.Lifecycle, opts repository.UpdateOptions) (revision.PackageRevision, error) {
	const op = "update lifecycle"
	if err := r.enter(ctx, op, key); err != nil {
		return nil, err
	}
	defer r.mu.Unlock()
	rec, err := r.lookup(key)
	if err != nil {
		return nil, r.errorf(op, key, sentinelOf(err), "%w", err)
	}
	if opts.Version != "" && opts.Version != rec.meta.Version {
		return nil, r.errorf(op, rec.meta.Key, repository.ErrConflict, "revision changed since version %s", opts.Version)
	}
	from := rec.meta.Lifecycle
	if err := revision.CheckTransition(from, to); err != nil {
		return nil, r.errorf(op, rec.meta.Key, repository.ErrInvalidTransition, "%w", err)
	}
	meta := rec.meta
	meta.Lifecycle = to
	meta.Version = r.nextVersion()
	if from == revision.LifecycleProposed && to == revision.LifecyclePublished {
		meta.Key.Revision = r.nextRevision(meta.Key.Package)
		meta.PublishedAt = r.opts.Now().UTC()
		meta.PublishedBy = opts.AuthorEmail
		if meta.PublishedBy == "" {
			meta.PublishedBy = r.opts.AuthorEmail
		}
	}
	next := r.replace(meta, rec.files)
	if from == revision.LifecycleProposed && to == revision.LifecyclePublished {
		r.setBranch(meta, next.files)
	}
	return next.revision(), nil
}

// replace stores meta and files as the new state of an existing revision
// and reports it to the watches; r.mu must be held.
func (r *Repository) replace(meta revision.Meta, files revision.Files) *record {
	next := &record{meta: meta, files: files}
	if meta.Key.IsPlaceholder() {
		r.branch[meta.Key.Package] = next
	} else {
		r.revs[id(meta.Key.Package, meta.Key.Workspace)] = next
	}
	r.notify(repository.Modified, next)
	return next
}

// nextRevision returns one more than the highest published revision of
// pkg; r.mu must be held.
func (r *Repository) nextRevision(pkg string) int {
	highest := 0
	for _, rec := range r.revs {
		if rec.meta.Key.Package == pkg && rec.meta.Lifecycle.IsPublished() {
			highest = max(highest, rec.meta.Key.Revision)
		}
	}
	return highest + 1
}

// setBranch makes files, those of the revision approved as pub, the
// package's content on the branch; the placeholder is published by and at
// what pub is, as git's is by the approving commit. r.mu held.
func (r *Repository) setBranch(pub revision.Meta, files revision.Files) {
	pkg := pub.Key.Package
	old, existed := r.branch[pkg]
	if !files.Has(revision.KptfileName) && !files.Has(revision.PackageFileName) {
		if existed {
			delete(r.branch, pkg)
			r.notify(repository.Deleted, old)
		}
		return
	}
	meta := revision.Meta{
		Key:         revision.Key{Repository: r.name, Package: pkg, Workspace: r.opts.Branch, Revision: revision.Placeholder},
		Lifecycle:   revision.LifecyclePublished,
		Version:     r.nextVersion(),
		PublishedBy: pub.PublishedBy,
		PublishedAt: pub.PublishedAt,
	}
	meta.Commit = meta.Version
	if existed {
		meta.Lifecycle = old.meta.Lifecycle
		meta.Metadata = old.meta.Metadata
	}
	rec := &record{meta: meta, files: files}
	r.branch[pkg] = rec
	if existed {
		r.notify(repository.Modified, rec)
	} else {
		r.notify(repository.Added, rec)
	}
}

// Delete removes the revision key selects. See repository.Repository for
// the rules and errors.
func (r *Repository) Delete(ctx context.Context, key revision.Key, opts repository.UpdateOptions) error {
	const op = "delete"
	if err := r.enter(ctx, op, key); err != nil {
		return err
	}
	defer r.mu.Unlock()
	rec, err := r.lookup(key)
	if err != nil {
		return r.errorf(op, key, sentinelOf(err), "%w", err)
	}
	if opts.Version != "" && opts.Version != rec.meta.Version {
		return r.errorf(op, rec.meta.Key, repository.ErrConflict, "revision changed since version %s", opts.Version)
	}
	if rec.meta.Lifecycle == revision.LifecyclePublished {
		return r.errorf(op, rec.meta.Key, repository.ErrImmutable, "a published revision must be proposed for deletion before it is deleted")
	}
	if rec.meta.Key.IsPlaceholder() {
		delete(r.branch, rec.meta.Key.Package)
	} else {
		delete(r.revs, id(rec.meta.Key.Package, rec.meta.Key.Workspace))
	}
	r.seq++
	r.notify(repository.Deleted, rec)
	return nil
}

// SetMetadata replaces the labels and annotations of the revision key
// selects and gives it a new Version. See repository.MetadataWriter for the
// rules and errors.
func (r *Repository) SetMetadata(ctx context.Context, key revision.Key, md revision.Metadata, opts repository.UpdateOptions) (revision.PackageRevision, error) {
	const op = "set metadata"
	if err := md.Validate(); err != nil {
		return nil, r.errorf(op, key, repository.ErrInvalidInput, "%w", err)
	}
	if err := r.enter(ctx, op, key); err != nil {
		return nil, err
	}
	defer r.mu.Unlock()
	rec, err := r.lookup(key)
	if err != nil {
		return nil, r.errorf(op, key, sentinelOf(err), "%w", err)
	}
	if opts.Version != "" && opts.Version != rec.meta.Version {
		return nil, r.errorf(op, rec.meta.Key, repository.ErrConflict, "revision changed since version %s", opts.Version)
	}
	if rec.meta.Lifecycle.IsPublished() && !rec.meta.Metadata.ReadinessEqual(md) {
		return nil, r.errorf(op, rec.meta.Key, repository.ErrImmutable, "the readiness gates and conditions of a %s revision cannot change", rec.meta.Lifecycle)
	}
	if rec.meta.Metadata.Equal(md) {
		return rec.revision(), nil
	}
	meta := rec.meta
	meta.Metadata = md.Clone()
	meta.Version = r.nextVersion()
	next := r.replace(meta, rec.files)
	return next.revision(), nil
}

// Version returns a token that changes on every write.
func (r *Repository) Version(ctx context.Context) (string, error) {
	if err := r.enter(ctx, "version", revision.Key{}); err != nil {
		return "", err
	}
	defer r.mu.Unlock()
	return "mem-" + strconv.FormatUint(r.seq, 10), nil
}

// Close discards the repository's content and ends its watches. Later
// calls return ErrClosed.
func (r *Repository) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	for w := range r.watches {
		w.close()
	}
	r.revs, r.branch = nil, nil
	return nil
}
