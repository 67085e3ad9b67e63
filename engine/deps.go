package engine

import (
	"context"
	"slices"

	"github.com/configasdata/cad/deps"
	"github.com/configasdata/cad/repository"
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
// revision: [Engine.Approve] resolves its requirements again and refuses
// it (a *GatesError) until the providers are published. Nothing is
// written when the condition and gates are already as computed.
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

// CloneProvidersOptions configure [Engine.CloneProviders].
type CloneProvidersOptions struct {
	// Sources are the repositories (blueprints, catalogs) whose latest
	// published revisions may provide what is missing; required. They
	// are searched in this order, each in package order, and the first
	// package that satisfies a requirement is cloned.
	Sources []string
	// Workspace is the workspace of the new drafts; default "deps".
	Workspace string
	// Dependencies say where the revision's requirements are resolved
	// first (see [DependenciesOptions]); its Gate is ignored.
	Dependencies *DependenciesOptions
}

// CloneProviders brings in the providers of what the revision key
// selects in repo is missing: for each requirement [Engine.Dependencies]
// reports Missing, it finds the first package of opts.Sources that
// satisfies it (the named package at a matching revision for a package
// requirement, the pinned package or any provider for an api or
// capability) and clones it into repo as a new draft of workspace
// opts.Workspace ([Engine.Clone]). Requirements no source satisfies, and
// providers whose package already exists in repo (an older or unpublished
// one: upgrade or publish it instead), are left missing. A package that
// satisfies several requirements is cloned once.
//
// The new drafts still need to be proposed and approved; a later
// [Engine.CheckDependencies] then finds them. It returns the drafts it
// created, in the order of the requirements, and the resolution it
// started from.
//
// Errors: repository.ErrInvalidInput when opts has no Sources; those of
// Dependencies; those of Clone (on an error the drafts created before it
// stay, and are returned with it).
func (e *Engine) CloneProviders(ctx context.Context, repo string, key revision.Key, opts *CloneProvidersOptions) ([]revision.PackageRevision, *deps.Result, error) {
	const op = "clone providers"
	key.Repository = repo
	if opts == nil || len(opts.Sources) == 0 {
		return nil, nil, invalid(op, key, "CloneProvidersOptions.Sources names no repository")
	}
	ws := opts.Workspace
	if ws == "" {
		ws = "deps"
	}
	_, pr, err := e.get(ctx, op, repo, key)
	if err != nil {
		return nil, nil, err
	}
	res, err := e.dependencies(ctx, op, pr, opts.Dependencies)
	if err != nil {
		return nil, nil, err
	}
	var sources [][]deps.Package
	for _, name := range opts.Sources {
		r, err := e.repo(ctx, op, revision.Key{Repository: name})
		if err != nil {
			return nil, res, wrap(op, key, err)
		}
		ps, err := deps.Latest(ctx, r)
		if err != nil {
			return nil, res, wrap(op, key, err)
		}
		sources = append(sources, ps)
	}
	target, err := e.repo(ctx, op, key)
	if err != nil {
		return nil, res, err
	}
	var out []revision.PackageRevision
	cloned := map[string]bool{}
	for _, b := range res.Missing() {
		src, ok := firstProvider(sources, b.Requirement)
		if !ok || cloned[src.Package] {
			continue
		}
		existing, err := target.List(ctx, repository.ListOptions{Package: src.Package})
		if err != nil {
			return out, res, wrap(op, key, err)
		}
		if len(existing) > 0 {
			continue
		}
		cloned[src.Package] = true
		d, err := e.Clone(ctx, repo, revision.Key{Package: src.Package, Workspace: ws}, CloneSource{Revision: &src}, CloneOptions{})
		if err != nil {
			return out, res, err
		}
		out = append(out, d)
	}
	return out, res, nil
}

// firstProvider returns the key of the first package of sources that
// satisfies req.
func firstProvider(sources [][]deps.Package, req revision.Dependency) (revision.Key, bool) {
	for _, ps := range sources {
		for _, p := range ps {
			if ref := req.Package; ref != nil {
				if p.Key.Package != ref.Name || (ref.Repository != "" && ref.Repository != p.Key.Repository) || !ref.MatchesRevision(p.Key.Revision) {
					continue
				}
				if req.API == nil && req.Capability == "" {
					return p.Key, true
				}
			}
			if p.Provides(req) {
				return p.Key, true
			}
		}
	}
	return revision.Key{}, false
}
