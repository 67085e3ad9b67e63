package engine

import (
	"bytes"
	"context"
	"path"
	"strconv"

	"github.com/configasdata/cad/internal/update"
	"github.com/configasdata/cad/internal/upstreamid"
	"github.com/configasdata/cad/revision"
)

// MessageUpgrade is the commit message of Upgrade, as Porch writes it.
const MessageUpgrade = "Upgrading revision"

// ErrLocalModified is matched (errors.Is) by the error Upgrade returns
// with the fast-forward strategy when the local package differs from its
// old upstream. The message lists the files, as kpt's does: "local package
// files have been modified: [...]".
var ErrLocalModified = update.ErrLocalModified

// Ref names a published revision in one of the Engine's repositories.
type Ref struct {
	// Repository is the repository's name; when set it overrides
	// Key.Repository.
	Repository string
	// Key selects the revision; it must be a numbered published revision.
	Key revision.Key
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
//   - the Kptfile's upstream and upstreamLock then name newUpstream, as
//     Clone writes them: repo the repository's URL when the Engine's
//     Repositories have a URL(name) string method, else the local
//     Kptfile's upstream repo when both upstreams are in one repository,
//     else the repository name; directory the package path, ref
//     "<package>/v<N>", commit the revision's Meta.Commit (else Version); the local
//     updateStrategy is kept (or set to the strategy when it had none);
//   - every resource gets kpt's merge keys again (the upstream-identifier
//     annotation and kpt-merge comment) where it lacks them.
//
// The content is rendered when the Engine has a Pipeline, then committed
// with the message [MessageUpgrade]. Upgrade makes one write: on any error
// nothing is saved.
//
// Errors: a *PlaceholderError (matching repository.ErrInvalidInput) when
// any of the three is a placeholder revision; repository.ErrInvalidInput
// when one is not Published or DeletionProposed, for an unknown strategy
// or a bad workspace; repository.ErrNotFound for an unknown repository or
// revision; repository.ErrAlreadyExists when the workspace is taken; an
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
	_, oldFiles, err := e.publishedFiles(ctx, op, oldUpstream.key())
	if err != nil {
		return revision.Files{}, err
	}
	newMeta, newFiles, err := e.publishedFiles(ctx, op, newUpstream.key())
	if err != nil {
		return revision.Files{}, err
	}
	var localKf *revision.Kptfile
	if b, ok := localFiles.Get(revision.KptfileName); ok {
		if localKf, err = revision.ParseKptfile(b); err != nil {
			return revision.Files{}, invalid(op, localKey, "local Kptfile: %v", err)
		}
	}
	strategy := opts.Strategy
	if strategy == "" {
		strategy = revision.ResourceMerge
		if localKf != nil && localKf.Upstream != nil && localKf.Upstream.UpdateStrategy != "" {
			strategy = localKf.Upstream.UpdateStrategy
		}
	}
	oldFiles, newFiles = stampUpstreams(oldFiles, newFiles)
	merged, err := update.Merge(oldFiles, newFiles, localFiles, strategy)
	if err != nil {
		return revision.Files{}, wrap(op, localKey, err)
	}
	merged, err = e.setUpstream(merged, localKf, oldUpstream, newMeta, strategy)
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

// setUpstream points the Kptfile of files at the published revision up.
func (e *Engine) setUpstream(files revision.Files, localKf *revision.Kptfile, oldUpstream Ref, up revision.Meta, strategy revision.UpdateStrategy) (revision.Files, error) {
	kf := revision.NewKptfile(path.Base(up.Key.Package))
	if b, ok := files.Get(revision.KptfileName); ok {
		parsed, err := revision.ParseKptfile(b)
		if err != nil {
			return revision.Files{}, err
		}
		kf = parsed
	}
	url := up.Key.Repository
	if localKf != nil && localKf.Upstream != nil && localKf.Upstream.Git != nil &&
		localKf.Upstream.Git.Repo != "" && oldUpstream.key().Repository == up.Key.Repository {
		url = localKf.Upstream.Git.Repo
	}
	if u, ok := e.opts.Repositories.(interface{ URL(name string) string }); ok {
		if s := u.URL(up.Key.Repository); s != "" {
			url = s
		}
	}
	ref := up.Key.Package + "/v" + strconv.Itoa(up.Key.Revision)
	if localKf != nil && localKf.Upstream != nil && localKf.Upstream.UpdateStrategy != "" {
		strategy = localKf.Upstream.UpdateStrategy
	}
	kf.Upstream = &revision.Upstream{
		Type:           revision.GitOrigin,
		Git:            &revision.Git{Repo: url, Directory: up.Key.Package, Ref: ref},
		UpdateStrategy: strategy,
	}
	kf.UpstreamLock = &revision.UpstreamLock{
		Type: revision.GitOrigin,
		Git:  &revision.GitLock{Repo: url, Directory: up.Key.Package, Ref: ref, Commit: contentID(up)},
	}
	data, err := kf.Encode()
	if err != nil {
		return revision.Files{}, err
	}
	return files.With(revision.KptfileName, data)
}
