package ocirepo

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

var _ repository.Adopter = (*Repository)(nil)

// Adopt registers the image opts.Ref names in the package's image
// repository "<prefix>/<key.Package>" (a tag, or a digest "sha256:...")
// as the revision key, without rewriting its content: the new manifest
// (v<N> and its workspace alias for Published, ws.<workspace> for Draft)
// names the image's own config and layer blobs. The image may be any
// single-layer image whose layer is a tar of package files, written by cad
// or not; its layer is read once to check it. It runs under the package
// lock. See repository.Adopter for the errors; an image that is not a
// single layer of package files is ErrInvalidInput.
func (r *Repository) Adopt(ctx context.Context, key revision.Key, opts repository.AdoptOptions) (revision.PackageRevision, error) {
	const op = "adopt"
	if err := r.enter(ctx, op, key); err != nil {
		return nil, err
	}
	if key.Repository != "" && key.Repository != r.name {
		return nil, r.errorf(op, key, repository.ErrInvalidInput, "key names repository %q", key.Repository)
	}
	key.Repository = r.name
	if _, _, err := opts.Normalize(key, func() (int, error) { return 1, nil }); err != nil {
		return nil, err
	}
	repo, err := r.repoOf(key.Package)
	if err != nil {
		return nil, r.errorf(op, key, repository.ErrInvalidInput, "%w", err)
	}
	var ref name.Reference
	if strings.HasPrefix(opts.Ref, "sha256:") {
		if _, err := v1.NewHash(opts.Ref); err != nil {
			return nil, r.errorf(op, key, repository.ErrInvalidInput, "bad digest %q", opts.Ref)
		}
		ref = digestRef(repo, opts.Ref)
	} else {
		t, err := name.NewTag(repo.Name()+":"+opts.Ref, r.nameOpts...)
		if err != nil {
			return nil, r.errorf(op, key, repository.ErrInvalidInput, "bad tag %q", opts.Ref)
		}
		ref = t
	}
	l, err := r.lock(ctx, op, key, repo)
	if err != nil {
		return nil, err
	}
	defer l.unlock(ctx)
	r.repair(ctx, l)
	k, o, err := opts.Normalize(key, func() (int, error) { return maxNumber(l.tags) + 1, nil })
	if err != nil {
		return nil, err
	}
	got, err := r.getManifest(ctx, ref)
	if err != nil {
		if isNotFound(err) {
			return nil, r.errorf(op, k, repository.ErrNotFound, "no image %s in %s", o.Ref, repo.RepositoryStr())
		}
		return nil, r.wrap(op, k, err)
	}
	m, err := v1.ParseManifest(bytes.NewReader(got.Manifest))
	if err != nil || len(m.Layers) != 1 {
		return nil, r.errorf(op, k, repository.ErrInvalidInput, "image %s is not a single-layer image manifest", o.Ref)
	}
	src := &record{digest: got.Digest, raw: got.Manifest, manifest: m, annotations: m.Annotations, layer: &m.Layers[0]}
	files, err := r.readLayer(ctx, repo, src)
	if err != nil {
		return nil, r.wrap(op, k, err)
	}
	if files.Len() == 0 {
		return nil, r.errorf(op, k, repository.ErrInvalidInput, "image %s holds no files", o.Ref)
	}
	taken, err := r.workspaceTaken(ctx, k.Package, repo, k.Workspace)
	if err != nil {
		return nil, r.wrap(op, k, err)
	}
	if taken {
		return nil, r.errorf(op, k, repository.ErrAlreadyExists, "package %q already has a revision with workspace %q", k.Package, k.Workspace)
	}
	spec := manifestSpec{
		pkg: k.Package, workspace: k.Workspace, lifecycle: o.Lifecycle,
		config: m.Config, layer: m.Layers[0], message: o.Message,
	}
	if info, err := revision.InfoFromFiles(files); err == nil && info.UpstreamLock != nil {
		if b, err := json.Marshal(info.UpstreamLock); err == nil {
			spec.upstreamLock = string(b)
		}
	}
	// No leftover metadata of an earlier revision of the workspace.
	if err := r.writeMetadata(ctx, l, op, k, k.Workspace, revision.Metadata{}); err != nil {
		return nil, err
	}
	if o.Lifecycle == revision.LifecycleDraft {
		rec, err := r.put(ctx, l, op, k, workspaceTag(k.Workspace), spec)
		if err != nil {
			return nil, err
		}
		return revision.NewWithFiles(r.draftView(k.Package, repo, rec).meta, files), nil
	}
	for _, t := range l.tags {
		if kind, n, _ := parseTag(t); (kind == tagPublished || kind == tagDeletion) && n == k.Revision {
			return nil, r.errorf(op, k, repository.ErrAlreadyExists, "package %q already has revision %d", k.Package, k.Revision)
		}
	}
	spec.revision = k.Revision
	spec.publishedAt = r.opts.Clock()
	spec.publishedBy = o.AuthorEmail
	if spec.publishedBy == "" {
		spec.publishedBy = r.opts.AuthorEmail
	}
	pub, err := r.put(ctx, l, op, k, publishedTag(k.Revision), spec)
	if err != nil {
		return nil, err
	}
	if _, err := r.put(ctx, l, op, k, workspaceTag(k.Workspace), spec); err != nil {
		r.logDebug("writing the workspace alias failed", "package", k.Package, "error", err)
	}
	return revision.NewWithFiles(r.publishedView(k.Package, repo, k.Revision, pub, nil).meta, files), nil
}

var _ repository.Locator = (*Repository)(nil)

// Location returns repository.TypeOCI and the image prefix
// (spec.oci.registry).
func (r *Repository) Location() (typ repository.Type, address string) {
	return repository.TypeOCI, r.spec.OCI.Registry
}
