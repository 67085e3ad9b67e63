package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/configasdata/cad/deps"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// Precondition is an optional guard of a lifecycle operation (Propose,
// Reject, Approve, ProposeDelete, Delete): the operation fails with an
// error matching repository.ErrConflict, writing nothing, unless every
// Precondition accepts the revision as the operation read it. The write is
// a compare-and-swap against that read, so check and write are one atomic
// step. A Precondition returns nil to accept and an error saying why not.
type Precondition func(m revision.Meta) error

// IfVersion is the Precondition that the revision's Meta.Version is version,
// the token a caller last read (a Kubernetes resourceVersion): optimistic
// concurrency for a server or CLI. An empty version always holds.
func IfVersion(version string) Precondition {
	return func(m revision.Meta) error {
		if version != "" && m.Version != version {
			return fmt.Errorf("the revision changed since version %s", version)
		}
		return nil
	}
}

// get reads the revision key selects in repo and checks pre on it.
func (e *Engine) get(ctx context.Context, op, repo string, key revision.Key, pre ...Precondition) (repository.Repository, revision.PackageRevision, error) {
	key.Repository = repo
	r, err := e.repo(ctx, op, key)
	if err != nil {
		return nil, nil, err
	}
	pr, err := r.Get(ctx, key)
	if err != nil {
		return nil, nil, wrap(op, key, err)
	}
	for _, p := range pre {
		if p == nil {
			continue
		}
		if err := p(pr.Meta()); err != nil {
			return nil, nil, repository.Errorf(op, repo, pr.Meta().Key, repository.ErrConflict, "%v", err)
		}
	}
	return r, pr, nil
}

// move changes pr's lifecycle to to, guarded by the version read.
func (e *Engine) move(ctx context.Context, op string, r repository.Repository, pr revision.PackageRevision, to revision.Lifecycle) (revision.PackageRevision, error) {
	m := pr.Meta()
	out, err := r.UpdateLifecycle(ctx, m.Key, to, e.updateOptions(m.Version))
	if err != nil {
		return nil, wrap(op, m.Key, err)
	}
	e.opts.Logger.DebugContext(ctx, op, "key", out.Meta().Key.String(), "from", string(m.Lifecycle), "to", string(to))
	return out, nil
}

// transition reads key and moves it from lifecycle from to to.
func (e *Engine) transition(ctx context.Context, op, repo string, key revision.Key, from, to revision.Lifecycle, pre []Precondition) (revision.PackageRevision, error) {
	r, pr, err := e.get(ctx, op, repo, key, pre...)
	if err != nil {
		return nil, err
	}
	if l := pr.Meta().Lifecycle; l != from {
		return nil, wrap(op, pr.Meta().Key, &revision.TransitionError{From: l, To: to})
	}
	return e.move(ctx, op, r, pr, to)
}

// Propose moves the Draft revision key selects to Proposed. When the
// Engine has a Pipeline the draft is first re-rendered, as Porch does, and
// saved if that changed it; a failed render leaves it a Draft, unchanged.
// Its revision-level readiness gates and conditions are first projected
// into its Kptfile (see revision.ProjectReadiness) and saved the same way.
//
// Errors: repository.ErrNotFound, repository.ErrInvalidTransition when it is
// not a Draft, repository.ErrConflict when it changed meanwhile, the
// *pipeline.RenderError (errors.As) when the render fails.
func (e *Engine) Propose(ctx context.Context, repo string, key revision.Key, pre ...Precondition) (revision.PackageRevision, error) {
	const op = "propose"
	r, pr, err := e.get(ctx, op, repo, key, pre...)
	if err != nil {
		return nil, err
	}
	m := pr.Meta()
	if m.Lifecycle != revision.LifecycleDraft {
		return nil, wrap(op, m.Key, &revision.TransitionError{From: m.Lifecycle, To: revision.LifecycleProposed})
	}
	if e.opts.Pipeline != nil || len(m.ReadinessGates) > 0 || len(m.Conditions) > 0 {
		d, err := r.OpenDraft(ctx, m.Key)
		if err != nil {
			return nil, wrap(op, m.Key, err)
		}
		// What is proposed records the revision's readiness in its Kptfile.
		projected, err := revision.ProjectReadiness(d.Files(), m.Metadata)
		if err != nil {
			return nil, wrap(op, m.Key, err)
		}
		rendered, err := e.render(ctx, projected)
		if err != nil {
			return nil, wrap(op, m.Key, err)
		}
		if !rendered.Equal(d.Files()) {
			d.SetFiles(rendered)
			if pr, err = d.Commit(ctx, e.commitOptions(MessageRender)); err != nil {
				return nil, wrap(op, m.Key, err)
			}
		} else if d.Base().Version != m.Version {
			return nil, repository.Errorf(op, repo, m.Key, repository.ErrConflict, "the draft changed while it was being proposed")
		}
	}
	return e.move(ctx, op, r, pr, revision.LifecycleProposed)
}

