package variant

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/fnruntime/celfn"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Options configure Sync, Remove and SyncSet. Every field has a documented
// default, and nil Options are all defaults. The calls only read Options,
// so one value may be shared by concurrent calls.
type Options struct {
	// Repositories are the repositories Sync lists the downstream
	// package's revisions in and Remove and SyncSet search for the
	// revisions a variant owns; nil means the Engine's (its
	// Repositories()), which is what they should be.
	Repositories engine.Repositories
	// Objects supplies the objects of injection, bindings and a
	// PackageVariantSet's objectSelector. Nil means none: injection points
	// stay unfilled and an objectSelector selects nothing.
	Objects ObjectSource
	// Downstreams, when not nil, limits SyncSet and RemoveSet to the
	// downstream repositories it reports true for: the variants of a set
	// whose downstream repository it refuses are neither synced nor
	// removed, and those repositories are not read (their revisions stay
	// as they are, for another writer to keep). Unroll, Sync and Remove
	// ignore it. A controller whose replicas share the repositories
	// passes the ones a replica owns, so that each replica writes only
	// its own and the replicas' passes together cover every one. Nil
	// means every repository.
	Downstreams func(repo string) bool
	// RepositorySpecs describe the repositories for a PackageVariantSet:
	// their labels (repositorySelector) and the CEL variable repository.
	// Nil means every repository of Repositories, without labels.
	RepositorySpecs []repository.Spec
	// Concurrency bounds the variants SyncSet syncs at once; default 4.
	Concurrency int
	// CostLimit bounds the cost of one evaluation of a PackageVariantSet
	// template's CEL expression, in cel-go's runtime cost units (a step
	// each; string and list operations by the size of their operands and
	// results); default celfn.DefaultCostLimit (1,000,000). Past it the
	// expression fails with an *ExprError matching ErrCostLimit and
	// revision.ErrLimit.
	CostLimit uint64
	// MaxCELValueBytes bounds each value a template expression creates
	// with a function that can return more than it was given (string and
	// list concatenation, replace, split, join, format, strings.quote): the
	// result's size, in bytes of a string and 16 bytes an element of a
	// list, is computed from the arguments before the function runs;
	// default celfn.DefaultMaxValueBytes (1 MiB). Past it the expression
	// fails with an *ExprError matching revision.ErrLimit, before the
	// allocation.
	MaxCELValueBytes int64
	// CELTimeout bounds the time of one evaluation of a template
	// expression; default celfn.DefaultTimeout (10 s). The caller's context
	// ends it earlier. Past it the expression fails with an *ExprError
	// matching revision.ErrLimit.
	CELTimeout time.Duration
	// Attempts is how often a sync is tried when it loses a race
	// (repository.ErrConflict or ErrAlreadyExists); default 5.
	Attempts int
	// Now is the clock of the conditions' transition times; default
	// time.Now.
	Now func() time.Time
	// Logger receives a debug record per write. Nil means silent.
	Logger *slog.Logger
}

func (o *Options) withDefaults(e Engine) (Options, error) {
	var out Options
	if o != nil {
		out = *o
	}
	if out.Repositories == nil && e != nil {
		out.Repositories = e.Repositories()
	}
	if out.Repositories == nil {
		return out, fmt.Errorf("variant: %w: an Engine is required", repository.ErrInvalidInput)
	}
	if out.Concurrency <= 0 {
		out.Concurrency = 4
	}
	if out.CostLimit == 0 {
		out.CostLimit = celfn.DefaultCostLimit
	}
	if out.MaxCELValueBytes <= 0 {
		out.MaxCELValueBytes = celfn.DefaultMaxValueBytes
	}
	if out.CELTimeout <= 0 {
		out.CELTimeout = celfn.DefaultTimeout
	}
	if out.Attempts <= 0 {
		out.Attempts = 5
	}
	if out.Now == nil {
		out.Now = time.Now
	}
	if out.Logger == nil {
		out.Logger = slog.New(slog.DiscardHandler)
	}
	return out, nil
}

