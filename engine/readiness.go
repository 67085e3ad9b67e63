package engine

import (
	"context"
	"slices"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// Get returns the revision key selects in repo. It returns an error
// matching repository.ErrNotFound when there is none and
// repository.ErrInvalidInput for a key that selects nothing in particular.
func (e *Engine) Get(ctx context.Context, repo string, key revision.Key) (revision.PackageRevision, error) {
	_, pr, err := e.get(ctx, "get", repo, key)
	return pr, err
}

// Readiness returns the effective readiness gates and conditions of pr:
// those its root Kptfile records merged with its revision data
// (Meta.ReadinessGates and Meta.Conditions), as
// [revision.Info.WithReadiness] describes. It is what [Engine.Approve]
// checks. The returned Info's upstream fields are those of pr's Info. It
// returns pr's Info error (a Kptfile that does not parse).
func Readiness(ctx context.Context, pr revision.PackageRevision) (revision.Info, error) {
	info, err := pr.Info(ctx)
	if err != nil {
		return revision.Info{}, err
	}
	return info.WithReadiness(pr.Meta().Metadata), nil
}

// ReadinessOptions say how [Engine.UpdateReadiness] changes a revision's
// readiness. The zero value changes nothing.
type ReadinessOptions struct {
	// Conditions each replace the revision's condition of the same type,
	// or are added.
	Conditions []revision.Condition
	// SetGates makes Gates replace the revision's readiness gates; with an
	// empty Gates that removes them all. Without it the gates stay.
	SetGates bool
	Gates    []revision.ReadinessGate
	// Version, when set, is the revision's Meta.Version the caller last
	// read (what a checker checked): the change fails with an error
	// matching repository.ErrConflict, writing nothing, when the revision
	// changed since. The check and the write are one compare-and-swap.
	Version string
}

// UpdateReadiness changes the readiness gates and conditions of the Draft
// or Proposed revision key selects. They are revision data (see
// revision.Metadata), kept by the repository beside the revision, so a
// checker can set a condition on a proposal without touching its files;
// [Engine.Approve] then checks them together with those of the Kptfile.
//
// On a Draft with a root Kptfile they are also projected into it
// (info.readinessGates, status.conditions; see revision.ProjectReadiness)
// in the same write, so that kpt, Porch and the functions of the render
// see them; the package is rendered when the Engine has a Pipeline. With
// SetGates the Kptfile's gates are replaced too, so a gate can be removed.
// A Proposed revision's content is immutable: there only the revision
// data changes, and the Kptfile keeps what it had (its gates still count).
// When nothing changes nothing is written.
//
// On a repository that keeps no revision data (not a
// repository.MetadataWriter) the change is made in the Kptfile of a Draft
// alone, as before revision data existed.
//
// Errors: repository.ErrInvalidInput for a condition without a type, a
// status other than True, False or Unknown, a gate without a condition
// type, or a type given twice; repository.ErrImmutable for a Published or
// DeletionProposed revision (its readiness is what it was published with);
// repository.ErrNotSupported for a Proposed revision, or a Draft without a
// Kptfile, in a repository that keeps no revision data;
// repository.ErrNotFound; repository.ErrConflict when it changed since
// opts.Version or while being written; a render error as [Engine.Update].
func (e *Engine) UpdateReadiness(ctx context.Context, repo string, key revision.Key, opts ReadinessOptions) (revision.PackageRevision, error) {
	const op = "update readiness"
	return e.updateReadiness(ctx, op, repo, key, opts)
}

// SetConditions sets conditions on the Draft or Proposed revision key
// selects: each replaces the condition of its type, or is added.
// Conditions are what readiness gates wait for (see Approve). It is
// [Engine.UpdateReadiness] with these Conditions, and works and fails as
// that does.
func (e *Engine) SetConditions(ctx context.Context, repo string, key revision.Key, conditions ...revision.Condition) (revision.PackageRevision, error) {
	return e.updateReadiness(ctx, "set conditions", repo, key, ReadinessOptions{Conditions: conditions})
}

// SetReadinessGates replaces the readiness gates of the Draft or Proposed
// revision key selects; an empty gates removes them all (on a Proposed
// revision, gates in its Kptfile stay). It is [Engine.UpdateReadiness]
// with SetGates, and works and fails as that does.
func (e *Engine) SetReadinessGates(ctx context.Context, repo string, key revision.Key, gates []revision.ReadinessGate) (revision.PackageRevision, error) {
	return e.updateReadiness(ctx, "set readiness gates", repo, key, ReadinessOptions{SetGates: true, Gates: gates})
}

func (e *Engine) updateReadiness(ctx context.Context, op, repo string, key revision.Key, opts ReadinessOptions) (revision.PackageRevision, error) {
	key.Repository = repo
	for _, c := range opts.Conditions {
		switch {
		case c.Type == "":
			return nil, invalid(op, key, "a condition needs a type")
		case c.Status != revision.ConditionTrue && c.Status != revision.ConditionFalse && c.Status != revision.ConditionUnknown:
			return nil, invalid(op, key, "condition %q has status %q; want True, False or Unknown", c.Type, c.Status)
		}
	}
	for _, g := range opts.Gates {
		if g.ConditionType == "" {
			return nil, invalid(op, key, "a readiness gate needs a condition type")
		}
	}
	r, pr, err := e.get(ctx, op, repo, key, IfVersion(opts.Version))
	if err != nil {
		return nil, err
	}
	m := pr.Meta()
	if m.Lifecycle.IsPublished() {
		return nil, repository.Errorf(op, repo, m.Key, repository.ErrImmutable,
			"the readiness gates and conditions of a %s revision cannot change", m.Lifecycle)
	}
	if _, ok := r.(repository.MetadataWriter); !ok {
		return e.readinessInKptfile(ctx, op, r, m, opts)
	}
	md := m.Metadata.Clone()
	if opts.SetGates {
		md.ReadinessGates = slices.Clone(opts.Gates)
	}
	for _, c := range opts.Conditions {
		md = md.WithCondition(c)
	}
	if err := md.Validate(); err != nil {
		return nil, wrap(op, m.Key, err)
	}
	if m.Lifecycle == revision.LifecycleDraft {
		d, err := r.OpenDraft(ctx, m.Key)
		if err != nil {
			return nil, wrap(op, m.Key, err)
		}
		if d.Base().Version != m.Version {
			return nil, repository.Errorf(op, repo, m.Key, repository.ErrConflict, "the draft changed while its readiness was being set")
		}
		if d.Files().Has(revision.KptfileName) {
			files := d.Files()
			if opts.SetGates {
				if files, err = editKptfile(files, func(kf *revision.Kptfile) { setKptfileGates(kf, opts.Gates) }); err != nil {
					return nil, wrap(op, m.Key, err)
				}
			}
			return e.save(ctx, op, r, d, files, UpdateOptions{Metadata: &md})
		}
		if opts.SetGates && d.Files().Has(revision.PackageFileName) {
			// A package without a Kptfile: its package file's gates are
			// replaced as a Kptfile's would be, so a gate can be removed.
			files, err := editPackageFile(d.Files(), m.Key, func(kf *revision.Kptfile) { setKptfileGates(kf, opts.Gates) })
			if err != nil {
				return nil, wrap(op, m.Key, err)
			}
			return e.save(ctx, op, r, d, files, UpdateOptions{Metadata: &md})
		}
	}
	if md.Equal(m.Metadata) {
		return pr, nil
	}
	out, err := repository.SetMetadata(ctx, r, m.Key, md, e.updateOptions(m.Version))
	if err != nil {
		return nil, wrap(op, m.Key, err)
	}
	e.opts.Logger.DebugContext(ctx, op, "key", out.Meta().Key.String(), "gates", len(md.ReadinessGates), "conditions", len(md.Conditions))
	return out, nil
}

// readinessInKptfile makes the change of opts in the root Kptfile of the
// Draft m, for repositories that keep no revision data.
func (e *Engine) readinessInKptfile(ctx context.Context, op string, r repository.Repository, m revision.Meta, opts ReadinessOptions) (revision.PackageRevision, error) {
	if m.Lifecycle != revision.LifecycleDraft {
		return nil, repository.Errorf(op, m.Key.Repository, m.Key, repository.ErrNotSupported,
			"the repository keeps no revision data, so only a Draft's Kptfile can record readiness")
	}
	d, err := r.OpenDraft(ctx, m.Key)
	if err != nil {
		return nil, wrap(op, m.Key, err)
	}
	if d.Base().Version != m.Version {
		return nil, repository.Errorf(op, m.Key.Repository, m.Key, repository.ErrConflict, "the draft changed while its readiness was being set")
	}
	edit := func(kf *revision.Kptfile) {
		if opts.SetGates {
			setKptfileGates(kf, opts.Gates)
		}
		for _, c := range opts.Conditions {
			kf.SetCondition(c)
		}
	}
	var files revision.Files
	if d.Files().Has(revision.KptfileName) {
		files, err = editKptfile(d.Files(), edit)
	} else {
		// Without a Kptfile, cad's package file records them.
		files, err = editPackageFile(d.Files(), m.Key, edit)
	}
	if err != nil {
		return nil, wrap(op, m.Key, err)
	}
	return e.save(ctx, op, r, d, files, UpdateOptions{})
}

// setKptfileGates replaces kf's info.readinessGates with gates.
func setKptfileGates(kf *revision.Kptfile, gates []revision.ReadinessGate) {
	if len(gates) == 0 {
		if kf.Info != nil {
			kf.Info.ReadinessGates = nil
		}
		return
	}
	if kf.Info == nil {
		kf.Info = &revision.PackageInfo{}
	}
	kf.Info.ReadinessGates = slices.Clone(gates)
}

// editKptfile returns files with edit applied to the root Kptfile, which
// keeps its formatting and comments.
func editKptfile(files revision.Files, edit func(*revision.Kptfile)) (revision.Files, error) {
	data, _ := files.Get(revision.KptfileName)
	kf, err := revision.ParseKptfile(data)
	if err != nil {
		return revision.Files{}, err
	}
	edit(kf)
	if data, err = kf.Encode(); err != nil {
		return revision.Files{}, err
	}
	return files.With(revision.KptfileName, data)
}

// keepReadiness returns md with the readiness gates and conditions of cur:
// what callers that set labels and annotations (SetMetadata, Update) must
// not change.
func keepReadiness(md, cur revision.Metadata) revision.Metadata {
	out := md.Clone()
	out.ReadinessGates = slices.Clone(cur.ReadinessGates)
	out.Conditions = slices.Clone(cur.Conditions)
	return out
}
