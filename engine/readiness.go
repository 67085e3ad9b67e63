package engine

import (
	"context"
	"slices"

	"github.com/configasdata/cad/revision"
)

// Get returns the revision key selects in repo. It returns an error
// matching repository.ErrNotFound when there is none and
// repository.ErrInvalidInput for a key that selects nothing in particular.
func (e *Engine) Get(ctx context.Context, repo string, key revision.Key) (revision.PackageRevision, error) {
	_, pr, err := e.get(ctx, "get", repo, key)
	return pr, err
}

// SetConditions sets conditions in the root Kptfile's status of the Draft
// revision key selects: each replaces the condition of its type, or is
// added. Conditions are what readiness gates wait for (see Approve). The
// package is rendered when the Engine has a Pipeline and saved; when
// nothing changes nothing is written. The Kptfile keeps its formatting and
// comments. A package without a Kptfile keeps them in cad's package file
// (status.conditions, spec.readinessGates), created when missing.
//
// Errors: repository.ErrInvalidInput for a condition without a type or
// with a status other than True, False or Unknown, or a Kptfile or package
// file that does not parse; otherwise as [Engine.Update].
func (e *Engine) SetConditions(ctx context.Context, repo string, key revision.Key, conditions ...revision.Condition) (revision.PackageRevision, error) {
	const op = "set conditions"
	key.Repository = repo
	for _, c := range conditions {
		switch {
		case c.Type == "":
			return nil, invalid(op, key, "a condition needs a type")
		case c.Status != revision.ConditionTrue && c.Status != revision.ConditionFalse && c.Status != revision.ConditionUnknown:
			return nil, invalid(op, key, "condition %q has status %q; want True, False or Unknown", c.Type, c.Status)
		}
	}
	return e.editKptfile(ctx, op, key, func(kf *revision.Kptfile) {
		for _, c := range conditions {
			kf.SetCondition(c)
		}
	})
}

// SetReadinessGates replaces the readiness gates (Kptfile
// info.readinessGates) of the Draft revision key selects; an empty gates
// removes them all. Otherwise it works and fails as [Engine.SetConditions].
func (e *Engine) SetReadinessGates(ctx context.Context, repo string, key revision.Key, gates []revision.ReadinessGate) (revision.PackageRevision, error) {
	const op = "set readiness gates"
	key.Repository = repo
	for _, g := range gates {
		if g.ConditionType == "" {
			return nil, invalid(op, key, "a readiness gate needs a condition type")
		}
	}
	return e.editKptfile(ctx, op, key, func(kf *revision.Kptfile) {
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
	})
}

// editKptfile applies edit to the root Kptfile of the draft key and saves
// the package through Update.
func (e *Engine) editKptfile(ctx context.Context, op string, key revision.Key, edit func(*revision.Kptfile)) (revision.PackageRevision, error) {
	r, err := e.repo(ctx, op, key)
	if err != nil {
		return nil, err
	}
	d, err := r.OpenDraft(ctx, key)
	if err != nil {
		return nil, wrap(op, key, err)
	}
	files := d.Files()
	data, ok := files.Get(revision.KptfileName)
	if !ok {
		if files, err = editPackageFile(files, key, edit); err != nil {
			return nil, wrap(op, key, err)
		}
		return e.save(ctx, op, r, d, files, UpdateOptions{})
	}
	kf, err := revision.ParseKptfile(data)
	if err != nil {
		return nil, wrap(op, key, err)
	}
	edit(kf)
	if data, err = kf.Encode(); err != nil {
		return nil, wrap(op, key, err)
	}
	if files, err = files.With(revision.KptfileName, data); err != nil {
		return nil, wrap(op, key, err)
	}
	return e.save(ctx, op, r, d, files, UpdateOptions{})
}