// Sync brings the downstream of pv to the state its spec asks for, with e,
// and returns what it did. It is idempotent: when nothing changed since the
// last sync, it writes nothing and reports ActionUnchanged.
//
//   - No owned downstream: it clones the upstream into a new draft
//     (workspace "packagevariant-<n>"), or with adoptExisting first adopts the
//     package's unowned revisions by writing its ownership into their
//     Metadata.
//   - Owned drafts exist: each is kept up to date in place; otherwise the
//     latest owned published revision is the downstream.
//   - The downstream's upstream lock names another revision than the
//     upstream selects: a published downstream gets a new draft by
//     Engine.Upgrade; a stale draft is upgraded in place by
//     Engine.UpgradeDraft, keeping its edits (or, when its old upstream
//     cannot be read, replaced by one upgraded from the latest published
//     downstream, or cloned anew when there is none).
//   - The published downstream differs from the desired mutations: a new
//     draft by Engine.Copy.
//
// Every new draft is written once, fully mutated and rendered, with the
// variant's labels and annotations and its ownership in its Metadata: the
// mutations (package context, then pipeline functions, then injection, then
// bindings) run as the engine's Mutation, before its render and single
// commit. Sync never proposes or approves. A pv with a DeletionTimestamp is
// removed (see Remove).
//
// Errors: a *ValidationError (matching repository.ErrInvalidInput) for a bad
// spec, and an error matching repository.ErrNotFound for a missing
// upstream, both with nothing written and the Stalled condition True; the
// engine's errors (a render failure, repository.ErrNotSupported from a
// backend that keeps no metadata, ...) with the Ready condition False.
// Conflicts with concurrent writers are retried (Options.Attempts). The
// Result is never nil.
//
// A damaged repository is never read as one without what it cannot read:
// when the list of the downstream package, or of the upstream package
// whose latest revision is wanted, leaves out damaged revisions
// (repository.ErrDamaged), or the upstream revision is damaged
// (repository.ErrCorrupt), Sync fails with that error and the Ready
// condition False, writing nothing: it neither creates a downstream the
// damage hides nor moves one to an older upstream. Remove, SyncSet and
// RemoveSet, which list every repository, fail the same way when one of
// them is damaged.
func Sync(ctx context.Context, e Engine, pv *PackageVariant, opts *Options) (*Result, error) {
	o, err := opts.withDefaults(e)
	if err != nil {
		res := &Result{Variant: ownerID(pv), Action: ActionUnchanged}
		res.stalled(time.Now(), ReasonValidationError, err)
		return res, err
	}
	if pv.DeletionTimestamp != nil {
		return Remove(ctx, e, pv, opts)
	}
	return syncVariant(ctx, e, pv, o, nil)
}

// syncVariant is Sync with defaulted options. index, when not nil, holds
// the revisions of every package, listed moments ago (see SyncSet); the
// first attempt uses it instead of listing the downstream package.
func syncVariant(ctx context.Context, e Engine, pv *PackageVariant, o Options, index map[[2]string][]revision.PackageRevision) (*Result, error) {
	res := &Result{Variant: ownerID(pv)}
	if err := Validate(pv); err != nil {
		res.Action = ActionUnchanged
		res.stalled(o.Now(), ReasonValidationError, err)
		return res, err
	}
	s := &syncer{e: e, o: o, pv: pv, spec: normalize(pv.Spec), res: res, owner: ownerID(pv), index: index}
	err := s.retry(ctx, func(ctx context.Context) error {
		defer func() { s.index = nil }() // a retry lists afresh
		return s.sync(ctx)
	})
	if res.Action == "" {
		res.Action = ActionUnchanged
	}
	now := o.Now()
	var nf *upstreamError
	switch {
	case errors.As(err, &nf):
		res.stalled(now, ReasonUpstreamNotFound, err)
	case err != nil:
		res.setCondition(now, ConditionStalled, metav1.ConditionFalse, ReasonValid, "all validation checks passed")
		res.failed(now, err)
	default:
		res.setCondition(now, ConditionStalled, metav1.ConditionFalse, ReasonValid, "all validation checks passed")
		res.setCondition(now, ConditionReady, metav1.ConditionTrue, ReasonNoErrors, "successfully ensured downstream package variant")
	}
	return res, err
}

// Remove releases the downstream revisions pv owns, in every repository
// of Options.Repositories, as Porch does when a PackageVariant is deleted:
// with deletionPolicy delete, drafts and proposals are deleted and
// published revisions proposed for deletion (and then orphaned, so a later
// variant of the same name does not take them back); with orphan, the
// ownership is removed from their Metadata and they stay as they are.
// Remove does not validate the rest of the spec; only metadata.name and the
// deletion policy matter. It returns the engine's first error, after trying
// every revision.
func Remove(ctx context.Context, e Engine, pv *PackageVariant, opts *Options) (*Result, error) {
	res := &Result{Variant: ownerID(pv)}
	o, err := opts.withDefaults(e)
	if err != nil {
		res.Action = ActionUnchanged
		res.stalled(time.Now(), ReasonValidationError, err)
		return res, err
	}
	s := &syncer{e: e, o: o, pv: pv, spec: normalize(pv.Spec), res: res, owner: ownerID(pv)}
	err = s.retry(ctx, func(ctx context.Context) error {
		index, err := scanAll(ctx, o.Repositories, nil)
		if err != nil {
			return err
		}
		owned := owners(index, func(md revision.Metadata) bool { return md.Annotations[OwnerAnnotation] == s.owner })
		var first error
		for _, pr := range owned[s.owner] {
			if err := s.deleteOrOrphan(ctx, pr, s.spec.DeletionPolicy); err != nil && first == nil {
				first = err
			}
		}
		return first
	})
	res.released(o.Now(), err, "downstream package revisions released")
	return res, err
}

