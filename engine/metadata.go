package engine

import (
	"context"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// SetMetadata replaces the labels and annotations of the revision key
// selects, which the repository keeps beside the revision (see
// repository.MetadataWriter): they survive a restart, every process sees
// them, they stay through lifecycle changes and are removed with the
// revision, and a clone, copy or upgrade does not inherit them. version,
// when not empty, is the revision's Meta.Version the caller last read (a
// Kubernetes resourceVersion); the change fails with a conflict when the
// revision changed since.
//
// Errors: repository.ErrInvalidInput for metadata that md.Validate refuses
// (a *revision.MetadataError); repository.ErrNotFound;
// repository.ErrConflict; repository.ErrNotSupported for a backend that
// keeps no metadata.
func (e *Engine) SetMetadata(ctx context.Context, repo string, key revision.Key, md revision.Metadata, version string) (revision.PackageRevision, error) {
	const op = "set metadata"
	key.Repository = repo
	if err := md.Validate(); err != nil {
		return nil, wrap(op, key, err)
	}
	r, err := e.repo(ctx, op, key)
	if err != nil {
		return nil, err
	}
	pr, err := repository.SetMetadata(ctx, r, key, md.Clone(), e.updateOptions(version))
	if err != nil {
		return nil, wrap(op, key, err)
	}
	e.opts.Logger.DebugContext(ctx, op, "key", pr.Meta().Key.String(), "labels", len(md.Labels), "annotations", len(md.Annotations))
	return pr, nil
}