// Reject moves a Proposed revision back to Draft, or a DeletionProposed
// revision back to Published.
//
// Errors: repository.ErrNotFound, repository.ErrInvalidTransition for any
// other lifecycle, repository.ErrConflict when it changed meanwhile.
func (e *Engine) Reject(ctx context.Context, repo string, key revision.Key, pre ...Precondition) (revision.PackageRevision, error) {
	const op = "reject"
	r, pr, err := e.get(ctx, op, repo, key, pre...)
	if err != nil {
		return nil, err
	}
	switch l := pr.Meta().Lifecycle; l {
	case revision.LifecycleProposed:
		return e.move(ctx, op, r, pr, revision.LifecycleDraft)
	case revision.LifecycleDeletionProposed:
		return e.move(ctx, op, r, pr, revision.LifecyclePublished)
	default:
		return nil, wrap(op, pr.Meta().Key, fmt.Errorf("%w: a %s revision cannot be rejected", repository.ErrInvalidTransition, l))
	}
}

// Approve publishes the Proposed revision key selects: the repository gives
// it the next revision number of its package in one atomic write, and the
// returned revision has that number. Approval is refused while any
// readiness gate of the revision lacks a condition of that type with
// status True. Gates and conditions are those of the Kptfile
// (info.readinessGates, status.conditions) merged with the revision data
// set by [Engine.UpdateReadiness] (see [Readiness]). The check and the
// publish are one compare-and-swap against the revision as read, so a
// condition changed concurrently (by another process too) makes Approve
// fail with a conflict instead of publishing a revision whose gate was not
// satisfied; a retry checks again.
//
// A revision that carries the dependency gate deps.ConditionType (see
// [Engine.CheckDependencies]) has its requirements resolved again first,
// with [Options].Dependencies, so that neither a stale False nor a stale
// True decides: the fresh condition is recorded on the proposal when it
// changed (judged in memory where the repository keeps no revision data
// for proposals) and then checked with the other gates.
//
// Errors: a *GatesError matching [ErrNotReady] naming the unsatisfied
// gates; repository.ErrInvalidTransition when it is not Proposed;
// repository.ErrNotFound; repository.ErrConflict when it changed since it
// was read, or another approval took the number (retry with
// [RetryOnConflict]); repository.ErrInvalidInput when its Kptfile does not
// parse.
func (e *Engine) Approve(ctx context.Context, repo string, key revision.Key, pre ...Precondition) (revision.PackageRevision, error) {
	const op = "approve"
	r, pr, err := e.get(ctx, op, repo, key, pre...)
	if err != nil {
		return nil, err
	}
	m := pr.Meta()
	if m.Lifecycle != revision.LifecycleProposed {
		return nil, wrap(op, m.Key, &revision.TransitionError{From: m.Lifecycle, To: revision.LifecyclePublished})
	}
	info, err := Readiness(ctx, pr)
	if err != nil {
		return nil, wrap(op, m.Key, err)
	}
	if slices.ContainsFunc(info.ReadinessGates, func(g revision.ReadinessGate) bool { return g.ConditionType == deps.ConditionType }) {
		if pr, info, err = e.recheckDependencies(ctx, op, r, pr, info); err != nil {
			return nil, err
		}
		m = pr.Meta()
	}
	if gates := info.Unsatisfied(); len(gates) > 0 {
		return nil, &GatesError{Key: m.Key, Gates: gates}
	}
	// The publish is a compare-and-swap against m.Version, which covers
	// the content and the revision data the check read: a condition
	// changed since makes it fail with ErrConflict.
	return e.move(ctx, op, r, pr, revision.LifecyclePublished)
}