// normalize returns spec with the default policies filled in.
func normalize(spec PackageVariantSpec) PackageVariantSpec {
	if spec.AdoptionPolicy == "" {
		spec.AdoptionPolicy = AdoptNone
	}
	if spec.DeletionPolicy == "" {
		spec.DeletionPolicy = DeletionPolicyDelete
	}
	return spec
}

// syncer is the state of one Sync or Remove.
type syncer struct {
	e     Engine
	o     Options
	pv    *PackageVariant
	spec  PackageVariantSpec
	res   *Result
	owner string

	index map[[2]string][]revision.PackageRevision // see syncVariant

	upstream      revision.PackageRevision // the resolved upstream
	upstreamFiles revision.Files
	lastWS        int // the highest packagevariant-<n> seen or written
}

// retry runs fn until it does not lose a race, at most o.Attempts times.
func (s *syncer) retry(ctx context.Context, fn func(context.Context) error) error {
	var err error
	for attempt := 1; ; attempt++ {
		err = fn(ctx)
		if err == nil || attempt >= s.o.Attempts ||
			!(errors.Is(err, repository.ErrConflict) || errors.Is(err, repository.ErrAlreadyExists)) {
			return err
		}
		d := time.Duration(attempt*attempt)*5*time.Millisecond + time.Duration(rand.N(int64(5*time.Millisecond)))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
		}
	}
}

// upstreamError reports an upstream revision that cannot be found.
type upstreamError struct{ err error }

func (e *upstreamError) Error() string { return e.err.Error() }
func (e *upstreamError) Unwrap() error { return e.err }

// resolve returns the published revision u selects.
func resolve(ctx context.Context, e Engine, u *Upstream) (revision.PackageRevision, error) {
	var (
		pr  revision.PackageRevision
		err error
	)
	switch {
	case u.Revision > 0:
		pr, err = e.Get(ctx, u.Repo, revision.Key{Package: u.Package, Revision: u.Revision})
	case u.WorkspaceName != "":
		pr, err = e.Get(ctx, u.Repo, revision.Key{Package: u.Package, Workspace: u.WorkspaceName})
	default:
		pr, err = e.Latest(ctx, u.Repo, u.Package)
	}
	if errors.Is(err, repository.ErrDamaged) || errors.Is(err, repository.ErrCorrupt) {
		// Not a missing upstream: one that cannot be read (or whose
		// latest cannot be known) for now.
		return nil, fmt.Errorf("variant: upstream %s/%s: %w", u.Repo, describeUpstream(u), err)
	}
	if err != nil {
		return nil, &upstreamError{fmt.Errorf("variant: upstream %s/%s: %w", u.Repo, describeUpstream(u), err)}
	}
	m := pr.Meta()
	if !m.Lifecycle.IsPublished() || m.Key.IsPlaceholder() {
		return nil, &upstreamError{fmt.Errorf("variant: upstream %s is %s, want a numbered published revision: %w",
			m.Key, m.Lifecycle, repository.ErrNotFound)}
	}
	return pr, nil
}

func describeUpstream(u *Upstream) string {
	switch {
	case u.Revision > 0:
		return fmt.Sprintf("%s@v%d", u.Package, u.Revision)
	case u.WorkspaceName != "":
		return u.Package + "@" + u.WorkspaceName
	}
	return u.Package + "@latest"
}

