package engine

import (
	"bytes"
	"context"
	"path"

	"github.com/configasdata/cad/internal/update"
	"github.com/configasdata/cad/internal/upstreamid"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// MessageUpgrade is the commit message of Upgrade, as Porch writes it.
const MessageUpgrade = "Upgrading revision"

// ErrLocalModified is matched (errors.Is) by the error Upgrade returns
// with the fast-forward strategy when the local package differs from its
// old upstream. The message lists the files, as kpt's does: "local package
// files have been modified: [...]".
var ErrLocalModified = update.ErrLocalModified

// Ref names a published revision in one of the Engine's repositories, or
// a package in a git repository the Engine does not manage.
type Ref struct {
	// Repository is the repository's name; when set it overrides
	// Key.Repository.
	Repository string
	// Key selects the revision; it must be a numbered published revision.
	Key revision.Key
	// Git, when set, is a package in a git repository the Engine does not
	// manage (as in CloneSource), read with UpgradeOptions.Fetcher;
	// Repository and Key are unused then. It is how a package cloned from
	// a plain git URL is upgraded (see [Engine.DiscoverGitUpgrades]).
	Git *repository.GitUpstream
	// Helm, when set, is a Helm chart rendered with UpgradeOptions.Charts
	// (as in CloneSource); Repository and Key are unused then. It is how
	// a package cloned from a chart moves to another chart version or
	// other values (see [Engine.DiscoverHelmUpgrades]). Its empty fields
	// are the local package's: Repo, Chart, ReleaseName and Namespace as
	// its upstream records them, Version the locked version, nil Values the
	// recorded values. A zero old upstream beside a Helm new upstream
	// means the locked chart version rendered with the recorded values.
	Helm *HelmUpstream
}

func (r Ref) key() revision.Key {
	k := r.Key
	if r.Repository != "" {
		k.Repository = r.Repository
	}
	return k
}

// Upgrade creates a new draft of the package of local, in repository repo
// with the given workspace, that moves local from its upstream oldUpstream
// to newUpstream, as Porch's upgrade task does:
//
//   - the content is the three-way merge of oldUpstream (original),
//     newUpstream (updated) and local with opts.Strategy: resource-merge,
//     fast-forward, force-delete-replace or copy-merge (empty means the
//     local Kptfile's upstream.updateStrategy, else resource-merge). See
//     kpt's pkg update; Kptfiles are merged keeping local metadata, with
//     pipelines merged per function;
//   - the Kptfile's upstream and upstreamLock (for a package without a
//     Kptfile, its package file's, created when missing; the root package
//     file is kept out of the merge) then name newUpstream, as Clone
//     writes them: repo the repository's URL when the Engine's
//     Repositories have a URL(name) string method, else the local
//     Kptfile's upstream repo when both upstreams are in one repository,
//     else the repository name; directory the package path, ref
//     "<package>/v<N>", commit the revision's Meta.Commit (else Version); for
//     a Helm newUpstream, type helm with the chart, the version asked for,
//     release name, namespace and values, and the lock's exact version and
//     digest (see [Engine.Clone]); the local
//     updateStrategy is kept (or set to the strategy when it had none);
//   - every resource gets kpt's merge keys again (the upstream-identifier
//     annotation and kpt-merge comment) where it lacks them.
//
// The content is rendered when the Engine has a Pipeline, then committed
// with the message [MessageUpgrade]. Upgrade makes one write: on any error
// nothing is saved.
//
// A package cloned from a Helm chart is upgraded with Ref.Helm: the
// original is the locked chart version rendered with the values the local
// package recorded, the updated one the new version (and/or new values)
// rendered, and the merge keeps local edits of the rendered resources as
// for any upstream. When the locked version renders from an archive whose
// digest is not the locked one (a chart republished under the same
// version), the upgrade goes on with it as the original and logs a warning
// to the Engine's Logger.
//
// Errors: a *PlaceholderError (matching repository.ErrInvalidInput) when
// any of the three is a placeholder revision; repository.ErrInvalidInput
// when one is not Published or DeletionProposed, for an unknown strategy
// or a bad workspace, for a Helm upstream without a ChartRenderer or
// without repo and chart (given or recorded), and for a zero old upstream
// when the local package has no Helm lock; a *revision.YAMLLimitError
// (matching it) for an upstream YAML file over a bound of
// Options.YAMLLimits; the renderer's errors
// (repository.ErrNotFound for an unknown chart or version);
// repository.ErrNotFound for an unknown repository or revision;
// repository.ErrAlreadyExists when the workspace is taken; an
// error matching [ErrLocalModified] for fast-forward over local changes; a
// *pipeline.RenderError (errors.As) when the render fails.
func (e *Engine) Upgrade(ctx context.Context, repo string, local revision.Key, oldUpstream, newUpstream Ref, workspace string, opts UpgradeOptions) (revision.PackageRevision, error) {
	const op = "upgrade"
	local.Repository = repo
	if err := checkStrategy(op, local, opts.Strategy); err != nil {
		return nil, err
	}
	localMeta, localFiles, err := e.publishedFiles(ctx, op, local)
	if err != nil {
		return nil, err
	}
	key := revision.Key{Repository: repo, Package: localMeta.Key.Package, Workspace: workspace}
	if err := key.ValidateNew(); err != nil {
		return nil, wrap(op, key, err)
	}
	merged, err := e.merge(ctx, op, key, localMeta.Key, localFiles, oldUpstream, newUpstream, opts)
	if err != nil {
		return nil, err
	}
	r, err := e.repo(ctx, op, key)
	if err != nil {
		return nil, err
	}
	local = localMeta.Key
	local.Repository = repo
	return e.create(ctx, op, r, key, merged, MessageUpgrade, opts.Metadata, &revision.Creation{Op: revision.CreatedByUpgrade,
		OldUpstream: e.fullKey(ctx, repo, oldUpstream.key()), NewUpstream: e.fullKey(ctx, repo, newUpstream.key()), Local: &local, Strategy: opts.Strategy})
}

// UpgradeDraft upgrades the Draft revision key selects in place: its
// content, edits included, is three-way merged from oldUpstream to
// newUpstream exactly as [Engine.Upgrade] merges a published revision,
// then rendered and committed onto the draft with the message
// [MessageUpgrade], in one compare-and-swap against the draft as read (a
// draft changed meanwhile is a conflict). opts.Metadata, when not zero,
// replaces the draft's metadata in the same write; zero keeps it. It is
// how a draft follows its upstream without losing the edits made to it
// (Porch's PackageVariant controller upgrades drafts so).
//
// Errors: as Upgrade's for the upstreams and the strategy;
// repository.ErrNotFound for an unknown draft; repository.ErrImmutable when
// key is not a Draft; repository.ErrConflict when it changed meanwhile.
func (e *Engine) UpgradeDraft(ctx context.Context, repo string, key revision.Key, oldUpstream, newUpstream Ref, opts UpgradeOptions) (revision.PackageRevision, error) {
	const op = "upgrade draft"
	key.Repository = repo
	if err := checkStrategy(op, key, opts.Strategy); err != nil {
		return nil, err
	}
	if err := opts.Metadata.Validate(); err != nil {
		return nil, wrap(op, key, err)
	}
	r, err := e.repo(ctx, op, key)
	if err != nil {
		return nil, err
	}
	d, err := r.OpenDraft(ctx, key)
	if err != nil {
		return nil, wrap(op, key, err)
	}
	merged, err := e.merge(ctx, op, d.Key(), d.Key(), d.Files(), oldUpstream, newUpstream, opts)
	if err != nil {
		return nil, err
	}
	// The draft keeps its readiness, in its data and in its Kptfile.
	if merged, err = revision.ProjectReadiness(merged, d.Base().Metadata); err != nil {
		return nil, wrap(op, key, err)
	}
	if merged.Equal(d.Files()) && opts.Metadata.IsZero() {
		return revision.NewWithFiles(d.Base(), d.Files()), nil
	}
	d.SetFiles(merged)
	co := e.commitOptions(MessageUpgrade)
	if !opts.Metadata.IsZero() {
		co = withMetadata(co, keepReadiness(opts.Metadata, d.Base().Metadata))
	}
	pr, err := d.Commit(ctx, co)
	if err != nil {
		return nil, wrap(op, key, err)
	}
	e.opts.Logger.DebugContext(ctx, "upgraded draft", "key", pr.Meta().Key.String(), "version", pr.Meta().Version)
	return pr, nil
}

func checkStrategy(op string, key revision.Key, s revision.UpdateStrategy) error {
	switch s {
	case "", revision.ResourceMerge, revision.FastForward, revision.ForceDeleteReplace, revision.CopyMerge:
		return nil
	}
	return invalid(op, key, "unknown update strategy %q", s)
}

// merge returns the content of an upgrade of localFiles (of revision
// localKey) from oldUpstream to newUpstream, for the revision key: merged
// with the strategy, the Kptfile's upstream and lock naming newUpstream,
// merge keys on every resource, mutated and rendered.
func (e *Engine) merge(ctx context.Context, op string, key, localKey revision.Key, localFiles revision.Files, oldUpstream, newUpstream Ref, opts UpgradeOptions) (revision.Files, error) {
	oldUpstream, newUpstream, helmLock, err := helmRefs(op, localKey, localFiles, oldUpstream, newUpstream)
	if err != nil {
		return revision.Files{}, err
	}
	oldFiles, oldFrom, err := e.readRef(ctx, op, key, oldUpstream, opts)
	if err != nil {
		return revision.Files{}, err
	}
	e.checkLockedChart(ctx, localKey, helmLock, oldFrom)
	newFiles, newFrom, err := e.readRef(ctx, op, key, newUpstream, opts)
	if err != nil {
		return revision.Files{}, err
	}
	for _, f := range []revision.Files{oldFiles, newFiles} {
		if err := revision.CheckYAMLFiles(ctx, f, e.opts.YAMLLimits); err != nil {
			return revision.Files{}, wrap(op, key, err) // hostile upstream content, from any backend
		}
	}
	localUp, err := upstreamRecord(localFiles)
	if err != nil {
		return revision.Files{}, invalid(op, localKey, "local package: %v", err)
	}
	strategy := opts.Strategy
	if strategy == "" {
		strategy = revision.ResourceMerge
		if localUp != nil && localUp.UpdateStrategy != "" {
			strategy = localUp.UpdateStrategy
		}
	}
	oldFiles, newFiles = stampUpstreams(oldFiles, newFiles)
	// Without a Kptfile, the root package file is the local package's own
	// record, like a root Kptfile's upstream: it is kept out of the merge
	// and kept as it is (its upstream and lock are set below). Beside a
	// Kptfile it is an ordinary resource.
	localPF, hasPF := localFiles.Get(revision.PackageFileName)
	hasPF = hasPF && !localFiles.Has(revision.KptfileName)
	if !localFiles.Has(revision.KptfileName) {
		oldFiles, newFiles = oldFiles.Without(revision.PackageFileName), newFiles.Without(revision.PackageFileName)
		localFiles = localFiles.Without(revision.PackageFileName)
	}
	merged, err := update.Merge(oldFiles, newFiles, localFiles, strategy)
	if err != nil {
		return revision.Files{}, wrap(op, localKey, err)
	}
	if hasPF {
		if merged, err = merged.With(revision.PackageFileName, localPF); err != nil {
			return revision.Files{}, wrap(op, localKey, err)
		}
	}
	if !newFrom.generic && newUpstream.Git == nil && newUpstream.Helm == nil && newFrom.repo == newUpstream.key().Repository && localUp != nil && localUp.Git != nil &&
		localUp.Git.Repo != "" && oldUpstream.Git == nil && oldUpstream.key().Repository == newUpstream.key().Repository {
		// Both upstreams in one repository the Engine knows only by name:
		// keep the repo the local package recorded for it.
		newFrom.repo = localUp.Git.Repo
	}
	merged, err = setUpstream(merged, key.Package, localUp, newFrom, strategy)
	if err != nil {
		return revision.Files{}, wrap(op, key, err)
	}
	if merged, err = upstreamid.StampFiles(merged); err != nil {
		return revision.Files{}, wrap(op, key, err)
	}
	return e.finish(ctx, op, key, merged, opts.Mutate)
}

// stampUpstreams returns original and updated with kpt's merge keys on the
// resources of every file that differs between them. The local package
// carries the merge keys Clone and Upgrade stamp on every resource; kpt's
// update adds them to all three packages before it merges. Without them
// every resource of local would look changed, so one deleted upstream
// would never be removed. A file equal in both upstreams merges to the
// local copy whatever its merge keys, so it is left alone, sparing the
// parse of the files an upgrade does not touch. Stamping is best effort,
// as in Clone: a file that does not parse is left as it is.
func stampUpstreams(original, updated revision.Files) (revision.Files, revision.Files) {
	o, u := original.Map(), updated.Map()
	stamp := func(m map[string][]byte, p string) {
		if data, ok := m[p]; ok {
			if s, changed, err := upstreamid.Stamp(data); err == nil && changed {
				m[p] = s
			}
		}
	}
	n := 0
	seen := make(map[string]bool, len(o)+len(u))
	for _, p := range append(original.Paths(), updated.Paths()...) {
		ob, inO := original.Get(p)
		ub, inU := updated.Get(p)
		if seen[p] || !upstreamid.IsResourceFile(p) || (inO && inU && bytes.Equal(ob, ub)) {
			continue
		}
		seen[p] = true
		stamp(o, p)
		stamp(u, p)
		n++
	}
	if n == 0 {
		return original, updated
	}
	so, err1 := revision.NewFiles(o)
	su, err2 := revision.NewFiles(u)
	if err1 != nil || err2 != nil {
		return original, updated // the paths came from Files: cannot happen
	}
	return so, su
}

// UpgradeOptions configure Upgrade and UpgradeDraft.
type UpgradeOptions struct {
	// Strategy is the merge strategy: resource-merge, fast-forward,
	// force-delete-replace or copy-merge; empty means the local Kptfile's
	// upstream.updateStrategy, else resource-merge.
	Strategy revision.UpdateStrategy
	// Metadata becomes the new draft's labels and annotations, written
	// with it (see [Engine.SetMetadata]); for UpgradeDraft, non-zero
	// Metadata replaces the draft's labels and annotations (its readiness
	// stays) and zero keeps them.
	Metadata revision.Metadata
	// Mutate, when set, edits the merged content before it is rendered and
	// committed (see [Mutation]).
	Mutate Mutation
	// Fetcher reads the upstreams given as Ref.Git; required for them.
	Fetcher repository.UpstreamFetcher
	// Charts renders the upstreams given as Ref.Helm; required for them.
	Charts ChartRenderer
}

// publishedFiles reads the files of the numbered published revision key of
// a registered repository, for op (clone, upgrade).
func (e *Engine) publishedFiles(ctx context.Context, op string, key revision.Key) (revision.Meta, revision.Files, error) {
	if key.IsPlaceholder() {
		return revision.Meta{}, revision.Files{}, &PlaceholderError{Op: op, Key: key}
	}
	r, err := e.repo(ctx, op, key)
	if err != nil {
		return revision.Meta{}, revision.Files{}, err
	}
	pr, err := r.Get(ctx, key)
	if err != nil {
		return revision.Meta{}, revision.Files{}, wrap(op, key, err)
	}
	m := pr.Meta()
	if m.Key.IsPlaceholder() {
		return revision.Meta{}, revision.Files{}, &PlaceholderError{Op: op, Key: m.Key}
	}
	if !m.Lifecycle.IsPublished() || m.Key.Revision <= 0 {
		return revision.Meta{}, revision.Files{}, invalid(op, m.Key, "revision is %s; %s needs a published revision", m.Lifecycle, op)
	}
	files, err := pr.Files(ctx)
	if err != nil {
		return revision.Meta{}, revision.Files{}, wrap(op, m.Key, err)
	}
	return m, files, nil
}

// readRef reads the upstream r for op: a published revision of a
// registered repository, a package in a git repository read with
// opts.Fetcher, or a Helm chart rendered with opts.Charts.
func (e *Engine) readRef(ctx context.Context, op string, key revision.Key, r Ref, opts UpgradeOptions) (revision.Files, origin, error) {
	if r.Git != nil && r.Helm != nil {
		return revision.Files{}, origin{}, invalid(op, key, "an upstream Ref is a git upstream or a Helm chart, not both")
	}
	if r.Git != nil {
		return fetchGit(ctx, op, key, *r.Git, opts.Fetcher)
	}
	if r.Helm != nil {
		return fetchHelm(ctx, op, key, *r.Helm, opts.Charts)
	}
	return e.fetchRevision(ctx, op, r.key())
}

// setUpstream points the Kptfile of files at the upstream from; without a
// Kptfile, the package file of the package at pkgPath (created when
// missing). localUp is the upstream the local package recorded; its
// update strategy is kept.
func setUpstream(files revision.Files, pkgPath string, localUp *revision.Upstream, from origin, strategy revision.UpdateStrategy) (revision.Files, error) {
	if localUp != nil && localUp.UpdateStrategy != "" {
		strategy = localUp.UpdateStrategy
	}
	upstream, lock := from.records(strategy)
	b, ok := files.Get(revision.KptfileName)
	if !ok {
		name := path.Base(pkgPath)
		if data, ok := files.Get(revision.PackageFileName); ok {
			if pf, err := revision.ParsePackageFile(data); err == nil && pf.Name != "" {
				name = pf.Name
			}
		}
		return withPackageFile(files, name, upstream, lock)
	}
	kf, err := revision.ParseKptfile(b)
	if err != nil {
		return revision.Files{}, err
	}
	kf.Upstream, kf.UpstreamLock = upstream, lock
	data, err := kf.Encode()
	if err != nil {
		return revision.Files{}, err
	}
	return files.With(revision.KptfileName, data)
}
