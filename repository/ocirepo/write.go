package ocirepo

import (
	"context"
	"encoding/json"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/configasdata/cad/internal/porchtask"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// CreateDraft starts a draft of key's package and workspace with
// opts.Files; nothing is written until Commit. Errors: ErrInvalidInput for
// a bad key, ErrAlreadyExists when the package has a revision with that
// workspace (Commit checks again under the package lock), ErrClosed,
// ErrUnavailable.
func (r *Repository) CreateDraft(ctx context.Context, key revision.Key, opts repository.CreateDraftOptions) (revision.Draft, error) {
	const op = "create draft"
	key.Repository = r.name
	if err := key.ValidateNew(); err != nil {
		return nil, r.errorf(op, key, repository.ErrInvalidInput, "%w", err)
	}
	if err := r.enter(ctx, op, key); err != nil {
		return nil, err
	}
	repo, err := r.repoOf(key.Package)
	if err != nil {
		return nil, r.errorf(op, key, repository.ErrInvalidInput, "%w", err)
	}
	taken, err := r.workspaceTaken(ctx, key.Package, repo, key.Workspace)
	if err != nil {
		return nil, r.wrap(op, key, err)
	}
	if taken {
		return nil, r.errorf(op, key, repository.ErrAlreadyExists, "package %q already has a revision with workspace %q", key.Package, key.Workspace)
	}
	return revision.NewDraft(revision.Meta{Key: key, Lifecycle: revision.LifecycleDraft}, opts.Files, r.commit), nil
}

// workspaceTaken reports whether ws.<ws> holds a draft, a proposal or the
// alias of a published revision that still exists.
func (r *Repository) workspaceTaken(ctx context.Context, pkg string, repo name.Repository, ws string) (bool, error) {
	rec, err := r.fetch(ctx, repo, workspaceTag(ws))
	if err != nil || !rec.valid(pkg, workspaceTag(ws)) {
		return false, err
	}
	if !rec.lifecycle.IsPublished() {
		return true, nil
	}
	v, err := r.getPublished(ctx, pkg, repo, rec.revision)
	if err != nil {
		return false, err
	}
	return v != nil && v.meta.Key.Workspace == ws, nil
}

// OpenDraft opens the Draft revision key selects, reading its files.
// Errors: ErrNotFound, ErrImmutable when the revision is not a Draft,
// ErrInvalidInput (a bad key or a refused layer, see [LayerError]),
// ErrClosed, ErrUnavailable.
func (r *Repository) OpenDraft(ctx context.Context, key revision.Key) (revision.Draft, error) {
	const op = "open draft"
	if err := r.enter(ctx, op, key); err != nil {
		return nil, err
	}
	v, err := r.lookup(ctx, key)
	if err != nil {
		return nil, r.wrap(op, key, err)
	}
	if v.meta.Lifecycle != revision.LifecycleDraft {
		return nil, r.errorf(op, v.meta.Key, repository.ErrImmutable, "revision is %s; only a Draft can be edited", v.meta.Lifecycle)
	}
	files, err := r.readLayer(ctx, v.repo, v.rec)
	if err != nil {
		return nil, r.wrap(op, v.meta.Key, err)
	}
	return revision.NewDraft(v.meta, files, r.commit), nil
}

// commit is the revision.CommitFunc of every draft: it uploads the layer,
// then under the package lock checks that ws.<workspace> is still at
// base.Version (or absent for a new draft) and overwrites it.
func (r *Repository) commit(ctx context.Context, base revision.Meta, files revision.Files, opts revision.CommitOptions) (revision.PackageRevision, error) {
	const op = "commit"
	key := base.Key
	key.Repository = r.name
	if err := r.enter(ctx, op, key); err != nil {
		return nil, err
	}
	if opts.Metadata != nil {
		if err := opts.Metadata.Validate(); err != nil {
			return nil, r.errorf(op, key, repository.ErrInvalidInput, "%w", err)
		}
	}
	repo, err := r.repoOf(key.Package)
	if err != nil {
		return nil, r.errorf(op, key, repository.ErrInvalidInput, "%w", err)
	}
	enc, err := encodeLayer(files)
	if err != nil {
		return nil, r.wrap(op, key, err)
	}
	// Blobs are invisible until a manifest names them: upload before
	// locking, so the lock is held only for manifest writes.
	if err := r.ensureBlob(ctx, repo, enc.layer, types.OCILayer); err != nil {
		return nil, r.wrap(op, key, err)
	}
	if err := r.ensureBlob(ctx, repo, enc.config, types.OCIConfigJSON); err != nil {
		return nil, r.wrap(op, key, err)
	}
	l, err := r.lock(ctx, op, key, repo)
	if err != nil {
		return nil, err
	}
	defer l.unlock(ctx)
	r.repair(ctx, l)
	cur, err := r.fetch(ctx, repo, workspaceTag(key.Workspace))
	if err != nil {
		return nil, r.wrap(op, key, err)
	}
	curMD, err := r.metadataOf(ctx, key.Package, repo, key.Workspace)
	if err != nil {
		return nil, r.wrap(op, key, err)
	}
	md := curMD // the metadata of the result
	if opts.Metadata != nil {
		md = opts.Metadata.Clone()
	}
	if base.Version == "" {
		taken, err := r.workspaceTaken(ctx, key.Package, repo, key.Workspace)
		if err != nil {
			return nil, r.wrap(op, key, err)
		}
		if taken {
			return nil, r.errorf(op, key, repository.ErrAlreadyExists, "package %q already has a revision with workspace %q", key.Package, key.Workspace)
		}
		if opts.Metadata == nil {
			md = revision.Metadata{} // not what an earlier revision of the workspace left
		}
	} else {
		var now string
		if cur != nil {
			v := r.draftView(key.Package, repo, cur)
			decorate(&v, curMD)
			now = v.meta.Version
		}
		switch {
		case !cur.valid(key.Package, workspaceTag(key.Workspace)):
			return nil, r.errorf(op, key, repository.ErrConflict, "the draft was deleted since it was opened")
		case now != base.Version:
			return nil, r.errorf(op, key, repository.ErrConflict, "the draft changed since it was opened (version %s, now %s)", base.Version, now)
		case cur.lifecycle != revision.LifecycleDraft:
			return nil, r.errorf(op, key, repository.ErrConflict, "the revision is now %s", cur.lifecycle)
		}
	}
	spec := manifestSpec{
		pkg:       key.Package,
		workspace: key.Workspace,
		lifecycle: revision.LifecycleDraft,
		config:    enc.configDesc,
		layer:     enc.layerDesc,
		message:   opts.Message,
		task:      string(porchtask.Encode(opts.Creation)),
	}
	if spec.task == "" && base.Version != "" {
		spec.task = cur.annotations[AnnotationTask] // every write of the draft keeps it
	}
	if info, err := revision.InfoFromFiles(files); err == nil && info.UpstreamLock != nil {
		if b, err := json.Marshal(info.UpstreamLock); err == nil {
			spec.upstreamLock = string(b)
		}
	}
	// The metadata first: left alone by a failed write, it belongs to no
	// revision, and the next draft of the workspace replaces it.
	if !md.Equal(curMD) {
		if err := r.writeMetadata(ctx, l, op, key, key.Workspace, md); err != nil {
			return nil, err
		}
	}
	rec, err := r.put(ctx, l, op, key, workspaceTag(key.Workspace), spec)
	if err != nil {
		return nil, err
	}
	v := r.draftView(key.Package, repo, rec)
	decorate(&v, md)
	return revision.NewWithFiles(v.meta, files), nil
}

// put writes spec as the manifest of tag under lease l and checks by a
// HEAD that the tag now holds it.
func (r *Repository) put(ctx context.Context, l *lease, op string, key revision.Key, tag string, spec manifestSpec) (*record, error) {
	if err := ctx.Err(); err != nil {
		return nil, r.errorf(op, key, err, "%w", err)
	}
	if err := l.check(op, key); err != nil {
		return nil, err
	}
	spec.tag = tag
	spec.created = r.opts.Clock()
	raw, err := spec.build()
	if err != nil {
		return nil, r.wrap(op, key, err)
	}
	d := descriptor(raw, types.OCIManifestSchema1).Digest
	if err := retry(ctx, func() error { return r.pusher().Put(ctx, l.repo.Tag(tag), rawManifest(raw)) }); err != nil {
		return nil, r.wrap(op, key, err)
	}
	var desc *v1.Descriptor
	err = retry(ctx, func() (err error) { desc, err = r.puller.Head(ctx, l.repo.Tag(tag)); return err })
	if err != nil {
		return nil, r.wrap(op, key, err)
	}
	if desc.Digest != d {
		return nil, r.errorf(op, key, repository.ErrConflict, "tag %s was overwritten by another writer", tag)
	}
	rec, _ := parseRecord(d, raw)
	r.cache(rec)
	r.logDebug("wrote tag", "package", key.Package, "tag", tag, "digest", d.String())
	return rec, nil
}

// remove deletes tag (holding rec) under lease l and checks it is gone.
func (r *Repository) remove(ctx context.Context, l *lease, op string, key revision.Key, tag string, rec *record) error {
	if err := l.check(op, key); err != nil {
		return err
	}
	if err := r.deleteRef(ctx, l.repo, tag, rec.digest, rec.raw); err != nil {
		return r.wrap(op, key, err)
	}
	if err := retry(ctx, func() error { _, err := r.puller.Head(ctx, l.repo.Tag(tag)); return err }); err == nil {
		return r.errorf(op, key, repository.ErrUnavailable, "the registry kept tag %s after deleting it (is deletion enabled?)", tag)
	} else if !isNotFound(err) {
		return r.wrap(op, key, err)
	}
	r.logDebug("deleted tag", "package", key.Package, "tag", tag)
	return nil
}

// exists fails with ErrNotFound when pkg's image repository has no tags,
// without locking: a lock would create the repository.
func (r *Repository) exists(ctx context.Context, op string, key revision.Key, repo name.Repository) error {
	tags, err := r.listTags(ctx, repo)
	if err != nil {
		return r.wrap(op, key, err)
	}
	if len(tags) == 0 {
		return r.errorf(op, key, repository.ErrNotFound, "no revision matches")
	}
	return nil
}

// repair finishes an approval that a crashed writer left half done: the
// newest v<N> whose workspace tag is not yet its alias. Failures are only
// logged; readers already resolve the state.
func (r *Repository) repair(ctx context.Context, l *lease) {
	n := maxNumber(l.tags)
	if n == 0 {
		return
	}
	pub, err := r.fetch(ctx, l.repo, publishedTag(n))
	if err != nil || !pub.valid(l.pkg, publishedTag(n)) {
		return
	}
	ws := pub.workspace
	cur, err := r.fetch(ctx, l.repo, workspaceTag(ws))
	if err != nil || (cur.valid(l.pkg, workspaceTag(ws)) && cur.lifecycle == revision.LifecyclePublished && cur.revision == n) {
		return
	}
	spec := specOf(pub)
	k := revision.Key{Repository: r.name, Package: l.pkg, Workspace: ws, Revision: n}
	if _, err := r.put(ctx, l, "repair", k, workspaceTag(ws), spec); err != nil {
		r.logDebug("repair failed", "package", l.pkg, "error", err)
	}
}

// UpdateLifecycle moves the revision key selects to lifecycle to, under
// the package lock: propose and reject rewrite ws.<workspace>; approve
// writes v<N> with N one more than the highest number tag and then turns
// ws.<workspace> into an alias of it; proposing deletion writes the marker
// v<N>.deletion-proposed and rejecting that deletes it. Errors:
// ErrInvalidTransition, ErrConflict (opts.Version is stale or another
// process holds the lock too long), ErrNotFound, ErrInvalidInput,
// ErrClosed, ErrUnavailable.
func (r *Repository) UpdateLifecycle(ctx context.Context, key revision.Key, to revision.Lifecycle, opts repository.UpdateOptions) (revision.PackageRevision, error) {
	const op = "update lifecycle"
	l, v, err := r.lockRevision(ctx, op, key, opts.Version)
	if err != nil {
		return nil, err
	}
	defer l.unlock(ctx)
	repo := l.repo
	from := v.meta.Lifecycle
	if err := revision.CheckTransition(from, to); err != nil {
		return nil, r.errorf(op, v.meta.Key, repository.ErrInvalidTransition, "%w", err)
	}
	k := v.meta.Key
	switch {
	case from == revision.LifecycleProposed && to == revision.LifecyclePublished:
		n := maxNumber(l.tags) + 1
		spec := specOf(v.rec)
		spec.lifecycle = revision.LifecyclePublished
		spec.revision = n
		spec.publishedAt = r.opts.Clock()
		spec.publishedBy = opts.AuthorEmail
		if spec.publishedBy == "" {
			spec.publishedBy = r.opts.AuthorEmail
		}
		pub, err := r.put(ctx, l, op, k, publishedTag(n), spec)
		if err != nil {
			return nil, err
		}
		// The approval is done; the alias only speeds up lookups by
		// workspace, and repair finishes it if this write fails.
		if _, err := r.put(ctx, l, op, k, workspaceTag(k.Workspace), spec); err != nil {
			r.logDebug("writing the workspace alias failed", "package", k.Package, "error", err)
		}
		return r.decorated(r.publishedView(k.Package, repo, n, pub, nil), v), nil
	case to == revision.LifecycleDeletionProposed:
		spec := specOf(v.rec)
		spec.lifecycle = revision.LifecycleDeletionProposed
		spec.marks = v.rec.digest.String()
		marker, err := r.put(ctx, l, op, k, deletionTag(k.Revision), spec)
		if err != nil {
			return nil, err
		}
		return r.decorated(r.publishedView(k.Package, repo, k.Revision, v.rec, marker), v), nil
	case from == revision.LifecycleDeletionProposed:
		marker, err := r.fetch(ctx, repo, deletionTag(k.Revision))
		if err != nil {
			return nil, r.wrap(op, k, err)
		}
		if marker != nil {
			if err := r.remove(ctx, l, op, k, deletionTag(k.Revision), marker); err != nil {
				return nil, err
			}
		}
		return r.decorated(r.publishedView(k.Package, repo, k.Revision, v.rec, nil), v), nil
	default: // Draft <-> Proposed
		spec := specOf(v.rec)
		spec.lifecycle = to
		rec, err := r.put(ctx, l, op, k, workspaceTag(k.Workspace), spec)
		if err != nil {
			return nil, err
		}
		return r.decorated(r.draftView(k.Package, repo, rec), v), nil
	}
}

// dropMetadata deletes the metadata of the deleted revision v. A failure
// is only logged: metadata of no revision is never read, and the next
// draft of the workspace replaces it.
func (r *Repository) dropMetadata(ctx context.Context, l *lease, op string, v *view) {
	if v.meta.Metadata.IsZero() {
		return
	}
	if err := r.writeMetadata(ctx, l, op, v.meta.Key, v.meta.Key.Workspace, revision.Metadata{}); err != nil {
		r.logDebug("deleting the metadata failed", "package", v.meta.Key.Package, "error", err)
	}
}

// lockRevision starts a write of op on the revision key selects: it
// takes the package lock, finishes a half-done approval, and reads the
// revision, checking it is at version (when not empty). The caller must
// unlock the lease. Errors: ErrInvalidInput, ErrNotFound, ErrConflict,
// ErrClosed, ErrUnavailable.
func (r *Repository) lockRevision(ctx context.Context, op string, key revision.Key, version string) (*lease, *view, error) {
	if err := r.enter(ctx, op, key); err != nil {
		return nil, nil, err
	}
	if err := key.ValidateLookup(); err != nil {
		return nil, nil, r.errorf(op, key, repository.ErrInvalidInput, "%w", err)
	}
	repo, err := r.repoOf(key.Package)
	if err != nil {
		return nil, nil, r.errorf(op, key, repository.ErrNotFound, "%w", err)
	}
	if err := r.exists(ctx, op, key, repo); err != nil {
		return nil, nil, err
	}
	l, err := r.lock(ctx, op, key, repo)
	if err != nil {
		return nil, nil, err
	}
	r.repair(ctx, l)
	v, err := r.lookup(ctx, key)
	if err == nil && version != "" && version != v.meta.Version {
		err = r.errorf(op, v.meta.Key, repository.ErrConflict, "revision changed since version %s", version)
	}
	if err != nil {
		l.unlock(ctx)
		return nil, nil, r.wrap(op, key, err)
	}
	return l, v, nil
}

// decorated returns next, a new state of the revision of view old, with
// old's metadata.
func (r *Repository) decorated(next view, old *view) revision.PackageRevision {
	decorate(&next, old.meta.Metadata)
	return r.revisionOf(next)
}

// Delete removes the revision key selects under the package lock: a draft
// or proposal by deleting ws.<workspace>; a revision proposed for deletion
// by deleting v<N> (the commit point), its marker and its workspace alias.
// Errors: ErrImmutable for a Published revision, ErrConflict for a stale
// opts.Version, ErrNotFound, ErrInvalidInput, ErrClosed, ErrUnavailable
// (also when the registry does not allow deletes).
func (r *Repository) Delete(ctx context.Context, key revision.Key, opts repository.UpdateOptions) error {
	const op = "delete"
	l, v, err := r.lockRevision(ctx, op, key, opts.Version)
	if err != nil {
		return err
	}
	defer l.unlock(ctx)
	repo, k := l.repo, v.meta.Key
	switch v.meta.Lifecycle {
	case revision.LifecyclePublished:
		return r.errorf(op, k, repository.ErrImmutable, "a published revision must be proposed for deletion before it is deleted")
	case revision.LifecycleDraft, revision.LifecycleProposed:
		if err := r.remove(ctx, l, op, k, workspaceTag(k.Workspace), v.rec); err != nil {
			return err
		}
		r.dropMetadata(ctx, l, op, v)
		return nil
	}
	if err := r.remove(ctx, l, op, k, publishedTag(k.Revision), v.rec); err != nil {
		return err
	}
	r.dropMetadata(ctx, l, op, v)
	// Leftovers below are ignored by readers if a delete fails.
	if marker, err := r.fetch(ctx, repo, deletionTag(k.Revision)); err == nil && marker != nil {
		if err := r.remove(ctx, l, op, k, deletionTag(k.Revision), marker); err != nil {
			r.logDebug("deleting the deletion marker failed", "package", k.Package, "error", err)
		}
	}
	if alias, err := r.fetch(ctx, repo, workspaceTag(k.Workspace)); err == nil && alias != nil && alias.lifecycle.IsPublished() && alias.revision == k.Revision {
		if err := r.remove(ctx, l, op, k, workspaceTag(k.Workspace), alias); err != nil {
			r.logDebug("deleting the workspace alias failed", "package", k.Package, "error", err)
		}
	}
	return nil
}
