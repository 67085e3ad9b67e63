package ocirepo

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

func metadataTag(ws string) string { return metadataTagPrefix + ws }

// validMetadata reports whether rec is a metadata manifest of workspace ws
// in package pkg.
func (rec *record) validMetadata(pkg, ws string) bool {
	return rec != nil && rec.md != nil && rec.pkg == pkg && rec.workspace == ws && rec.tag == metadataTag(ws) && rec.layer == nil
}

// decorate adds md to v: its Metadata, and its hash to the Version, so
// that the Version changes with the metadata.
func decorate(v *view, md revision.Metadata) {
	v.meta.Metadata = md.Clone()
	if h := md.Hash(); h != "" {
		v.meta.Version += "+" + h
	}
}

// metadataOf reads the metadata of workspace ws of pkg: zero when it has
// none.
func (r *Repository) metadataOf(ctx context.Context, pkg string, repo name.Repository, ws string) (revision.Metadata, error) {
	rec, err := r.fetch(ctx, repo, metadataTag(ws))
	if err != nil || !rec.validMetadata(pkg, ws) {
		return revision.Metadata{}, err
	}
	return *rec.md, nil
}

// writeMetadata sets the metadata of workspace ws under lease l: a PUT of
// meta.<ws>, or its delete for zero metadata.
func (r *Repository) writeMetadata(ctx context.Context, l *lease, op string, key revision.Key, ws string, md revision.Metadata) error {
	tag := metadataTag(ws)
	if md.IsZero() {
		cur, err := r.fetch(ctx, l.repo, tag)
		if err != nil {
			return r.wrap(op, key, err)
		}
		if cur == nil {
			return nil
		}
		return r.remove(ctx, l, op, key, tag, cur)
	}
	if err := ctx.Err(); err != nil {
		return r.errorf(op, key, err, "%w", err)
	}
	if err := l.check(op, key); err != nil {
		return err
	}
	data, err := md.Marshal()
	if err != nil {
		return r.wrap(op, key, err)
	}
	now := r.opts.Clock()
	m := v1.Manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		Config:        descriptor(emptyConfig, types.OCIConfigJSON),
		Layers:        []v1.Descriptor{},
		Annotations: map[string]string{
			AnnotationTag:       tag,
			AnnotationPackage:   key.Package,
			AnnotationWorkspace: ws,
			AnnotationMetadata:  string(data),
			AnnotationWriteID:   nonce(),
			annotationCreated:   now.UTC().Format(time.RFC3339Nano),
		},
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return r.wrap(op, key, err)
	}
	d := descriptor(raw, types.OCIManifestSchema1).Digest
	if err := retry(ctx, func() error { return r.pusher().Put(ctx, l.repo.Tag(tag), rawManifest(raw)) }); err != nil {
		return r.wrap(op, key, err)
	}
	var desc *v1.Descriptor
	if err := retry(ctx, func() (err error) { desc, err = r.puller.Head(ctx, l.repo.Tag(tag)); return err }); err != nil {
		return r.wrap(op, key, err)
	}
	if desc.Digest != d {
		return r.errorf(op, key, repository.ErrConflict, "tag %s was overwritten by another writer", tag)
	}
	if rec, ok := parseRecord(d, raw); ok {
		r.cache(rec)
	}
	r.logDebug("wrote metadata", "package", key.Package, "workspace", ws, "digest", d.String())
	return nil
}

// SetMetadata replaces the labels and annotations of the revision key
// selects. They are kept in the manifest of the tag meta.<workspace> of
// the package's image repository (see DESIGN.md, "Layout"), written
// under the package lock. See repository.MetadataWriter. Errors:
// ErrNotFound, ErrInvalidInput, ErrConflict for a stale opts.Version or a
// lock held too long, ErrClosed, ErrUnavailable.
func (r *Repository) SetMetadata(ctx context.Context, key revision.Key, md revision.Metadata, opts repository.UpdateOptions) (revision.PackageRevision, error) {
	const op = "set metadata"
	if err := md.Validate(); err != nil {
		return nil, r.errorf(op, key, repository.ErrInvalidInput, "%w", err)
	}
	l, v, err := r.lockRevision(ctx, op, key, opts.Version)
	if err != nil {
		return nil, err
	}
	defer l.unlock(ctx)
	if v.meta.Lifecycle.IsPublished() && !v.meta.Metadata.ReadinessEqual(md) {
		return nil, r.errorf(op, v.meta.Key, repository.ErrImmutable, "the readiness gates and conditions of a %s revision cannot change", v.meta.Lifecycle)
	}
	if v.meta.Metadata.Equal(md) {
		return r.revisionOf(*v), nil
	}
	if err := r.writeMetadata(ctx, l, op, v.meta.Key, v.meta.Key.Workspace, md); err != nil {
		return nil, err
	}
	out := *v
	out.meta.Version = stripMetadataVersion(v.meta.Version)
	decorate(&out, md)
	return r.revisionOf(out), nil
}

// stripMetadataVersion returns the manifest part of a Version.
func stripMetadataVersion(version string) string {
	for i := len(version) - 1; i >= 0; i-- {
		if version[i] == '+' {
			return version[:i]
		}
	}
	return version
}