// ProposeDelete moves the Published revision key selects (the placeholder
// included) to DeletionProposed.
//
// Errors: repository.ErrNotFound, repository.ErrInvalidTransition when it is
// not Published, repository.ErrConflict when it changed meanwhile.
func (e *Engine) ProposeDelete(ctx context.Context, repo string, key revision.Key, pre ...Precondition) (revision.PackageRevision, error) {
	return e.transition(ctx, "propose delete", repo, key, revision.LifecyclePublished, revision.LifecycleDeletionProposed, pre)
}

// Delete removes the revision key selects. Drafts and proposals are deleted
// directly; a published revision only after ProposeDelete. Deleting the
// placeholder revision removes the package from the branch.
//
// A revision (not the placeholder) is not deleted while another revision,
// in any repository of the Engine's Repositories, was created from it, as
// Porch counts references: a revision whose creation record
// (Meta.Creation) is a clone with it as source, or an upgrade with it as
// new upstream. Copies and old upstreams do not count, nor do Kptfiles:
// a revision cloned by hand or with the kpt CLI does not keep its
// upstream. Options.ProtectKptfileUpstreams adds cad's stricter rule for
// numbered published revisions: it is also kept while a non-placeholder
// revision's Kptfile upstreamLock.git (or, without a lock, upstream.git)
// has directory equal to the package path and either ref
// "<package>/v<N>" or a commit equal to the revision's Meta.Commit or
// Version. The repository URL is not compared, so a same-named package
// elsewhere can block a delete; that errs on the side of keeping data. It
// reads every revision's Kptfile.
//
// The check lists every repository; on an Engine from
// WithReferenceSnapshot, a Draft's or Proposed revision's check uses that
// Engine's one listing instead.
//
// Errors: repository.ErrImmutable for a Published revision not proposed
// for deletion; a *ReferencedError (matching repository.ErrImmutable) when
// it is referenced; repository.ErrNotFound; repository.ErrConflict when it
// changed meanwhile. A repository that cannot be resolved or listed
// during the upstream check (one whose registration is refused, a remote
// that is down) is left out of it, and logged: as in Porch, whose check
// sees only the repositories it could load, one broken repository does
// not stall the deletes of every other; of a damaged repository the
// revisions it could read count.
func (e *Engine) Delete(ctx context.Context, repo string, key revision.Key, pre ...Precondition) error {
	const op = "delete"
	r, pr, err := e.get(ctx, op, repo, key, pre...)
	if err != nil {
		return err
	}
	m := pr.Meta()
	if m.Lifecycle == revision.LifecyclePublished {
		return repository.Errorf(op, repo, m.Key, repository.ErrImmutable,
			"published package revisions must be proposed for deletion before they are deleted")
	}
	snap := e.refs
	if !m.Key.IsPlaceholder() {
		var by []revision.Key
		var err error
		if snap != nil && (m.Lifecycle == revision.LifecycleDraft || m.Lifecycle == revision.LifecycleProposed) {
			k := m.Key
			k.Repository = repo
			by, err = snap.referencedFrom(ctx, e, k)
		} else {
			by, err = e.referencedBy(ctx, m)
		}
		if err != nil {
			return wrap(op, m.Key, err)
		}
		if len(by) > 0 {
			return &ReferencedError{Key: m.Key, By: by}
		}
	}
	if err := r.Delete(ctx, m.Key, e.updateOptions(m.Version)); err != nil {
		return wrap(op, m.Key, err)
	}
	if snap != nil {
		k := m.Key
		k.Repository = repo
		snap.deleted(k)
	}
	e.opts.Logger.DebugContext(ctx, "deleted", "key", m.Key.String())
	return nil
}

