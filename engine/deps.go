package engine

import (
	"context"
	"slices"

	"github.com/configasdata/cad/deps"
	"github.com/configasdata/cad/revision"
)

// DependenciesOptions say where [Engine.Dependencies] and
// [Engine.CheckDependencies] look for providers. Nil means the defaults.
type DependenciesOptions struct {
	// Repositories are the repositories whose packages (their latest
	// published revisions) may provide what the revision requires.
	// Default: the revision's own repository (the deployment repository)
	// plus every repository a package requirement of the revision names.
	Repositories []string
	// Gate, for CheckDependencies, also adds the readiness gate
	// deps.ConditionType to the revision when it lacks it, so that it
	// cannot be approved until the condition is True. Default false: the
	// condition is set, and blocks approve only where the gate is already
	// declared (in the Kptfile, the package file or revision data).
	Gate bool
}

// Dependencies resolves the requirements of the revision key selects in
// repo (any lifecycle: a Draft is resolved as if it were published)
// against the latest published revision of every package of
// opts.Repositories, as [deps.Resolve] describes.
//
// Errors: repository.ErrNotFound for an unknown repository or revision;
// repository.ErrInvalidInput when the revision's package file does not
// parse or declares an invalid dependency; the repositories' read errors.
// A package of the searched repositories whose declaration is invalid is
// not an error: it provides nothing.
func (e *Engine) Dependencies(ctx context.Context, repo string, key revision.Key, opts *DependenciesOptions) (*deps.Result, error) {
	_, pr, err := e.get(ctx, "dependencies", repo, key)
	if err != nil {
		return nil, err
	}
	return e.dependencies(ctx, "dependencies", pr, opts)
}

func (e *Engine) dependencies(ctx context.Context, op string, pr revision.PackageRevision, opts *DependenciesOptions) (*deps.Result, error) {
	k := pr.Meta().Key
	pkg, err := deps.Read(ctx, pr)
	if err != nil {
		return nil, wrap(op, k, err)
	}
	if pkg.Err != nil {
		return nil, wrap(op, k, pkg.Err)
	}
	var repos []string
	if opts != nil && len(opts.Repositories) > 0 {
		repos = slices.Clone(opts.Repositories)
	} else {
		repos = []string{k.Repository}
		for _, r := range pkg.Dependencies.Requires {
			if r.Package != nil && r.Package.Repository != "" {
				repos = append(repos, r.Package.Repository)
			}
		}
	}
	slices.Sort(repos)
	repos = slices.Compact(repos)
	var universe []deps.Package
	for _, name := range repos {
		r, err := e.repo(ctx, op, revision.Key{Repository: name})
		if err != nil {
			return nil, wrap(op, k, err)
		}
		ps, err := deps.Latest(ctx, r)
		if err != nil {
			return nil, wrap(op, k, err)
		}
		universe = append(universe, ps...)
	}
	return deps.Resolve(pkg, universe), nil
}

// CheckDependencies resolves the revision key selects as
// [Engine.Dependencies] does and records the outcome on it as the
// readiness condition deps.ConditionType (True, or False with the missing
// requirements and cycles in its message; see deps.Result.Condition),
// through [Engine.UpdateReadiness]. With opts.Gate it also adds the
// readiness gate of that type, which turns enforcement on for the
// revision: [Engine.Approve] refuses it (a *GatesError) until a later
// CheckDependencies, run after the providers are published, sets the
// condition True. Nothing is written when the condition and gates are
// already as computed.
//
// The write is a compare-and-swap against the revision as it was read,
// so a revision changed meanwhile fails with repository.ErrConflict (retry
// with [RetryOnConflict]).
//
// It returns the resolution and the revision as it now is. Errors: those
// of Dependencies, and of UpdateReadiness (repository.ErrImmutable for a
// Published revision).
func (e *Engine) CheckDependencies(ctx context.Context, repo string, key revision.Key, opts *DependenciesOptions) (*deps.Result, revision.PackageRevision, error) {
	const op = "check dependencies"
	_, pr, err := e.get(ctx, op, repo, key)
	if err != nil {
		return nil, nil, err
	}
	res, err := e.dependencies(ctx, op, pr, opts)
	if err != nil {
		return nil, nil, err
	}
	ro := ReadinessOptions{Conditions: []revision.Condition{res.Condition()}, Version: pr.Meta().Version}
	if opts != nil && opts.Gate {
		info, err := Readiness(ctx, pr)
		if err != nil {
			return nil, nil, wrap(op, pr.Meta().Key, err)
		}
		if !slices.ContainsFunc(info.ReadinessGates, func(g revision.ReadinessGate) bool { return g.ConditionType == deps.ConditionType }) {
			ro.SetGates = true
			ro.Gates = append(slices.Clone(info.ReadinessGates), revision.ReadinessGate{ConditionType: deps.ConditionType})
		}
	}
	out, err := e.updateReadiness(ctx, op, repo, pr.Meta().Key, ro)
	if err != nil {
		return nil, nil, err
	}
	return res, out, nil
}
