package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	porchv1alpha2 "github.com/configasdata/cad/api/porch/v1alpha2"
	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/examples/internal/porchapi"
	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
)

// prReconciler reconciles porch.kpt.dev/v1alpha2 PackageRevisions: it
// applies spec.source once, drives spec.lifecycle through the engine,
// guards deletion with a finalizer, and writes what the repository holds
// into the status.
type prReconciler struct {
	client client.Client
	repos  *repoSet
	// retry is how long a revision waits for its Repository to open.
	retry time.Duration
	// events records why a deletion was refused; nil records none.
	events events.EventRecorder
	// rediscover, when set, asks for the discovery of a repository the
	// reconciler wrote to, so that what the write changed for other
	// objects (the latest-revision label, a new placeholder, a deleted
	// revision) reaches them at once rather than at the next poll.
	rediscover func(ctx context.Context, ns, repo string)
	// shards is this replica's sharder; nil without sharding.
	shards *sharder
}

// shardKey is the sharder's key of the PackageRevision of req (the
// namespace/name of its repository), "" for one gone. A shard label that
// names another shard than its repository's (edited by hand) is
// corrected here, by whichever replica sees the object: the replica
// holding the right shard would not see it otherwise (prcache.go).
func (r *prReconciler) shardKey(ctx context.Context, req reconcile.Request) (string, error) {
	var pr porchv1alpha2.PackageRevision
	if err := r.client.Get(ctx, req.NamespacedName, &pr); err != nil {
		return "", client.IgnoreNotFound(err)
	}
	k, v := r.shards.prLabel(pr.Namespace, pr.Spec.RepositoryName)
	if have, ok := pr.Labels[k]; k != "" && ok && have != v {
		p := client.MergeFrom(pr.DeepCopy())
		pr.Labels[k] = v
		if err := r.client.Patch(ctx, &pr, p); err != nil {
			return "", client.IgnoreNotFound(err)
		}
	}
	return repoKey(pr.Namespace, pr.Spec.RepositoryName), nil
}

// ReasonDeleteFailed is the reason of the Ready condition of an object
// whose revision the repository refused to delete.
const ReasonDeleteFailed = "DeleteFailed"

// wrote reports a write to repository repo of namespace ns (see
// rediscover).
func (r *prReconciler) wrote(ctx context.Context, ns, repo string) {
	if r.rediscover != nil {
		r.rediscover(ctx, ns, repo)
	}
}

// ApprovedByAnnotation names the user who moved a PackageRevision to
// Published. The admission policies of deploy/approved-by.yaml set it from
// the request's user and keep clients from changing it; the operator
// approves with that user as the author, so that status.publishedBy
// records who approved, as Porch records the approving user. Without it
// the operator's own identity is recorded.
const ApprovedByAnnotation = "cad.configasdata.dev/approved-by"

// permanent is an error retrying will not fix: bad input in the object.
type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }
func (p permanent) Unwrap() error { return p.err }

// setup registers the reconciler; the objects sent on touch are
// reconciled too. With sh, a PackageRevision is reconciled only by the
// replica holding the shard of its repository (spec.repository).
func (r *prReconciler) setup(mgr ctrl.Manager, touch <-chan event.GenericEvent, sh *sharder) error {
	b := ctrl.NewControllerManagedBy(mgr).
		For(&porchv1alpha2.PackageRevision{}).
		WatchesRawSource(source.Channel(touch, &handler.EnqueueRequestForObject{})).
		Named("packagerevision")
	var rec reconcile.Reconciler = retryConflicts{r}
	if sh != nil {
		keyOf := func(pr *porchv1alpha2.PackageRevision) string { return repoKey(pr.Namespace, pr.Spec.RepositoryName) }
		list := func(ctx context.Context) ([]shardItem, error) {
			var l porchv1alpha2.PackageRevisionList
			if err := r.client.List(ctx, &l); err != nil {
				return nil, err
			}
			out := make([]shardItem, 0, len(l.Items))
			for i := range l.Items {
				out = append(out, shardItem{req: reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&l.Items[i])},
					key: keyOf(&l.Items[i])})
			}
			return out, nil
		}
		b = b.WatchesRawSource(sh.watch("packagerevision", list, nil))
		if sh.caches != nil {
			// The objects of the shards held are in caches of their own.
			b = b.WatchesRawSource(source.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
				return sh.caches.onEvent(ctx, func(o client.Object) {
					q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(o)})
				})
			}))
		}
		r.shards = sh
		rec = sh.gate(r.shardKey, rec)
	}
	return b.Complete(rec)
}

