package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	configv1alpha1 "github.com/configasdata/cad/api/config/v1alpha1"
	porchv1alpha2 "github.com/configasdata/cad/api/porch/v1alpha2"
	"github.com/configasdata/cad/examples/internal/porchapi"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
)

// repoReconciler reconciles config.porch.kpt.dev/v1alpha1 Repositories:
// it opens the repository and discovers its package revisions, creating a
// PackageRevision object for each revision that has none and deleting the
// objects whose revision is gone. The repository is the truth; objects
// never create revisions here (that is the PackageRevision reconciler's
// job, from spec.source).
type repoReconciler struct {
	client client.Client
	repos  *repoSet
	// poll is how often a repository is read again.
	poll time.Duration
	// touch asks the PackageRevision reconciler to look at an object
	// again (its revision may have changed in the repository).
	touch chan<- event.GenericEvent
	// listed counts the repositories' lists of revisions (tests).
	listed atomic.Int64
	// shards, with sharding, names the shard label of the objects
	// discovery creates (prcache.go); nil without.
	shards *sharder
}

// setup registers the reconciler; the objects sent on rediscover are
// reconciled too (a variant sync that wrote drafts asks for it). With sh,
// a Repository is reconciled only by the replica holding its shard, and
// one that acquires the shard reads the repository again at once.
func (r *repoReconciler) setup(mgr ctrl.Manager, rediscover <-chan event.GenericEvent, sh *sharder) error {
	b := ctrl.NewControllerManagedBy(mgr).
		For(&configv1alpha1.Repository{}).
		Named("repository").
		WatchesRawSource(source.Channel(rediscover, &handler.EnqueueRequestForObject{}))
	var rec reconcile.Reconciler = retryConflicts{r}
	r.shards = sh
	if sh != nil {
		list := func(ctx context.Context) ([]shardItem, error) {
			var l configv1alpha1.RepositoryList
			if err := r.client.List(ctx, &l); err != nil {
				return nil, err
			}
			out := make([]shardItem, 0, len(l.Items))
			for _, it := range l.Items {
				out = append(out, shardItem{req: reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&it)},
					key: repoKey(it.Namespace, it.Name)})
			}
			return out, nil
		}
		// What the last owner wrote may be newer than a clone this
		// replica read earlier (a remote is asked again only after its
		// read window).
		inherit := func(it shardItem) { r.repos.changed(it.req.Namespace, it.req.Name) }
		b = b.WatchesRawSource(sh.watch("repository", list, inherit))
		rec = sh.gate(keyOfRequest, rec)
	}
	return b.Complete(rec)
}

