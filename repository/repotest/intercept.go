package repotest

import (
	"context"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// Funcs holds optional hooks for [Intercept]. Each hook receives the
// wrapped repository (or draft) and decides whether to call through; a nil
// hook calls through unchanged.
type Funcs struct {
	List            func(ctx context.Context, next repository.Repository, opts repository.ListOptions) ([]revision.PackageRevision, error)
	Get             func(ctx context.Context, next repository.Repository, key revision.Key) (revision.PackageRevision, error)
	CreateDraft     func(ctx context.Context, next repository.Repository, key revision.Key, opts repository.CreateDraftOptions) (revision.Draft, error)
	OpenDraft       func(ctx context.Context, next repository.Repository, key revision.Key) (revision.Draft, error)
	Commit          func(ctx context.Context, next revision.Draft, opts revision.CommitOptions) (revision.PackageRevision, error)
	UpdateLifecycle func(ctx context.Context, next repository.Repository, key revision.Key, to revision.Lifecycle, opts repository.UpdateOptions) (revision.PackageRevision, error)
	Delete          func(ctx context.Context, next repository.Repository, key revision.Key, opts repository.UpdateOptions) error
	SetMetadata     func(ctx context.Context, next repository.Repository, key revision.Key, md revision.Metadata, opts repository.UpdateOptions) (revision.PackageRevision, error)
	Adopt           func(ctx context.Context, next repository.Repository, key revision.Key, opts repository.AdoptOptions) (revision.PackageRevision, error)
	Close           func(next repository.Repository) error
}

// Intercept returns a repository that calls the hooks of f, falling through
// to r where a hook is nil. Drafts it returns route Commit through
// f.Commit. The result implements the optional interfaces Watcher,
// Versioner and Locator exactly when r does, and MetadataWriter and
// Adopter when r does or f has the hook, so a type assertion on it
// answers as one on r would; the optional methods call through to r.
// Other optional interfaces of r (Specified, RangeLister, ...) are not
// passed on.
//
// For example, to make every approval lose a race:
//
//	r = repotest.Intercept(r, repotest.Funcs{
//		UpdateLifecycle: func(ctx context.Context, next repository.Repository, k revision.Key, to revision.Lifecycle, o repository.UpdateOptions) (revision.PackageRevision, error) {
//			if to == revision.LifecyclePublished {
//				return nil, &repository.Error{Op: "update lifecycle", Err: repository.ErrConflict}
//			}
//			return next.UpdateLifecycle(ctx, k, to, o)
//		},
//	})
func Intercept(r repository.Repository, f Funcs) repository.Repository {
	return withCapabilities(&intercepted{next: r, f: f})
}

type intercepted struct {
	next repository.Repository
	f    Funcs
}

var _ repository.Repository = (*intercepted)(nil)

func (i *intercepted) Name() string { return i.next.Name() }

func (i *intercepted) List(ctx context.Context, opts repository.ListOptions) ([]revision.PackageRevision, error) {
	if i.f.List != nil {
		return i.f.List(ctx, i.next, opts)
	}
	return i.next.List(ctx, opts)
}

func (i *intercepted) Get(ctx context.Context, key revision.Key) (revision.PackageRevision, error) {
	if i.f.Get != nil {
		return i.f.Get(ctx, i.next, key)
	}
	return i.next.Get(ctx, key)
}

func (i *intercepted) CreateDraft(ctx context.Context, key revision.Key, opts repository.CreateDraftOptions) (revision.Draft, error) {
	var d revision.Draft
	var err error
	if i.f.CreateDraft != nil {
		d, err = i.f.CreateDraft(ctx, i.next, key, opts)
	} else {
		d, err = i.next.CreateDraft(ctx, key, opts)
	}
	return i.wrap(d), err
}

func (i *intercepted) OpenDraft(ctx context.Context, key revision.Key) (revision.Draft, error) {
	var d revision.Draft
	var err error
	if i.f.OpenDraft != nil {
		d, err = i.f.OpenDraft(ctx, i.next, key)
	} else {
		d, err = i.next.OpenDraft(ctx, key)
	}
	return i.wrap(d), err
}

func (i *intercepted) wrap(d revision.Draft) revision.Draft {
	if d == nil || i.f.Commit == nil {
		return d
	}
	return &interceptedDraft{Draft: d, commit: i.f.Commit}
}

func (i *intercepted) UpdateLifecycle(ctx context.Context, key revision.Key, to revision.Lifecycle, opts repository.UpdateOptions) (revision.PackageRevision, error) {
	if i.f.UpdateLifecycle != nil {
		return i.f.UpdateLifecycle(ctx, i.next, key, to, opts)
	}
	return i.next.UpdateLifecycle(ctx, key, to, opts)
}

func (i *intercepted) Delete(ctx context.Context, key revision.Key, opts repository.UpdateOptions) error {
	if i.f.Delete != nil {
		return i.f.Delete(ctx, i.next, key, opts)
	}
	return i.next.Delete(ctx, key, opts)
}

func (i *intercepted) setMetadata(ctx context.Context, key revision.Key, md revision.Metadata, opts repository.UpdateOptions) (revision.PackageRevision, error) {
	if i.f.SetMetadata != nil {
		return i.f.SetMetadata(ctx, i.next, key, md, opts)
	}
	return repository.SetMetadata(ctx, i.next, key, md, opts)
}

func (i *intercepted) adopt(ctx context.Context, key revision.Key, opts repository.AdoptOptions) (revision.PackageRevision, error) {
	if i.f.Adopt != nil {
		return i.f.Adopt(ctx, i.next, key, opts)
	}
	return repository.Adopt(ctx, i.next, key, opts)
}

func (i *intercepted) location() (repository.Type, string) { return repository.LocationOf(i.next) }

func (i *intercepted) Close() error {
	if i.f.Close != nil {
		return i.f.Close(i.next)
	}
	return i.next.Close()
}

func (i *intercepted) watch(ctx context.Context, opts repository.ListOptions, handle func(repository.Event) error) error {
	return repository.Watch(ctx, i.next, opts, handle)
}

func (i *intercepted) version(ctx context.Context) (string, error) {
	return repository.Version(ctx, i.next)
}

type interceptedDraft struct {
	revision.Draft
	commit func(ctx context.Context, next revision.Draft, opts revision.CommitOptions) (revision.PackageRevision, error)
}

func (d *interceptedDraft) Commit(ctx context.Context, opts revision.CommitOptions) (revision.PackageRevision, error) {
	return d.commit(ctx, d.Draft, opts)
}