func (r *prReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var pr porchv1alpha2.PackageRevision
	if err := r.client.Get(ctx, req.NamespacedName, &pr); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	orig := pr.DeepCopy()
	repoName := pr.Spec.RepositoryName
	key := revision.Key{Repository: repoName, Package: pr.Spec.PackageName, Workspace: pr.Spec.WorkspaceName}

	if want := porchapi.PackageRevisionName(repoName, key.Package, key.Workspace); pr.Name != want {
		// Not the object of its revision: it never acts on the
		// repository, not even when deleted.
		if pr.DeletionTimestamp != nil {
			return ctrl.Result{}, r.dropFinalizer(ctx, &pr)
		}
		r.setReady(&pr, metav1.ConditionFalse, porchv1alpha2.ReasonFailed,
			fmt.Sprintf("the object of this revision must be named %q (<repository>.<package with / as .>.<workspace>)", want))
		return ctrl.Result{}, r.writeStatus(ctx, orig, &pr)
	}

	// The repositories this reconcile reads stay open until it ends.
	sc := r.repos.scope()
	defer sc.done()
	repo, repoObj, err := sc.get(ctx, pr.Namespace, repoName)
	if err != nil {
		if pr.DeletionTimestamp != nil && repoObj == nil && errors.Is(err, repository.ErrNotFound) {
			// The Repository object is gone: nothing in git to guard.
			// (A Repository that exists but does not open guards its
			// revisions until it opens again.)
			return ctrl.Result{}, r.dropFinalizer(ctx, &pr)
		}
		r.setReady(&pr, metav1.ConditionFalse, porchv1alpha2.ReasonPending, "repository: "+err.Error())
		return ctrl.Result{RequeueAfter: r.retry}, r.writeStatus(ctx, orig, &pr)
	}
	spec, _ := r.repos.spec(pr.Namespace, repoName)
	e, err := sc.engine(pr.Namespace)
	if err != nil {
		return ctrl.Result{}, err
	}

	rev, err := e.Get(ctx, repoName, key)
	if err != nil && !errors.Is(err, repository.ErrNotFound) {
		return ctrl.Result{}, err
	}
	found := err == nil
	before := ""
	if found {
		before = rev.Meta().Version
	}

	if pr.DeletionTimestamp != nil {
		if !found && (pr.Spec.Source == nil || realised(&pr)) {
			// Not found is proof of nothing while refs are damaged: the
			// revision may be behind them, and the finalizer guards it.
			why, err := mayHold(ctx, repo, key)
			if err != nil {
				return ctrl.Result{}, err
			}
			if why != "" {
				return r.deleteRefused(ctx, orig, &pr, key, errors.New(why))
			}
		}
		return r.finalize(ctx, e, orig, &pr, rev, found)
	}
	shardKey, shard := r.shards.prLabel(pr.Namespace, repoName)
	if !controllerutil.ContainsFinalizer(&pr, porchv1alpha2.Finalizer) || pr.Labels[porchv1alpha2.RepositoryLabel] != repoName ||
		shardKey != "" && pr.Labels[shardKey] != shard {
		// The finalizer guards the repository; the label and the owner
		// reference make the object one of its Repository's, and the
		// shard label puts it in the cache of its shard (prcache.go).
		controllerutil.AddFinalizer(&pr, porchv1alpha2.Finalizer)
		if pr.Labels == nil {
			pr.Labels = map[string]string{}
		}
		pr.Labels[porchv1alpha2.RepositoryLabel] = repoName
		if shardKey != "" {
			pr.Labels[shardKey] = shard
		}
		if err := controllerutil.SetOwnerReference(repoObj, &pr, r.client.Scheme()); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{}, r.client.Update(ctx, &pr)
	}
	var rendered *metav1.Condition
	if !found {
		if pr.Spec.Source == nil || realised(&pr) {
			// Discovered, or created before, and now gone from the
			// repository: the object goes too, unless the repository
			// may still hold it (a damaged repository never reads as
			// empty): then it stays, not Ready, and is looked at again.
			why, err := mayHold(ctx, repo, key)
			if err != nil {
				return ctrl.Result{}, err
			}
			if why != "" {
				r.setReady(&pr, metav1.ConditionFalse, porchv1alpha2.ReasonPending, why)
				return ctrl.Result{RequeueAfter: r.retry}, r.writeStatus(ctx, orig, &pr)
			}
			return ctrl.Result{}, client.IgnoreNotFound(r.client.Delete(ctx, &pr))
		}
		rev, err = r.applySource(ctx, e, &pr, key)
		if err == nil {
			ctrl.LoggerFrom(ctx).V(1).Info("created package revision", "revision", rev.Meta().Key.String(), "source", creationSource(&pr, nil))
		}
		if err != nil {
			var re *pipeline.RenderError
			if errors.As(err, &re) {
				rendered = &metav1.Condition{Type: porchv1alpha2.ConditionRendered, Status: metav1.ConditionFalse,
					Reason: porchv1alpha2.ReasonRenderFailed, Message: err.Error()}
				meta.SetStatusCondition(&pr.Status.Conditions, *rendered)
			}
			return r.fail(ctx, orig, &pr, err)
		}
	}

	o, err := observe(ctx, repo, spec, rev)
	if err != nil {
		return ctrl.Result{}, err
	}

	// The object is settled when its last spec was realised. Then a
	// difference from the repository was made there (by another client
	// of the repository), and the spec follows it; otherwise the
	// repository follows the spec.
	if r.settled(&pr) && (string(pr.Spec.Lifecycle) != string(o.meta.Lifecycle) || !sameGates(pr.Spec.ReadinessGates, o.gates) ||
		!samePackageMetadata(pr.Spec.PackageMetadata, o.metadata)) {
		pr.Spec.Lifecycle = porchv1alpha2.Lifecycle(o.meta.Lifecycle)
		pr.Spec.ReadinessGates = o.gates
		pr.Spec.PackageMetadata = o.metadata
		return ctrl.Result{}, r.client.Update(ctx, &pr)
	}

	// The Kptfile's labels and annotations of a draft: the object's,
	// when it names any (nil leaves the Kptfile's as they are).
	if o.meta.Lifecycle == revision.LifecycleDraft && pr.Spec.PackageMetadata != nil &&
		!samePackageMetadata(pr.Spec.PackageMetadata, o.metadata) {
		if rev, err = r.writePackageMetadata(ctx, e, rev, pr.Spec.PackageMetadata); err != nil {
			return r.fail(ctx, orig, &pr, err)
		}
		if o, err = observe(ctx, repo, spec, rev); err != nil {
			return ctrl.Result{}, err
		}
	}

	// Readiness gates and conditions of an unpublished revision: the
	// object's are written to the Kptfile.
	if !o.meta.Lifecycle.IsPublished() {
		ro := engine.ReadinessOptions{Version: o.meta.Version}
		if !sameGates(pr.Spec.ReadinessGates, o.gates) {
			ro.SetGates = true
			for _, g := range pr.Spec.ReadinessGates {
				ro.Gates = append(ro.Gates, revision.ReadinessGate{ConditionType: g.ConditionType})
			}
		}
		if pr.Status.ObservedVersion == o.meta.Version {
			// The status was read from this very version: what differs
			// was set on the object since.
			ro.Conditions = changedConditions(pr.Status.PackageConditions, o.info.Conditions)
		}
		if ro.SetGates || len(ro.Conditions) > 0 {
			if rev, err = e.UpdateReadiness(ctx, repoName, o.meta.Key, ro); err != nil {
				return r.fail(ctx, orig, &pr, err)
			}
			if o, err = observe(ctx, repo, spec, rev); err != nil {
				return ctrl.Result{}, err
			}
		}
	}

	// The lifecycle.
	want := pr.Spec.Lifecycle
	if want == "" {
		want = porchv1alpha2.LifecycleDraft
	}
	pending := ""
	if string(want) != string(o.meta.Lifecycle) {
		te := e
		if by := pr.Annotations[ApprovedByAnnotation]; by != "" && want == porchv1alpha2.LifecyclePublished {
			// The approval's author is the user who published (see
			// deploy/approved-by.yaml).
			if te, err = sc.engineAs(pr.Namespace, by); err != nil {
				return ctrl.Result{}, err
			}
		}
		rev, err = r.transition(ctx, te, o.meta, revision.Lifecycle(want))
		var gerr *engine.GatesError
		switch {
		case errors.As(err, &gerr):
			pending = fmt.Sprintf("waiting for readiness gates %v to be True in status.packageConditions", gerr.Gates)
		case err != nil:
			return r.fail(ctx, orig, &pr, err)
		}
		if rev != nil {
			if o, err = observe(ctx, repo, spec, rev); err != nil {
				return ctrl.Result{}, err
			}
		}
	}

	if o.meta.Version != before {
		r.wrote(ctx, pr.Namespace, repoName)
	}

	// The status: the repository's view, and the controller's conditions.
	conds := pr.Status.Conditions
	pr.Status = o.status
	pr.Status.Conditions = conds
	pr.Status.ObservedGeneration = pr.Generation
	pr.Status.ObservedVersion = o.meta.Version
	pr.Status.ObservedPrrResourceVersion = o.meta.Version
	pr.Status.CreationSource = creationSource(&pr, o.meta.Creation)
	switch {
	case rendered != nil:
	case o.rendered != nil:
		meta.SetStatusCondition(&pr.Status.Conditions, *o.rendered)
	case meta.FindStatusCondition(pr.Status.Conditions, porchv1alpha2.ConditionRendered) == nil:
		meta.SetStatusCondition(&pr.Status.Conditions, metav1.Condition{Type: porchv1alpha2.ConditionRendered,
			Status: metav1.ConditionTrue, Reason: porchv1alpha2.ReasonRendered, Message: "no render recorded in the Kptfile"})
	}
	if pending != "" {
		r.setReady(&pr, metav1.ConditionFalse, porchv1alpha2.ReasonPending, pending)
	} else {
		r.setReady(&pr, metav1.ConditionTrue, porchv1alpha2.ReasonReady, "")
	}
	return ctrl.Result{}, r.writeStatus(ctx, orig, &pr)
}