// sync is one attempt of Sync.
func (s *syncer) sync(ctx context.Context) error {
	up, err := resolve(ctx, s.e, s.spec.Upstream)
	if err != nil {
		return err
	}
	s.upstream = up
	if d := s.spec.Dependencies; d != nil {
		for _, name := range d.ProviderRepos {
			if _, err := s.o.Repositories.Repository(ctx, name); err != nil {
				return fmt.Errorf("variant: %s: provider repository %q: %w", s.owner, name, err)
			}
		}
	}
	if s.upstreamFiles, err = up.Files(ctx); err != nil {
		return fmt.Errorf("variant: read upstream %s: %w", up.Meta().Key, err)
	}
	ds := s.spec.Downstream
	s.res.Targets = nil
	if err := s.cleanOldTargets(ctx); err != nil {
		return err
	}
	revs, err := s.list(ctx, ds.Repo, ds.Package)
	if err != nil {
		return err
	}
	s.lastWS = maxWorkspace(revs)

	var owned []revision.PackageRevision
	for _, pr := range revs {
		md := pr.Meta().Metadata
		switch o := md.Annotations[OwnerAnnotation]; {
		case o == s.owner:
			owned = append(owned, pr)
		case o == "" && s.spec.AdoptionPolicy == AdoptExisting:
			adopted, err := s.setMetadata(ctx, pr, ActionAdopted)
			if err != nil {
				return err
			}
			owned = append(owned, adopted)
		}
	}

	var drafts []revision.PackageRevision
	var latest revision.PackageRevision
	for _, pr := range owned {
		m := pr.Meta()
		if m.Lifecycle.IsPublished() {
			if latest == nil || m.Key.Revision > latest.Meta().Key.Revision {
				latest = pr
			}
		} else {
			drafts = append(drafts, pr)
		}
	}

	switch {
	case len(drafts) > 0:
		for _, d := range drafts {
			if err := s.ensureDraft(ctx, d, latest); err != nil {
				return err
			}
		}
	case latest != nil:
		if err := s.ensurePublished(ctx, latest); err != nil {
			return err
		}
	default:
		pr, err := s.clone(ctx, ActionCreated)
		if err != nil {
			return err
		}
		s.target(pr.Meta().Key)
	}
	return s.dependencies(ctx)
}

// dependencies applies spec.dependencies to the downstream drafts.
func (s *syncer) dependencies(ctx context.Context) error {
	d := s.spec.Dependencies
	if d == nil {
		return nil
	}
	for _, k := range s.res.Targets {
		pr, err := s.e.Get(ctx, k.Repository, k)
		if err != nil {
			return fmt.Errorf("variant: %s: read %s: %w", s.owner, k, err)
		}
		if pr.Meta().Lifecycle.IsPublished() {
			continue
		}
		if len(d.ProviderRepos) > 0 {
			created, _, err := s.e.CloneProviders(ctx, k.Repository, k, &engine.CloneProvidersOptions{Sources: d.ProviderRepos})
			for _, c := range created {
				s.log(ctx, ActionProviderCloned, c.Meta().Key)
				s.res.record(ActionProviderCloned, c.Meta().Key)
			}
			if err != nil {
				return fmt.Errorf("variant: %s: clone the providers %s needs: %w", s.owner, k, err)
			}
		}
		_, out, err := s.e.CheckDependencies(ctx, k.Repository, k, &engine.DependenciesOptions{Gate: d.Gate})
		if err != nil {
			return fmt.Errorf("variant: %s: check the dependencies of %s: %w", s.owner, k, err)
		}
		if out.Meta().Version != pr.Meta().Version {
			s.res.record(ActionUpdated, k)
		}
	}
	return nil
}

// target records k as a downstream target and the result's key.
func (s *syncer) target(k revision.Key) {
	s.res.Key = k
	if !slices.Contains(s.res.Targets, k) {
		s.res.Targets = append(s.res.Targets, k)
	}
}

// list returns the revisions of pkg in repo, without the placeholder.
func (s *syncer) list(ctx context.Context, repo, pkg string) ([]revision.PackageRevision, error) {
	if s.index != nil {
		return s.index[[2]string{repo, pkg}], nil
	}
	r, err := s.o.Repositories.Repository(ctx, repo)
	if err != nil {
		return nil, fmt.Errorf("variant: downstream repository: %w", err)
	}
	revs, err := r.List(ctx, repository.ListOptions{Package: pkg})
	if err != nil {
		return nil, fmt.Errorf("variant: list %s/%s: %w", repo, pkg, err)
	}
	out := revs[:0:0]
	for _, pr := range revs {
		if !pr.Meta().Key.IsPlaceholder() {
			out = append(out, pr)
		}
	}
	return out, nil
}

