package memrepo

import (
	"context"
	"strings"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

var _ repository.Adopter = (*Repository)(nil)

// Adopt registers the directory key.Package of the content of commit
// opts.Ref (the Meta.Commit of any revision of r, the placeholders'
// included) as the revision key, without changing that content: a memrepo
// commit holds one package, so the directory is that package or a
// directory inside it. A published adoption keeps opts.Ref as its
// Meta.Commit and leaves the placeholder alone; a draft is a new commit
// with the same files. See repository.Adopter for the rules and errors.
func (r *Repository) Adopt(ctx context.Context, key revision.Key, opts repository.AdoptOptions) (revision.PackageRevision, error) {
	const op = "adopt"
	key.Repository = r.name
	if err := r.enter(ctx, op, key); err != nil {
		return nil, err
	}
	defer r.mu.Unlock()
	key, opts, err := opts.Normalize(key, func() (int, error) { return r.nextRevision(key.Package), nil })
	if err != nil {
		return nil, err
	}
	files, ok := r.contentAt(opts.Ref, key.Package)
	if !ok {
		return nil, r.errorf(op, key, repository.ErrNotFound, "no directory %q at commit %q", key.Package, opts.Ref)
	}
	if err := r.workspaceFree(key); err != nil {
		return nil, r.errorf(op, key, repository.ErrAlreadyExists, "%w", err)
	}
	if opts.Lifecycle == revision.LifecyclePublished {
		for _, rec := range r.revs {
			if rec.meta.Key.Package == key.Package && rec.meta.Key.Revision == key.Revision {
				return nil, r.errorf(op, key, repository.ErrAlreadyExists, "package %q already has revision %d", key.Package, key.Revision)
			}
		}
	}
	meta := revision.Meta{Key: key, Lifecycle: opts.Lifecycle, Version: r.nextVersion()}
	if opts.Lifecycle == revision.LifecyclePublished {
		meta.Commit = opts.Ref
		meta.PublishedAt = r.opts.Now().UTC()
		meta.PublishedBy = opts.AuthorEmail
		if meta.PublishedBy == "" {
			meta.PublishedBy = r.opts.AuthorEmail
		}
	} else {
		meta.Commit = meta.Version
	}
	rec := &record{meta: meta, files: files}
	r.revs[id(key.Package, key.Workspace)] = rec
	r.notify(repository.Added, rec)
	return rec.revision(), nil
}

// contentAt returns the files of directory dir at commit c; r.mu must be
// held.
func (r *Repository) contentAt(c, dir string) (revision.Files, bool) {
	for _, recs := range []map[string]*record{r.revs, r.branch} {
		for _, rec := range recs {
			if rec.meta.Commit != c {
				continue
			}
			pkg := rec.meta.Key.Package
			if dir == pkg {
				return rec.files, rec.files.Len() > 0
			}
			if rest, ok := strings.CutPrefix(dir, pkg+"/"); ok {
				sub := rec.files.Subdir(rest)
				return sub, sub.Len() > 0
			}
		}
	}
	return revision.Files{}, false
}