// writePackageMetadata rewrites the Kptfile of the draft rev with md's
// labels and annotations, in one compare-and-swap against rev.
func (r *prReconciler) writePackageMetadata(ctx context.Context, e *engine.Engine, rev revision.PackageRevision, md *porchv1alpha2.PackageMetadata) (revision.PackageRevision, error) {
	m := rev.Meta()
	files, err := rev.Files(ctx)
	if err != nil {
		return nil, err
	}
	data, ok := files.Get(revision.KptfileName)
	if !ok {
		return nil, permanent{fmt.Errorf("%w: spec.packageMetadata: the package has no Kptfile", repository.ErrInvalidInput)}
	}
	kf, err := revision.ParseKptfile(data)
	if err != nil {
		return nil, permanent{err}
	}
	kf.Metadata.Labels = maps.Clone(md.Labels)
	kf.Metadata.Annotations = maps.Clone(md.Annotations)
	if data, err = kf.Encode(); err != nil {
		return nil, err
	}
	if files, err = files.With(revision.KptfileName, data); err != nil {
		return nil, err
	}
	return e.Update(ctx, m.Key.Repository, m.Key, files, engine.UpdateOptions{Version: m.Version})
}

// mayHold returns why repo may still hold the revision key that a Get
// did not find, or "" when "not found" is the repository's word: the list
// of repo left out damaged refs (the revision may be behind one, see
// ConditionDamaged), or lists the revision after all. It returns the
// list's error when the list failed for another reason than damage.
func mayHold(ctx context.Context, repo repository.Repository, key revision.Key) (string, error) {
	revs, err := repo.List(ctx, repository.ListOptions{})
	if repository.Damage(err) != nil {
		return fmt.Sprintf("the revision is not found, but repository %s has damaged refs (see its condition %s) and it may be behind one", key.Repository, ConditionDamaged), nil
	}
	if err != nil {
		return "", err
	}
	for _, rev := range revs {
		if k := rev.Meta().Key; k.Package == key.Package && k.Workspace == key.Workspace {
			return fmt.Sprintf("the revision is not found, but repository %s lists it", key.Repository), nil
		}
	}
	return "", nil
}

