package memrepo

import (
	"context"
	"maps"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// BeginBatch starts a write batch (see repository.Batch): a copy of the
// repository's revisions that the batch's writes change, seen only
// through the batch, until Commit lays the packages they changed over the
// repository at once. The batch offers the repository's reads and writes,
// SetMetadata and Adopt. Errors: ErrClosed, or wrapping ctx's error.
func (r *Repository) BeginBatch(ctx context.Context) (repository.Batch, error) {
	if err := r.enter(ctx, "begin batch", revision.Key{}); err != nil {
		return nil, err
	}
	defer r.mu.Unlock()
	b := &Repository{
		name:     r.name,
		opts:     r.opts,
		instance: instances.Add(1), // Versions of its own, never one of r's
		revs:     maps.Clone(r.revs),
		branch:   maps.Clone(r.branch),
		watches:  map[*watch]struct{}{},
		parent:   r,
		base:     &state{revs: maps.Clone(r.revs), branch: maps.Clone(r.branch)},
		touched:  map[string]bool{},
	}
	return &batch{r: b}, nil
}

// batch is the repository.Batch of a Repository: a Repository of its
// own (parent set) whose records start as the parent's.
type batch struct{ r *Repository }

var (
	_ repository.Batch          = (*batch)(nil)
	_ repository.MetadataWriter = (*batch)(nil)
	_ repository.Adopter        = (*batch)(nil)
)

// Name returns the repository's name.
func (b *batch) Name() string { return b.r.name }

// List lists as the repository does, the batch's writes included. After
// the batch ended it returns an error matching repository.ErrBatchDone.
func (b *batch) List(ctx context.Context, opts repository.ListOptions) ([]revision.PackageRevision, error) {
	return b.r.List(ctx, opts)
}

// Get gets as the repository does, the batch's writes included. After
// the batch ended it returns an error matching repository.ErrBatchDone.
func (b *batch) Get(ctx context.Context, key revision.Key) (revision.PackageRevision, error) {
	return b.r.Get(ctx, key)
}

// CreateDraft starts a draft whose Commit writes into the batch. After
// the batch ended it returns an error matching repository.ErrBatchDone.
func (b *batch) CreateDraft(ctx context.Context, key revision.Key, opts repository.CreateDraftOptions) (revision.Draft, error) {
	return b.r.CreateDraft(ctx, key, opts)
}

// OpenDraft opens a draft, as the batch sees it, whose Commit writes
// into the batch. After the batch ended it returns an error matching
// repository.ErrBatchDone.
func (b *batch) OpenDraft(ctx context.Context, key revision.Key) (revision.Draft, error) {
	return b.r.OpenDraft(ctx, key)
}

// UpdateLifecycle changes a lifecycle in the batch. After the batch
// ended it returns an error matching repository.ErrBatchDone.
func (b *batch) UpdateLifecycle(ctx context.Context, key revision.Key, to revision.Lifecycle, opts repository.UpdateOptions) (revision.PackageRevision, error) {
	return b.r.UpdateLifecycle(ctx, key, to, opts)
}

// Delete deletes in the batch. After the batch ended it returns an error
// matching repository.ErrBatchDone.
func (b *batch) Delete(ctx context.Context, key revision.Key, opts repository.UpdateOptions) error {
	return b.r.Delete(ctx, key, opts)
}

// SetMetadata sets a revision's metadata in the batch. After the batch
// ended it returns an error matching repository.ErrBatchDone.
func (b *batch) SetMetadata(ctx context.Context, key revision.Key, md revision.Metadata, opts repository.UpdateOptions) (revision.PackageRevision, error) {
	return b.r.SetMetadata(ctx, key, md, opts)
}

// Adopt adopts in the batch. After the batch ended it returns an error
// matching repository.ErrBatchDone.
func (b *batch) Adopt(ctx context.Context, key revision.Key, opts repository.AdoptOptions) (revision.PackageRevision, error) {
	return b.r.Adopt(ctx, key, opts)
}

// end ends the batch and returns what it holds; ok is false when it had
// ended already.
func (b *batch) end() (st, base *state, touched map[string]bool, ok bool) {
	b.r.mu.Lock()
	defer b.r.mu.Unlock()
	if b.r.closed {
		return nil, nil, nil, false
	}
	b.r.closed = true
	st, base, touched = &state{revs: b.r.revs, branch: b.r.branch}, b.r.base, b.r.touched
	b.r.revs, b.r.branch, b.r.base, b.r.touched = nil, nil, nil, nil
	return st, base, touched, true
}

// Commit lays the packages the batch's writes changed over the
// repository, all at once, and reports each change to the repository's
// watches. It returns an *repository.Error matching ErrConflict, writing
// nothing, when another writer changed any revision of one of those
// packages since the batch began (the batch's writes decided on them: a
// workspace free, a Version, the next revision number), ErrBatchDone when
// the batch ended, ErrClosed when the repository was closed, or wrapping
// ctx's error. The batch ends whatever Commit returns.
func (b *batch) Commit(ctx context.Context) error {
	const op = "commit batch"
	st, base, touched, ok := b.end()
	if !ok {
		return b.r.errorf(op, revision.Key{}, repository.ErrBatchDone, "the batch was committed or discarded")
	}
	p := b.r.parent
	if err := p.enter(ctx, op, revision.Key{}); err != nil {
		return err
	}
	defer p.mu.Unlock()
	if len(touched) == 0 {
		return nil
	}
	// Every revision of a touched package is as the batch found it.
	for _, m := range []struct{ now, then map[string]*record }{{p.revs, base.revs}, {p.branch, base.branch}} {
		for k, rec := range m.then {
			if touched[rec.meta.Key.Package] && m.now[k] != rec {
				return p.errorf(op, rec.meta.Key, repository.ErrConflict, "another writer changed package %q since the batch began", rec.meta.Key.Package)
			}
		}
		for k, rec := range m.now {
			if touched[rec.meta.Key.Package] && m.then[k] != rec {
				return p.errorf(op, rec.meta.Key, repository.ErrConflict, "another writer changed package %q since the batch began", rec.meta.Key.Package)
			}
		}
	}
	for _, m := range []struct{ now, final map[string]*record }{{p.revs, st.revs}, {p.branch, st.branch}} {
		for k, rec := range m.now {
			if touched[rec.meta.Key.Package] {
				if _, kept := m.final[k]; !kept {
					delete(m.now, k)
					p.notify(repository.Deleted, rec)
				}
			}
		}
		for k, rec := range m.final {
			if !touched[rec.meta.Key.Package] {
				continue
			}
			switch old, had := m.now[k]; {
			case !had:
				m.now[k] = rec
				p.notify(repository.Added, rec)
			case old != rec:
				m.now[k] = rec
				p.notify(repository.Modified, rec)
			}
		}
	}
	p.seq++
	return nil
}

// Discard drops the batch's writes.
func (b *batch) Discard() { b.end() }

// Close discards the batch when it has not ended; it leaves the
// repository open and returns nil.
func (b *batch) Close() error {
	b.end()
	return nil
}