// referencedBy returns the revisions that name target as upstream (see
// Delete): as Porch counts them, those created by a clone of target or
// by an upgrade whose new upstream is target, in any repository; with
// Options.ProtectKptfileUpstreams, also those whose Kptfile names a
// published target as upstream.
func (e *Engine) referencedBy(ctx context.Context, target revision.Meta) ([]revision.Key, error) {
	kptfiles := e.opts.ProtectKptfileUpstreams && target.Key.Revision > 0
	ref := target.Key.Package + "/v" + strconv.Itoa(target.Key.Revision)
	var by []revision.Key
	err := e.eachRevision(ctx, func(name string, pr revision.PackageRevision) {
		m := pr.Meta()
		if name == target.Key.Repository && m.Key == target.Key {
			return
		}
		if createdFrom(m.Creation, target.Key) {
			by = append(by, m.Key)
			return
		}
		if !kptfiles {
			return
		}
		info, err := pr.Info(ctx)
		if err != nil {
			return // an unparsable Kptfile names no upstream
		}
		if namesUpstream(info, target, ref) {
			by = append(by, m.Key)
		}
	})
	return by, err
}

// eachRevision calls fn with every revision but the placeholders of every
// repository of the Engine's Repositories, and the repository's name. A
// repository that cannot be resolved or listed is left out (logged); of a
// damaged one, the revisions its List could read are passed. Its errors
// are those of Names and ctx's.
func (e *Engine) eachRevision(ctx context.Context, fn func(repo string, pr revision.PackageRevision)) error {
	names, err := e.opts.Repositories.Names(ctx)
	if err != nil {
		return err
	}
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return err
		}
		r, err := e.opts.Repositories.Repository(ctx, name)
		if err != nil {
			e.opts.Logger.WarnContext(ctx, "upstream check: repository left out, it cannot be opened", "repository", name, "err", err)
			continue
		}
		revs, err := r.List(ctx, repository.ListOptions{})
		if err != nil && repository.Damage(err) == nil {
			e.opts.Logger.WarnContext(ctx, "upstream check: repository left out, it cannot be listed", "repository", name, "err", err)
			continue
		}
		for _, pr := range revs {
			if !pr.Meta().Key.IsPlaceholder() {
				fn(name, pr)
			}
		}
	}
	return nil
}

// createdFrom reports whether creation record c names target as Porch's
// delete check counts it: the source of a clone, or the new upstream of
// an upgrade. Records name revisions by repository, package and
// workspace.
func createdFrom(c *revision.Creation, target revision.Key) bool {
	if c == nil {
		return false
	}
	var k *revision.Key
	switch c.Op {
	case revision.CreatedByClone:
		k = c.Source
	case revision.CreatedByUpgrade:
		k = c.NewUpstream
	}
	if k == nil {
		return false
	}
	return k.Repository == target.Repository && k.Package == target.Package &&
		(k.Workspace == target.Workspace || (k.Workspace == "" && k.Revision != 0 && k.Revision == target.Revision))
}

func namesUpstream(info revision.Info, target revision.Meta, ref string) bool {
	_, dir, gitRef, commit, ok := upstreamGit(info)
	if !ok {
		return false
	}
	// The lock names the package's directory; its commit (or its ref)
	// names the revision.
	dir = strings.Trim(path.Clean("/"+dir), "/")
	if dir != target.Key.Package {
		return false
	}
	return gitRef == ref || (commit != "" && (commit == contentID(target) || commit == target.Version))
}

// Latest returns the published revision (Published or DeletionProposed, as
// Porch counts them) of package pkg in repo with the highest revision
// number; the placeholder never counts, and a revision proposed for
// deletion stays the latest until it is deleted. It returns an error
// matching repository.ErrNotFound when there is none.
func (e *Engine) Latest(ctx context.Context, repo, pkg string) (revision.PackageRevision, error) {
	const op = "latest"
	key := revision.Key{Repository: repo, Package: pkg}
	r, err := e.repo(ctx, op, key)
	if err != nil {
		return nil, err
	}
	revs, err := r.List(ctx, repository.ListOptions{Package: pkg, Lifecycles: []revision.Lifecycle{revision.LifecyclePublished, revision.LifecycleDeletionProposed}})
	if err != nil {
		return nil, wrap(op, key, err)
	}
	var best revision.PackageRevision
	for _, pr := range revs {
		n := pr.Meta().Key.Revision
		if n > 0 && (best == nil || n > best.Meta().Key.Revision) {
			best = pr
		}
	}
	if best == nil {
		return nil, repository.Errorf(op, repo, key, repository.ErrNotFound, "package %q has no published revision", pkg)
	}
	return best, nil
}