// realised reports whether the object's revision was seen in the
// repository: its status was written from it (status.observedGeneration
// is set only then).
func realised(pr *porchv1alpha2.PackageRevision) bool {
	return pr.Status.ObservedGeneration > 0
}

// settled reports whether the object's current generation was realised:
// Ready True for it.
func (r *prReconciler) settled(pr *porchv1alpha2.PackageRevision) bool {
	c := meta.FindStatusCondition(pr.Status.Conditions, porchv1alpha2.ConditionReady)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == pr.Generation &&
		pr.Status.ObservedGeneration == pr.Generation
}

// applySource creates the revision key from spec.source.
func (r *prReconciler) applySource(ctx context.Context, e *engine.Engine, pr *porchv1alpha2.PackageRevision, key revision.Key) (revision.PackageRevision, error) {
	src := pr.Spec.Source
	repo := key.Repository
	ref := func(name string) (revision.Key, error) {
		k, err := porchapi.ParseName(name)
		if err != nil {
			return revision.Key{}, permanent{err}
		}
		return k, nil
	}
	var md revision.Metadata
	switch {
	case src.Init != nil:
		if src.Init.Subpackage != "" {
			return nil, permanent{fmt.Errorf("%w: init.subpackage is not supported", repository.ErrInvalidInput)}
		}
		return e.Init(ctx, repo, key, engine.InitOptions{Description: src.Init.Description, Keywords: src.Init.Keywords,
			Site: src.Init.Site, Metadata: md})
	case src.CloneFrom != nil:
		var cs engine.CloneSource
		opts := engine.CloneOptions{Metadata: md}
		switch up := src.CloneFrom; {
		case up.UpstreamRef != nil:
			k, err := ref(up.UpstreamRef.Name)
			if err != nil {
				return nil, err
			}
			cs.Revision = &k
		case up.Git != nil:
			if err := r.repos.roots.CheckGitURL(up.Git.Repo); err != nil {
				return nil, permanent{fmt.Errorf("cloneFrom.git.repo: %w", err)}
			}
			g := &repository.GitUpstream{Repo: up.Git.Repo, Directory: up.Git.Directory, Ref: up.Git.Ref}
			f := &gitrepo.Fetcher{}
			if up.Git.SecretRef != nil && up.Git.SecretRef.Name != "" {
				sec, err := r.repos.secret(ctx, pr.Namespace, up.Git.SecretRef.Name)
				if err != nil {
					return nil, err
				}
				auth, err := gitAuth(sec)
				if err != nil {
					return nil, permanent{err}
				}
				f.Auth = auth
			}
			cs.Git = g
			opts.Fetcher = f
		default:
			return nil, permanent{fmt.Errorf("%w: cloneFrom needs upstreamRef or git", repository.ErrInvalidInput)}
		}
		return e.Clone(ctx, repo, key, cs, opts)
	case src.CopyFrom != nil:
		k, err := ref(src.CopyFrom.Name)
		if err != nil {
			return nil, err
		}
		if k.Repository != repo || k.Package != key.Package {
			return nil, permanent{fmt.Errorf("%w: copyFrom %q is not a revision of package %s in repository %s",
				repository.ErrInvalidInput, src.CopyFrom.Name, key.Package, repo)}
		}
		return e.Copy(ctx, repo, k, key.Workspace, engine.CopyOptions{Metadata: md})
	case src.Upgrade != nil:
		u := src.Upgrade
		oldK, err := ref(u.OldUpstream.Name)
		if err != nil {
			return nil, err
		}
		newK, err := ref(u.NewUpstream.Name)
		if err != nil {
			return nil, err
		}
		cur, err := ref(u.CurrentPackage.Name)
		if err != nil {
			return nil, err
		}
		if cur.Repository != repo || cur.Package != key.Package {
			return nil, permanent{fmt.Errorf("%w: upgrade.currentPackage %q is not a revision of package %s in repository %s",
				repository.ErrInvalidInput, u.CurrentPackage.Name, key.Package, repo)}
		}
		return e.Upgrade(ctx, repo, cur, engine.Ref{Repository: oldK.Repository, Key: oldK},
			engine.Ref{Repository: newK.Repository, Key: newK}, key.Workspace,
			engine.UpgradeOptions{Strategy: revision.UpdateStrategy(u.Strategy)})
	}
	return nil, permanent{fmt.Errorf("%w: source sets none of init, cloneFrom, copyFrom and upgrade", repository.ErrInvalidInput)}
}