// cleanOldTargets deletes or orphans the owned revisions of packages the
// status names as targets that the spec no longer targets.
func (s *syncer) cleanOldTargets(ctx context.Context) error {
	ds := s.spec.Downstream
	done := map[[2]string]bool{{ds.Repo, ds.Package}: true}
	for _, t := range s.pv.Status.DownstreamTargets {
		id := [2]string{t.Repository, t.Package}
		if t.Repository == "" || t.Package == "" || done[id] {
			continue
		}
		done[id] = true
		revs, err := s.list(ctx, t.Repository, t.Package)
		if errors.Is(err, repository.ErrNotFound) {
			continue
		} else if err != nil {
			return err
		}
		for _, pr := range revs {
			if pr.Meta().Metadata.Annotations[OwnerAnnotation] == s.owner {
				if err := s.deleteOrOrphan(ctx, pr, s.spec.DeletionPolicy); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// nextWorkspace returns a new "packagevariant-<n>" workspace.
func (s *syncer) nextWorkspace() string {
	s.lastWS++
	return WorkspacePrefix + strconv.Itoa(s.lastWS)
}

func maxWorkspace(revs []revision.PackageRevision) int {
	n := 0
	for _, pr := range revs {
		if rest, ok := strings.CutPrefix(pr.Meta().Key.Workspace, WorkspacePrefix); ok {
			if i, err := strconv.Atoi(rest); err == nil && i > n {
				n = i
			}
		}
	}
	return n
}

// desiredMetadata is cur with the variant's labels, annotations and
// ownership set.
func (s *syncer) desiredMetadata(cur revision.Metadata) revision.Metadata {
	md := cur.Clone()
	if md.Labels == nil {
		md.Labels = map[string]string{}
	}
	if md.Annotations == nil {
		md.Annotations = map[string]string{}
	}
	for k, v := range s.spec.Labels {
		md.Labels[k] = v
	}
	for k, v := range s.spec.Annotations {
		md.Annotations[k] = v
	}
	if set := s.pv.Labels[SetLabel]; set != "" {
		md.Labels[SetLabel] = set
	}
	md.Annotations[OwnerAnnotation] = s.owner
	md.Annotations[DeletionPolicyAnnotation] = string(s.spec.DeletionPolicy)
	return md.Clone()
}

// setMetadata writes the desired metadata of pr when it differs and
// records a as the action; it returns pr as it now is.
func (s *syncer) setMetadata(ctx context.Context, pr revision.PackageRevision, a Action) (revision.PackageRevision, error) {
	m := pr.Meta()
	want := s.desiredMetadata(m.Metadata)
	if want.Equal(m.Metadata) {
		return pr, nil
	}
	out, err := s.e.SetMetadata(ctx, m.Key.Repository, m.Key, want, m.Version)
	if err != nil {
		return nil, fmt.Errorf("variant: %s: set metadata of %s: %w", s.owner, m.Key, err)
	}
	s.log(ctx, a, m.Key)
	s.res.record(a, m.Key)
	return out, nil
}

func (s *syncer) log(ctx context.Context, a Action, k revision.Key) {
	s.o.Logger.DebugContext(ctx, "variant", "variant", s.owner, "action", string(a), "key", k.String())
}

// upstreamRef is the engine reference of the resolved upstream.
func (s *syncer) upstreamRef() engine.Ref {
	k := s.upstream.Meta().Key
	return engine.Ref{Repository: k.Repository, Key: revision.Key{Package: k.Package, Revision: k.Revision}}
}

// clone creates the downstream as a new draft.
func (s *syncer) clone(ctx context.Context, a Action) (revision.PackageRevision, error) {
	ds := s.spec.Downstream
	key := revision.Key{Package: ds.Package, Workspace: s.nextWorkspace()}
	src := s.upstreamRef().Key
	src.Repository = s.upstream.Meta().Key.Repository
	pr, err := s.e.Clone(ctx, ds.Repo, key, engine.CloneSource{Revision: &src}, engine.CloneOptions{
		Metadata: s.desiredMetadata(revision.Metadata{}),
		Mutate:   s.mutation(),
	})
	if err != nil {
		return nil, fmt.Errorf("variant: %s: clone %s into %s/%s: %w", s.owner, src, ds.Repo, ds.Package, err)
	}
	s.log(ctx, a, pr.Meta().Key)
	s.res.record(a, pr.Meta().Key)
	return pr, nil
}

// upToDate reports whether pr was last fetched from the resolved upstream.
func (s *syncer) upToDate(ctx context.Context, pr revision.PackageRevision) (bool, error) {
	info, err := pr.Info(ctx)
	if err != nil {
		return false, fmt.Errorf("variant: read %s: %w", pr.Meta().Key, err)
	}
	var commit string
	switch l := info.UpstreamLock; {
	case l == nil:
		return false, nil
	case l.Git != nil:
		commit = l.Git.Commit
	case l.Generic != nil: // an upstream in a repository that is not git
		commit = l.Generic.ResourceVersion
	default:
		return false, nil
	}
	um := s.upstream.Meta()
	if commit != "" && (commit == um.Commit || commit == um.Version) {
		return true, nil
	}
	ref, ok, err := s.e.UpstreamOf(ctx, info)
	if err != nil {
		return false, fmt.Errorf("variant: resolve the upstream of %s: %w", pr.Meta().Key, err)
	}
	return ok && ref.Repository == um.Key.Repository && ref.Key.Package == um.Key.Package && ref.Key.Revision == um.Key.Revision, nil
}

// oldUpstream returns the published revision pr's upstream lock names, or
// false when it is not a revision of the Engine's repositories (see
// Engine.UpstreamOf) or no longer exists.
func (s *syncer) oldUpstream(ctx context.Context, pr revision.PackageRevision) (engine.Ref, bool) {
	info, err := pr.Info(ctx)
	if err != nil {
		return engine.Ref{}, false
	}
	ref, ok, err := s.e.UpstreamOf(ctx, info)
	if err != nil || !ok {
		return engine.Ref{}, false
	}
	if _, err := s.e.Get(ctx, ref.Repository, ref.Key); err != nil {
		return engine.Ref{}, false
	}
	return ref, true
}

// untracked reports whether pr records no upstream lock at all (in its
// Kptfile or package file). A revision whose content cannot be read is
// not reported as untracked.
func (s *syncer) untracked(ctx context.Context, pr revision.PackageRevision) bool {
	info, err := pr.Info(ctx)
	return err == nil && info.UpstreamLock == nil
}

// upgrade creates a new draft moving the published revision local to the
// resolved upstream.
func (s *syncer) upgrade(ctx context.Context, local revision.PackageRevision) (revision.PackageRevision, error) {
	lk := local.Meta().Key
	opts := engine.UpgradeOptions{Metadata: s.desiredMetadata(revision.Metadata{}), Mutate: s.mutation()}
	old, ok := s.oldUpstream(ctx, local)
	if !ok {
		// Without the old upstream there is no three-way merge: take the
		// new upstream as it is and let the mutations specialise it.
		old = s.upstreamRef()
		opts.Strategy = revision.ForceDeleteReplace
		s.res.Warnings = append(s.res.Warnings, fmt.Sprintf("the old upstream of %s is not available; upgraded by replacing its content", lk))
	}
	pr, err := s.e.Upgrade(ctx, lk.Repository, revision.Key{Package: lk.Package, Revision: lk.Revision}, old, s.upstreamRef(), s.nextWorkspace(), opts)
	if err != nil {
		return nil, fmt.Errorf("variant: %s: upgrade %s to %s: %w", s.owner, lk, s.upstream.Meta().Key, err)
	}
	s.log(ctx, ActionUpgraded, pr.Meta().Key)
	s.res.record(ActionUpgraded, pr.Meta().Key)
	return pr, nil
}

// ensurePublished keeps the published downstream pr up to date.
func (s *syncer) ensurePublished(ctx context.Context, pr revision.PackageRevision) error {
	m := pr.Meta()
	if m.Lifecycle == revision.LifecycleDeletionProposed {
		// Proposed for deletion earlier, but targeted again: keep it.
		restored, err := s.e.Reject(ctx, m.Key.Repository, m.Key)
		if err != nil {
			return fmt.Errorf("variant: %s: restore %s: %w", s.owner, m.Key, err)
		}
		s.res.record(ActionUpdated, m.Key)
		pr, m = restored, restored.Meta()
	}
	ok, err := s.upToDate(ctx, pr)
	if err != nil {
		return err
	}
	if !ok {
		next, err := s.upgrade(ctx, pr)
		if err != nil {
			return err
		}
		s.target(next.Meta().Key)
		return nil
	}
	files, err := pr.Files(ctx)
	if err != nil {
		return fmt.Errorf("variant: read %s: %w", m.Key, err)
	}
	want, err := s.mutate(ctx, files)
	if err != nil {
		return err
	}
	if !want.Equal(files) {
		next, err := s.e.Copy(ctx, m.Key.Repository, revision.Key{Package: m.Key.Package, Revision: m.Key.Revision}, s.nextWorkspace(),
			engine.CopyOptions{Metadata: s.desiredMetadata(revision.Metadata{}), Mutate: s.mutation()})
		if err != nil {
			return fmt.Errorf("variant: %s: copy %s: %w", s.owner, m.Key, err)
		}
		s.log(ctx, ActionCopied, next.Meta().Key)
		s.res.record(ActionCopied, next.Meta().Key)
		s.target(next.Meta().Key)
		return nil
	}
	if _, err := s.setMetadata(ctx, pr, ActionUpdated); err != nil {
		return err
	}
	s.target(m.Key)
	return nil
}

// ensureDraft keeps the owned draft or proposal d up to date; latest is
// the latest owned published revision, or nil.
func (s *syncer) ensureDraft(ctx context.Context, d, latest revision.PackageRevision) error {
	m := d.Meta()
	ok, err := s.upToDate(ctx, d)
	if err != nil {
		return err
	}
	if !ok {
		if m.Lifecycle != revision.LifecycleDraft {
			// Someone is reviewing it: leave it, say why.
			s.warn(fmt.Sprintf("%s is %s and its upstream is not %s; reject it to let the variant upgrade it",
				m.Key, m.Lifecycle, s.upstream.Meta().Key))
			s.target(m.Key)
			return nil
		}
		return s.replaceDraft(ctx, d, latest)
	}
	files, err := d.Files(ctx)
	if err != nil {
		return fmt.Errorf("variant: read %s: %w", m.Key, err)
	}
	want, err := s.mutate(ctx, files)
	if err != nil {
		return err
	}
	cur := d
	if !want.Equal(files) {
		if m.Lifecycle != revision.LifecycleDraft {
			s.res.Warnings = append(s.res.Warnings, fmt.Sprintf(
				"%s is %s and differs from the desired mutations; reject it to let the variant update it", m.Key, m.Lifecycle))
		} else {
			pr, err := s.e.Update(ctx, m.Key.Repository, m.Key, want, engine.UpdateOptions{})
			if err != nil {
				return fmt.Errorf("variant: %s: update %s: %w", s.owner, m.Key, err)
			}
			if pr.Meta().Version != m.Version {
				s.log(ctx, ActionUpdated, m.Key)
				s.res.record(ActionUpdated, m.Key)
			}
			cur = pr
		}
	}
	if _, err := s.setMetadata(ctx, cur, ActionUpdated); err != nil {
		return err
	}
	s.target(m.Key)
	return nil
}

// replaceDraft brings the draft d, whose upstream is stale, to the
// resolved upstream: upgraded in place when its old upstream can be read,
// keeping its edits; else replaced by a new draft upgraded from latest
// when there is a published downstream, cloned anew otherwise.
func (s *syncer) replaceDraft(ctx context.Context, d, latest revision.PackageRevision) error {
	m := d.Meta()
	if old, ok := s.oldUpstream(ctx, d); ok {
		pr, err := s.e.UpgradeDraft(ctx, m.Key.Repository, m.Key, old, s.upstreamRef(),
			engine.UpgradeOptions{Metadata: s.desiredMetadata(m.Metadata), Mutate: s.mutation()})
		if err != nil {
			return fmt.Errorf("variant: %s: upgrade draft %s to %s: %w", s.owner, m.Key, s.upstream.Meta().Key, err)
		}
		s.log(ctx, ActionUpgraded, pr.Meta().Key)
		s.res.record(ActionUpgraded, pr.Meta().Key)
		s.target(pr.Meta().Key)
		return nil
	}
	if s.untracked(ctx, d) {
		// A draft that never had an upstream lock (adopted with
		// adoptExisting, or made by hand): it starts tracking the upstream
		// in place. The three-way merge's original is the upstream itself,
		// so every local file and edit stays; only the upstream record and
		// the mutations are written.
		pr, err := s.e.UpgradeDraft(ctx, m.Key.Repository, m.Key, s.upstreamRef(), s.upstreamRef(),
			engine.UpgradeOptions{Strategy: revision.ResourceMerge, Metadata: s.desiredMetadata(m.Metadata), Mutate: s.mutation()})
		if err != nil {
			return fmt.Errorf("variant: %s: track %s from %s: %w", s.owner, m.Key, s.upstream.Meta().Key, err)
		}
		s.log(ctx, ActionUpgraded, pr.Meta().Key)
		s.res.record(ActionUpgraded, pr.Meta().Key)
		s.target(pr.Meta().Key)
		return nil
	}
	if latest != nil {
		var next revision.PackageRevision
		ok, err := s.upToDate(ctx, latest)
		if err != nil {
			return err
		}
		if ok {
			next, err = s.e.Copy(ctx, m.Key.Repository, latest.Meta().Key, s.nextWorkspace(),
				engine.CopyOptions{Metadata: s.desiredMetadata(revision.Metadata{}), Mutate: s.mutation()})
			if err != nil {
				return fmt.Errorf("variant: %s: copy %s: %w", s.owner, latest.Meta().Key, err)
			}
			s.res.record(ActionUpgraded, next.Meta().Key)
		} else if next, err = s.upgrade(ctx, latest); err != nil {
			return err
		}
		if err := s.delete(ctx, d); err != nil {
			return err
		}
		s.target(next.Meta().Key)
		return nil
	}
	if err := s.delete(ctx, d); err != nil {
		return err
	}
	pr, err := s.clone(ctx, ActionUpgraded)
	if err != nil {
		return err
	}
	s.target(pr.Meta().Key)
	return nil
}

// delete deletes a draft or proposal, or proposes a published revision for
// deletion. A revision already gone is not an error.
func (s *syncer) delete(ctx context.Context, pr revision.PackageRevision) error {
	m := pr.Meta()
	var err error
	switch m.Lifecycle {
	case revision.LifecycleDraft, revision.LifecycleProposed:
		err = s.e.Delete(ctx, m.Key.Repository, m.Key)
	case revision.LifecyclePublished:
		_, err = s.e.ProposeDelete(ctx, m.Key.Repository, m.Key)
	default:
		return nil
	}
	if errors.Is(err, repository.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("variant: %s: delete %s: %w", s.owner, m.Key, err)
	}
	s.log(ctx, ActionDeleted, m.Key)
	s.res.record(ActionDeleted, m.Key)
	return nil
}

// orphan removes the variant's ownership from pr's metadata.
func (s *syncer) orphan(ctx context.Context, key revision.Key) error {
	pr, err := s.e.Get(ctx, key.Repository, key)
	if errors.Is(err, repository.ErrNotFound) {
		return nil
	} else if err != nil {
		return fmt.Errorf("variant: %s: orphan %s: %w", s.owner, key, err)
	}
	m := pr.Meta()
	if m.Metadata.Annotations[OwnerAnnotation] != s.owner {
		return nil
	}
	md := m.Metadata.Clone()
	delete(md.Annotations, OwnerAnnotation)
	delete(md.Annotations, DeletionPolicyAnnotation)
	delete(md.Labels, SetLabel)
	if _, err := s.e.SetMetadata(ctx, key.Repository, m.Key, md, m.Version); err != nil {
		if errors.Is(err, repository.ErrNotFound) {
			return nil
		}
		return fmt.Errorf("variant: %s: orphan %s: %w", s.owner, key, err)
	}
	s.log(ctx, ActionOrphaned, m.Key)
	s.res.record(ActionOrphaned, m.Key)
	return nil
}

// deleteOrOrphan releases pr per policy.
func (s *syncer) deleteOrOrphan(ctx context.Context, pr revision.PackageRevision, policy DeletionPolicy) error {
	m := pr.Meta()
	if policy == DeletionPolicyOrphan {
		return s.orphan(ctx, m.Key)
	}
	if err := s.delete(ctx, pr); err != nil {
		return err
	}
	if m.Lifecycle.IsPublished() {
		// A published revision stays, proposed for deletion; it is no
		// longer the variant's.
		key := m.Key
		return s.orphan(ctx, key)
	}
	return nil
}

// scanAll lists every revision of every repository, by repository and
// package; placeholders are left out. A repository whose list leaves out
// damaged revisions fails it (repository.ErrDamaged): a removal must not
// miss the revisions a variant owns behind the damage, nor a set's sync
// take them for absent.
func scanAll(ctx context.Context, repos engine.Repositories, only func(repo string) bool) (map[[2]string][]revision.PackageRevision, error) {
	names, err := repos.Names(ctx)
	if err != nil {
		return nil, fmt.Errorf("variant: list repositories: %w", err)
	}
	out := map[[2]string][]revision.PackageRevision{}
	for _, name := range names {
		if only != nil && !only(name) {
			continue
		}
		r, err := repos.Repository(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("variant: repository %s: %w", name, err)
		}
		revs, err := r.List(ctx, repository.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("variant: list %s: %w", name, err)
		}
		for _, pr := range revs {
			if k := pr.Meta().Key; !k.IsPlaceholder() {
				id := [2]string{name, k.Package}
				out[id] = append(out[id], pr)
			}
		}
	}
	return out, nil
}

// owners groups the revisions of index whose metadata keep selects by
// their owner.
func owners(index map[[2]string][]revision.PackageRevision, keep func(revision.Metadata) bool) map[string][]revision.PackageRevision {
	out := map[string][]revision.PackageRevision{}
	for _, id := range slices.SortedFunc(maps.Keys(index), func(a, b [2]string) int {
		if c := strings.Compare(a[0], b[0]); c != 0 {
			return c
		}
		return strings.Compare(a[1], b[1])
	}) {
		for _, pr := range index[id] {
			md := pr.Meta().Metadata
			if keep(md) {
				o := md.Annotations[OwnerAnnotation]
				out[o] = append(out[o], pr)
			}
		}
	}
	return out
}