// List returns the revisions opts selects in repository repo, in
// repository.SortRevisions order. It returns an error matching
// repository.ErrNotFound for an unknown repository, and the repository's
// List error otherwise: with a *repository.DamageError (matching
// repository.ErrDamaged) the revisions the repository could read come
// with it, and are not the whole repository.
//
// Every Engine operation that acts on what a list finds, or does not find
// (Latest, Init's check that a path is free, the deletion checks, the
// dependency clones), fails with the damage instead: a damaged repository
// never reads as one without the revisions it cannot read.
func (e *Engine) List(ctx context.Context, repo string, opts repository.ListOptions) ([]revision.PackageRevision, error) {
	const op = "list"
	key := revision.Key{Repository: repo}
	r, err := e.repo(ctx, op, key)
	if err != nil {
		return nil, err
	}
	revs, err := r.List(ctx, opts)
	if err != nil {
		if repository.Damage(err) == nil {
			revs = nil
		}
		return revs, wrap(op, key, err)
	}
	return revs, nil
}

// Repositories returns the Repositories the Engine was built with, for
// callers (the variant package, a server) that need the same set.
func (e *Engine) Repositories() Repositories { return e.opts.Repositories }

// YAMLLimits returns the bounds the Engine holds each YAML file it reads to
// (Options.YAMLLimits, nil for the defaults of revision.YAMLLimits), for
// callers (the variant package) that read the same packages and must hold
// them to the same bounds. It never fails.
func (e *Engine) YAMLLimits() *revision.YAMLLimits { return e.opts.YAMLLimits }

// RetryOnConflict calls fn until it returns an error that does not match
// repository.ErrConflict, or attempts calls have been made (at least one),
// waiting a short, growing, jittered delay between calls. fn should re-read
// what it changes, as every Engine method does. It returns fn's last
// error, or ctx's error when ctx is done while waiting.
func RetryOnConflict(ctx context.Context, attempts int, fn func() error) error {
	delay := 5 * time.Millisecond
	for i := 1; ; i++ {
		err := fn()
		if err == nil || !errors.Is(err, repository.ErrConflict) || i >= attempts {
			return err
		}
		wait := delay/2 + rand.N(delay)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (retry stopped: %w)", err, ctx.Err())
		case <-t.C:
		}
		delay = min(2*delay, 500*time.Millisecond)
	}
}

// recheckDependencies resolves the requirements of the proposal pr again
// for Approve and records the condition when it changed. It returns the
// revision and readiness to judge.
func (e *Engine) recheckDependencies(ctx context.Context, op string, r repository.Repository, pr revision.PackageRevision, info revision.Info) (revision.PackageRevision, revision.Info, error) {
	m := pr.Meta()
	res, err := e.dependencies(ctx, op, pr, e.opts.Dependencies)
	if err != nil {
		return nil, revision.Info{}, err
	}
	c := res.Condition()
	i := slices.IndexFunc(info.Conditions, func(x revision.Condition) bool { return x.Type == c.Type })
	if i >= 0 && info.Conditions[i].Status == c.Status && info.Conditions[i].Reason == c.Reason && info.Conditions[i].Message == c.Message {
		return pr, info, nil
	}
	out, err := e.updateReadiness(ctx, op, m.Key.Repository, m.Key, ReadinessOptions{Conditions: []revision.Condition{c}, Version: m.Version})
	switch {
	case errors.Is(err, repository.ErrNotSupported):
		judged := info
		judged.Conditions = slices.Clone(info.Conditions)
		if i >= 0 {
			judged.Conditions[i] = c
		} else {
			judged.Conditions = append(judged.Conditions, c)
		}
		return pr, judged, nil
	case err != nil:
		return nil, revision.Info{}, err
	}
	info, err = Readiness(ctx, out)
	if err != nil {
		return nil, revision.Info{}, wrap(op, m.Key, err)
	}
	return out, info, nil
}