// transition moves the revision m describes towards lifecycle want, one
// engine call per step: Draft → Proposed → Published → DeletionProposed,
// and back from Proposed to Draft and from DeletionProposed to Published.
func (r *prReconciler) transition(ctx context.Context, e *engine.Engine, m revision.Meta, want revision.Lifecycle) (revision.PackageRevision, error) {
	repo, key := m.Key.Repository, m.Key
	var rev revision.PackageRevision
	cur := m.Lifecycle
	for cur != want {
		var err error
		switch {
		case cur == revision.LifecycleDraft && (want == revision.LifecycleProposed || want == revision.LifecyclePublished):
			rev, err = e.Propose(ctx, repo, key)
		case cur == revision.LifecycleProposed && want == revision.LifecycleDraft:
			rev, err = e.Reject(ctx, repo, key)
		case cur == revision.LifecycleProposed && want == revision.LifecyclePublished:
			rev, err = e.Approve(ctx, repo, key)
		case cur == revision.LifecyclePublished && want == revision.LifecycleDeletionProposed:
			rev, err = e.ProposeDelete(ctx, repo, key)
		case cur == revision.LifecycleDeletionProposed && want == revision.LifecyclePublished:
			rev, err = e.Reject(ctx, repo, key)
		default:
			return rev, permanent{&revision.TransitionError{From: cur, To: want}}
		}
		if err != nil {
			return rev, err
		}
		m := rev.Meta()
		ctrl.LoggerFrom(ctx).V(1).Info("moved package revision", "revision", m.Key.String(), "from", string(cur), "to", string(m.Lifecycle))
		key, cur = m.Key, m.Lifecycle
	}
	return rev, nil
}

