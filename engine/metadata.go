package engine

import (
	"context"
	"errors"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// SetMetadata replaces the labels and annotations of the revision key
// selects, which the repository keeps beside the revision (see
// repository.MetadataWriter): they survive a restart, every process sees
// them, they stay through lifecycle changes and are removed with the
// revision, and a clone, copy or upgrade does not inherit them. The
// readiness gates and conditions of md are ignored: the revision keeps its
// own, which [Engine.UpdateReadiness] changes. version, when not empty, is
// the revision's Meta.Version the caller last read (a Kubernetes
// resourceVersion); the change fails with a conflict when the revision
// changed since.
//
// Errors: repository.ErrInvalidInput for metadata that md.Validate refuses
// (a *revision.MetadataError); repository.ErrNotFound;
// repository.ErrConflict; repository.ErrNotSupported for a backend that
// keeps no metadata.
func (e *Engine) SetMetadata(ctx context.Context, repo string, key revision.Key, md revision.Metadata, version string) (revision.PackageRevision, error) {
	const op = "set metadata"
	key.Repository = repo
	md = keepReadiness(md, revision.Metadata{})
	if err := md.Validate(); err != nil {
		return nil, wrap(op, key, err)
	}
	r, err := e.repo(ctx, op, key)
	if err != nil {
		return nil, err
	}
	if _, ok := r.(repository.MetadataWriter); !ok {
		return nil, repository.Errorf(op, repo, key, repository.ErrNotSupported, "the repository keeps no revision metadata")
	}
	// The readiness is read and written back under the same
	// compare-and-swap; without a version from the caller a change of it
	// meanwhile is retried, as the caller asked for no precondition.
	var pr revision.PackageRevision
	for attempt := 1; ; attempt++ {
		var cur revision.PackageRevision
		if cur, err = r.Get(ctx, key); err != nil {
			return nil, wrap(op, key, err)
		}
		m := cur.Meta()
		if version != "" && m.Version != version {
			return nil, repository.Errorf(op, repo, m.Key, repository.ErrConflict, "the revision changed since version %s", version)
		}
		pr, err = repository.SetMetadata(ctx, r, m.Key, keepReadiness(md, m.Metadata), e.updateOptions(m.Version))
		if err == nil || version != "" || attempt == 3 || !errors.Is(err, repository.ErrConflict) {
			break
		}
	}
	if err != nil {
		return nil, wrap(op, key, err)
	}
	e.opts.Logger.DebugContext(ctx, op, "key", pr.Meta().Key.String(), "labels", len(md.Labels), "annotations", len(md.Annotations))
	return pr, nil
}