func (r *repoReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var obj configv1alpha1.Repository
	if err := r.client.Get(ctx, req.NamespacedName, &obj); err != nil {
		if apierrors.IsNotFound(err) {
			r.repos.forget(req.Namespace, req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	r.repos.pushed(&obj)
	orig := obj.DeepCopy()
	n, damaged, err := r.discover(ctx, &obj)
	cond := metav1.Condition{Type: configv1alpha1.RepositoryReady, Status: metav1.ConditionTrue,
		Reason: configv1alpha1.ReasonReady, ObservedGeneration: obj.Generation}
	if err != nil {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, configv1alpha1.ReasonError, err.Error()
	} else {
		obj.Status.PackageCount = n
		if s := obj.Spec.Sync; s != nil && (s.Schedule != "" || s.RunOnceAt != nil) {
			cond.Message = fmt.Sprintf("spec.sync is not used: the repository is read every %s and after the operator's own writes", r.poll)
		}
		if len(damaged) > 0 {
			cond.Message = joinMessage(cond.Message, fmt.Sprintf("%d damaged revisions left out (see condition %s)", len(damaged), ConditionDamaged))
		}
	}
	meta.SetStatusCondition(&obj.Status.Conditions, cond)
	if err == nil {
		porchapi.SetDamaged(&obj.Status.Conditions, obj.Generation, damaged)
	}
	porchapi.SetMaintenanceFailed(&obj.Status.Conditions, obj.Generation, r.repos.maintenanceError(obj.Namespace, obj.Name))
	obj.Status.ObservedGeneration = obj.Generation
	if !equalStatus(orig, &obj) {
		if uerr := r.client.Status().Update(ctx, &obj); uerr != nil {
			return ctrl.Result{}, client.IgnoreNotFound(uerr)
		}
	}
	// An error is in the status; the repository is tried again at the
	// next poll (a Secret it needs is not watched).
	return ctrl.Result{RequeueAfter: r.poll}, nil
}

func equalStatus(a, b *configv1alpha1.Repository) bool {
	for _, typ := range []string{configv1alpha1.RepositoryReady, ConditionDamaged, ConditionMaintenanceFailed} {
		ca := meta.FindStatusCondition(a.Status.Conditions, typ)
		cb := meta.FindStatusCondition(b.Status.Conditions, typ)
		if (ca == nil) != (cb == nil) || ca != nil && (ca.Status != cb.Status || ca.Message != cb.Message || ca.ObservedGeneration != cb.ObservedGeneration) {
			return false
		}
	}
	return a.Status.PackageCount == b.Status.PackageCount && a.Status.ObservedGeneration == b.Status.ObservedGeneration
}

// The Repository conditions besides Ready (see porchapi.ConditionDamaged
// and porchapi.ConditionMaintenanceFailed). A damaged revision has no
// PackageRevision object made for it, and the object it had is kept,
// never deleted because of the damage.
const (
	ConditionDamaged           = porchapi.ConditionDamaged
	ReasonDamagedRevisions     = porchapi.ReasonDamagedRevisions
	ConditionMaintenanceFailed = porchapi.ConditionMaintenanceFailed
	ReasonMaintenanceError     = porchapi.ReasonMaintenanceError
)

func joinMessage(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// revisionDamage reports whether err, from reading one revision, is that
// revision's damage (its Kptfile does not parse or is over a bound, its
// objects are damaged) rather than the repository's or the caller's.
func revisionDamage(err error) bool {
	return errors.Is(err, revision.ErrInvalid) || errors.Is(err, revision.ErrLimit) ||
		errors.Is(err, repository.ErrCorrupt) || errors.Is(err, repository.ErrNotSupported)
}

// discover brings the PackageRevision objects of obj's repository in line
// with the revisions in it and returns how many revisions it serves and
// what it left out as damaged. Damage costs only what is damaged: a
// revision whose Kptfile does not parse gets no object, the others do;
// when the list itself left out damaged refs, no object is deleted (its
// revision may be behind the damage).
func (r *repoReconciler) discover(ctx context.Context, obj *configv1alpha1.Repository) (count int, damaged []string, _ error) {
	sc := r.repos.scope()
	defer sc.done()
	// Registered first: a change of its spec or Secret forgets the last
	// discovery's inputs, so the version below is compared with those of
	// a discovery that opened the repository as it is now specified.
	if err := r.repos.register(ctx, obj); err != nil {
		return 0, nil, err
	}
	spec := porchapi.RepositoryToSpec(obj)
	// The objects are listed before the repository: an object that was
	// realised before this list has its revision in the listing below,
	// unless the revision was really deleted.
	var objs porchv1alpha2.PackageRevisionList
	if err := r.client.List(ctx, &objs, client.InNamespace(obj.Namespace),
		client.MatchingFields{prRepositoryIndex: obj.Name}); err != nil {
		return 0, nil, err
	}
	// A repository whose version and objects are those of a discovery
	// that found nothing to do has nothing to do now: the poll of an
	// unchanged repository reads its refs, not its revisions. The version
	// is read before the list, so that a change after it is seen at the
	// next poll. A local repository whose refs did not change since a
	// Version of it in this process is not even opened for its version
	// (gitrepo.CachedVersion): the poll of an idle repository the pool
	// closed costs a few lstats. (Its inputs can match only those of a
	// discovery that opened it under this registration.)
	nn := types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name}
	var repo repository.Repository
	version, cached := gitrepo.CachedVersion(spec)
	if !cached {
		var err error
		if repo, err = sc.sc.Acquire(ctx, poolKey(nn)); err != nil { // registered above
			return 0, nil, err
		}
		version = versionOf(ctx, repo)
	}
	inputs := discoveryInputs(version, objs.Items)
	if n, ok := r.repos.discovered(nn, inputs); ok {
		return n, nil, nil
	}
	if repo == nil {
		var err error
		if repo, err = sc.sc.Acquire(ctx, poolKey(nn)); err != nil { // registered above
			return 0, nil, err
		}
	}
	idle := true      // nothing written, nothing poked
	complete := false // and no error
	defer func() {
		if !complete || !idle || len(damaged) > 0 {
			inputs = ""
		}
		r.repos.noteDiscovered(nn, inputs, count)
	}()
	r.listed.Add(1)
	revs, err := repo.List(ctx, repository.ListOptions{})
	listDamaged := porchapi.DamageOf(err)
	if err != nil && listDamaged == nil {
		return 0, nil, err
	}
	damaged = append(damaged, listDamaged...)
	count = len(revs)
	have := map[string]*porchv1alpha2.PackageRevision{}
	for i := range objs.Items {
		have[objs.Items[i].Name] = &objs.Items[i]
	}
	// The latest revision of each package: the Published one with the
	// highest number.
	latest := map[string]revision.Key{}
	for _, rev := range revs {
		m := rev.Meta()
		if m.Lifecycle == revision.LifecyclePublished && m.Key.Revision > latest[m.Key.Package].Revision {
			latest[m.Key.Package] = m.Key
		}
	}
	isLatest := func(k revision.Key) bool {
		l, ok := latest[k.Package]
		return ok && l.Revision == k.Revision && l.Workspace == k.Workspace
	}
	inRepo := map[string]bool{}
	for _, rev := range revs {
		m := rev.Meta()
		m.Key.Repository = obj.Name
		name := porchapi.NameOf(m.Key)
		inRepo[name] = true
		if cur, ok := have[name]; ok {
			// With refs left out, the latest revision of a package may
			// be behind one: the labels stay as they are.
			if len(listDamaged) == 0 {
				wrote, err := r.label(ctx, cur, isLatest(m.Key))
				if err != nil {
					return 0, nil, err
				}
				idle = idle && !wrote
			}
			// Let the PackageRevision reconciler compare it with the
			// repository when the repository moved on.
			moved := string(cur.Spec.Lifecycle) != string(m.Lifecycle) || cur.Status.Revision != m.Key.Revision ||
				cur.Status.SelfLock != nil && cur.Status.SelfLock.Git != nil && cur.Status.SelfLock.Git.Commit != m.Commit
			if moved {
				idle = false
				r.poke(ctx, cur)
			}
			continue
		}
		idle = false
		o, err := observe(ctx, repo, spec, rev)
		if err != nil && revisionDamage(err) && ctx.Err() == nil {
			// This revision alone: the others are discovered.
			damaged = append(damaged, name+": "+err.Error())
			count--
			continue
		}
		if err != nil {
			return 0, nil, err
		}
		pr := &porchv1alpha2.PackageRevision{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: obj.Namespace,
				Labels:     map[string]string{porchv1alpha2.RepositoryLabel: obj.Name},
				Finalizers: []string{porchv1alpha2.Finalizer}},
			Spec: porchv1alpha2.PackageRevisionSpec{
				PackageName:     m.Key.Package,
				RepositoryName:  obj.Name,
				WorkspaceName:   m.Key.Workspace,
				Lifecycle:       porchv1alpha2.Lifecycle(m.Lifecycle),
				ReadinessGates:  o.gates,
				PackageMetadata: o.metadata,
			},
		}
		if isLatest(m.Key) {
			pr.Labels[porchv1alpha2.LatestRevisionLabel] = "true"
		}
		if k, v := r.shards.prLabel(obj.Namespace, obj.Name); k != "" {
			pr.Labels[k] = v
		}
		if err := controllerutil.SetOwnerReference(obj, pr, r.client.Scheme()); err != nil {
			return 0, nil, err
		}
		if err := r.client.Create(ctx, pr); err != nil && !apierrors.IsAlreadyExists(err) {
			return 0, nil, fmt.Errorf("create %s: %w", name, err)
		}
		ctrl.LoggerFrom(ctx).V(1).Info("discovered package revision", "name", name, "lifecycle", string(m.Lifecycle))
	}
	for name, cur := range have {
		if inRepo[name] || cur.DeletionTimestamp != nil {
			continue
		}
		if len(listDamaged) > 0 {
			continue // perhaps behind a damaged ref
		}
		if cur.Spec.Source != nil && !realised(cur) {
			continue // not created yet
		}
		idle = false
		if err := r.client.Delete(ctx, cur); err != nil && !apierrors.IsNotFound(err) {
			return 0, nil, fmt.Errorf("delete %s: %w", name, err)
		}
		ctrl.LoggerFrom(ctx).V(1).Info("package revision gone from the repository", "name", name)
	}
	complete = true
	return count, damaged, nil
}

// label sets the latest-revision label of pr, with a patch of the labels
// alone: "true" on the latest revision, and, as Porch does, "false" on a
// revision that had it and is no longer the latest; a revision that never
// was the latest has none.
func (r *repoReconciler) label(ctx context.Context, pr *porchv1alpha2.PackageRevision, latest bool) (wrote bool, _ error) {
	v, had := pr.Labels[porchv1alpha2.LatestRevisionLabel]
	want := "true"
	if !latest {
		if !had {
			return false, nil
		}
		want = "false"
	}
	if v == want {
		return false, nil
	}
	p := client.MergeFrom(pr.DeepCopy())
	if pr.Labels == nil {
		pr.Labels = map[string]string{}
	}
	pr.Labels[porchv1alpha2.LatestRevisionLabel] = want
	return true, client.IgnoreNotFound(r.client.Patch(ctx, pr, p))
}

// versionOf returns the version of repo (repository.Version), "" when it
// has none.
func versionOf(ctx context.Context, repo repository.Repository) string {
	v, err := repository.Version(ctx, repo)
	if err != nil {
		return ""
	}
	return v
}

// discoveryInputs returns what a discovery of a repository of version v
// (versionOf) with the objects objs decides on: v and each object's name
// and resourceVersion; "" when the repository has no version.
func discoveryInputs(v string, objs []porchv1alpha2.PackageRevision) string {
	if v == "" {
		return ""
	}
	names := make([]string, 0, len(objs))
	for i := range objs {
		names = append(names, objs[i].Name+"\x00"+objs[i].ResourceVersion)
	}
	slices.Sort(names)
	h := sha256.New()
	h.Write([]byte(v))
	for _, n := range names {
		h.Write([]byte{0})
		h.Write([]byte(n))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// poke enqueues pr for the PackageRevision reconciler, without blocking
// longer than ctx allows.
func (r *repoReconciler) poke(ctx context.Context, pr *porchv1alpha2.PackageRevision) {
	if r.touch == nil {
		return
	}
	select {
	case r.touch <- event.GenericEvent{Object: pr.DeepCopy()}:
	case <-ctx.Done():
	}
}