// finalize handles the deletion of the object: the revision is deleted from
// the repository when it is a draft, a proposal or proposed for deletion.
// As in Porch, a Published revision (the placeholder included) is not
// deleted until it is proposed for deletion: its object stays, marked for
// deletion, with Ready False saying so, until spec.lifecycle is set to
// DeletionProposed, and then both go. The object goes only when the
// revision is deleted or found gone by its own repository: a "not found"
// that the deletion met elsewhere (a broken Repository of the namespace it
// consulted) is no proof. A refused deletion keeps the object, Terminating,
// with Ready False (ReasonDeleteFailed) and a Warning Event that say why,
// and is tried again after r.retry. So does an object whose revision is
// not found while the repository's list leaves out damaged refs (the
// revision may be behind one); Reconcile checks that before finalize.
func (r *prReconciler) finalize(ctx context.Context, e *engine.Engine, orig, pr *porchv1alpha2.PackageRevision, rev revision.PackageRevision, found bool) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(pr, porchv1alpha2.Finalizer) {
		return ctrl.Result{}, nil
	}
	if found {
		m := rev.Meta()
		if m.Lifecycle == revision.LifecyclePublished {
			if pr.Spec.Lifecycle != porchv1alpha2.LifecycleDeletionProposed {
				r.setReady(pr, metav1.ConditionFalse, porchv1alpha2.ReasonFailed,
					"published package revisions must be proposed for deletion by setting spec.lifecycle to 'DeletionProposed' prior to deletion")
				return ctrl.Result{}, r.writeStatus(ctx, orig, pr)
			}
			var err error
			if rev, err = e.ProposeDelete(ctx, m.Key.Repository, m.Key); err != nil {
				return r.deleteRefused(ctx, orig, pr, m.Key, err)
			}
			m = rev.Meta()
		}
		if err := e.Delete(ctx, m.Key.Repository, m.Key); err != nil && !r.gone(ctx, e, m.Key, err) {
			return r.deleteRefused(ctx, orig, pr, m.Key, err)
		}
		ctrl.LoggerFrom(ctx).V(1).Info("deleted package revision", "revision", m.Key.String(), "lifecycle", string(m.Lifecycle))
		r.wrote(ctx, pr.Namespace, m.Key.Repository)
	}
	return ctrl.Result{}, r.dropFinalizer(ctx, pr)
}

// gone reports whether the deletion of k failed because k is no longer in
// its repository, asking that repository alone.
func (r *prReconciler) gone(ctx context.Context, e *engine.Engine, k revision.Key, err error) bool {
	if !errors.Is(err, repository.ErrNotFound) {
		return false
	}
	_, gerr := e.Get(ctx, k.Repository, k)
	return errors.Is(gerr, repository.ErrNotFound)
}

// deleteRefused records that the repository refused to delete k: Ready
// False with the reason in the status, and a Warning Event.
func (r *prReconciler) deleteRefused(ctx context.Context, orig, pr *porchv1alpha2.PackageRevision, k revision.Key, err error) (ctrl.Result, error) {
	msg := fmt.Sprintf("the revision cannot be deleted from repository %s, so the object stays until it can: %v", k.Repository, err)
	r.setReady(pr, metav1.ConditionFalse, ReasonDeleteFailed, msg)
	if r.events != nil {
		r.events.Eventf(pr, nil, corev1.EventTypeWarning, ReasonDeleteFailed, "Delete", "%s", msg)
	}
	if werr := r.writeStatus(ctx, orig, pr); werr != nil {
		return ctrl.Result{}, werr
	}
	return ctrl.Result{RequeueAfter: r.retry}, nil
}

// creationSource is status.creationSource: the source the object applied,
// else the creation the repository records, as Porch names them.
func creationSource(pr *porchv1alpha2.PackageRevision, c *revision.Creation) string {
	if s := pr.Spec.Source; s != nil {
		switch {
		case s.Init != nil:
			return "init"
		case s.CloneFrom != nil:
			return "clone"
		case s.CopyFrom != nil:
			return "copy"
		case s.Upgrade != nil:
			return "upgrade"
		}
	}
	if c == nil {
		return ""
	}
	switch c.Op {
	case revision.CreatedByCopy:
		return "copy"
	default:
		return string(c.Op)
	}
}

func (r *prReconciler) dropFinalizer(ctx context.Context, pr *porchv1alpha2.PackageRevision) error {
	if !controllerutil.RemoveFinalizer(pr, porchv1alpha2.Finalizer) {
		return nil
	}
	return client.IgnoreNotFound(r.client.Update(ctx, pr))
}

// fail records err in the Ready condition. Errors that a retry may fix are
// returned (the request is retried with backoff); bad input is not.
func (r *prReconciler) fail(ctx context.Context, orig, pr *porchv1alpha2.PackageRevision, err error) (ctrl.Result, error) {
	r.setReady(pr, metav1.ConditionFalse, porchv1alpha2.ReasonFailed, err.Error())
	if werr := r.writeStatus(ctx, orig, pr); werr != nil {
		return ctrl.Result{}, werr
	}
	var p permanent
	if errors.As(err, &p) || errors.Is(err, repository.ErrInvalidInput) || errors.Is(err, repository.ErrInvalidTransition) ||
		errors.Is(err, repository.ErrAlreadyExists) {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, err
}

func (r *prReconciler) setReady(pr *porchv1alpha2.PackageRevision, status metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&pr.Status.Conditions, metav1.Condition{Type: porchv1alpha2.ConditionReady, Status: status,
		Reason: reason, Message: msg, ObservedGeneration: pr.Generation})
}

// writeStatus updates the status subresource when it changed.
func (r *prReconciler) writeStatus(ctx context.Context, orig, pr *porchv1alpha2.PackageRevision) error {
	if equality.Semantic.DeepEqual(orig.Status, pr.Status) {
		return nil
	}
	return client.IgnoreNotFound(r.client.Status().Update(ctx, pr))
}
