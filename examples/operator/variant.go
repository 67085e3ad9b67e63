package main

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	configv1alpha1 "github.com/configasdata/cad/api/config/v1alpha1"
	configv1alpha2 "github.com/configasdata/cad/api/config/v1alpha2"
	porchv1alpha2 "github.com/configasdata/cad/api/porch/v1alpha2"
	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/examples/internal/porchapi"
	"github.com/configasdata/cad/examples/internal/variantfail"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/variant"
)

// The finalizers that hold a PackageVariant or PackageVariantSet until
// what it owns is released per its deletionPolicy (Porch's names).
const (
	pvFinalizer  = "config.porch.kpt.dev/packagevariants"
	pvsFinalizer = "config.porch.kpt.dev/packagevariantsets"
)

// variantReconciler reconciles config.porch.kpt.dev/v1alpha1
// PackageVariants (set == false) or config.porch.kpt.dev/v1alpha2
// PackageVariantSets (set == true) with cad's variant package: Sync and
// SyncSet make the downstream drafts, which are in git at once; discovery
// then makes their PackageRevision objects. Ownership is in the
// repository (the downstream revisions' metadata), not in the objects, so
// a replica that takes over mid-fan-out resumes from what git holds:
// nothing is made twice and nothing is lost. A set's variants are not
// objects of their own: SyncSet unrolls and syncs them in one pass.
type variantReconciler struct {
	set     bool
	client  client.Client
	repos   *repoSet
	objects variant.ObjectSource
	// resync is how often a variant is synced again even when no event
	// asked (an upstream published outside the cluster's view).
	resync time.Duration
	// rediscover asks the Repository reconciler to discover the
	// repositories of a namespace now (the drafts a sync made).
	rediscover func(ctx context.Context, ns string)
	// shards, with sharding, is this replica's sharder (see
	// variantshard.go for how a set is shared); nil without.
	shards *sharder
}

// setup registers the reconciler. With sh, a PackageVariant is synced
// only by the replica holding the shard of its downstream repository
// (the one it writes), and a PackageVariantSet, whose downstreams span
// repositories, by every replica over the downstream repositories it
// holds (see variantshard.go).
func (r *variantReconciler) setup(mgr ctrl.Manager, sh *sharder, latest cache.Cache) error {
	var obj client.Object = &configv1alpha1.PackageVariant{}
	name := "packagevariant"
	if r.set {
		obj, name = &configv1alpha2.PackageVariantSet{}, "packagevariantset"
	}
	// A published upstream revision resyncs the variants of its
	// namespace: the variant package decides cheaply that most are
	// unchanged.
	published := predicate.NewPredicateFuncs(func(o client.Object) bool {
		pr, ok := o.(*porchv1alpha2.PackageRevision)
		return ok && pr.Spec.Lifecycle == porchv1alpha2.LifecyclePublished
	})
	b := ctrl.NewControllerManagedBy(mgr).
		For(obj, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Named(name)
	if latest == nil {
		b = b.Watches(&porchv1alpha2.PackageRevision{}, handler.EnqueueRequestsFromMapFunc(r.inNamespace), builder.WithPredicates(published))
	} else {
		// With sharding, the manager's cache has few PackageRevisions
		// (prcache.go): an upstream in any shard is seen when it becomes
		// a package's latest revision, in latest's metadata.
		md := &metav1.PartialObjectMetadata{}
		md.SetGroupVersionKind(porchv1alpha2.SchemeGroupVersion.WithKind("PackageRevision"))
		b = b.WatchesRawSource(source.Kind[client.Object](latest, md, handler.EnqueueRequestsFromMapFunc(r.inNamespace)))
	}
	var rec reconcile.Reconciler = r
	if sh != nil {
		var list func(context.Context) ([]shardItem, error)
		key := keyOfRequest
		r.shards = sh
		if r.set {
			list = func(ctx context.Context) ([]shardItem, error) { return setShardItems(ctx, r.client) }
		} else {
			list = func(ctx context.Context) ([]shardItem, error) {
				var l configv1alpha1.PackageVariantList
				if err := r.client.List(ctx, &l); err != nil {
					return nil, err
				}
				out := make([]shardItem, 0, len(l.Items))
				for i := range l.Items {
					out = append(out, shardItem{req: reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&l.Items[i])},
						key: variantKey(&l.Items[i])})
				}
				return out, nil
			}
			key = keyOfObject(r.client, func() *configv1alpha1.PackageVariant { return &configv1alpha1.PackageVariant{} }, variantKey)
		}
		b = b.WatchesRawSource(sh.watch(name, list, nil))
		if !r.set {
			rec = sh.gate(key, rec)
		}
	}
	return b.Complete(rec)
}

// variantKey is the shard key of a PackageVariant: its downstream
// repository, or its own name when it names none.
func variantKey(pv *configv1alpha1.PackageVariant) string {
	if d := pv.Spec.Downstream; d != nil && d.Repo != "" {
		return repoKey(pv.Namespace, d.Repo)
	}
	return repoKey(pv.Namespace, pv.Name)
}

// inNamespace maps an object to the variants (or sets) of its namespace.
func (r *variantReconciler) inNamespace(ctx context.Context, o client.Object) []reconcile.Request {
	var names []string
	if r.set {
		var l configv1alpha2.PackageVariantSetList
		if err := r.client.List(ctx, &l, client.InNamespace(o.GetNamespace())); err != nil {
			return nil
		}
		for _, it := range l.Items {
			names = append(names, it.Name)
		}
	} else {
		var l configv1alpha1.PackageVariantList
		if err := r.client.List(ctx, &l, client.InNamespace(o.GetNamespace())); err != nil {
			return nil
		}
		for _, it := range l.Items {
			names = append(names, it.Name)
		}
	}
	out := make([]reconcile.Request, 0, len(names))
	for _, n := range names {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: n}})
	}
	return out
}

// syncHook, when set (by tests, before any operator starts), is called
// before each sync of a variant or set that is not being deleted.
var syncHook func(req ctrl.Request)

// Reconcile syncs one variant or set. A variant or set that an earlier
// sync held (variantfail: a bound refused it, or it is invalid) is skipped
// until its spec changes; one whose sync fails so is held: its status gets
// Stalled True and Ready False with reason LimitExceeded or InvalidSpec at
// its generation, and it is not requeued.
func (r *variantReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var obj client.Object = &configv1alpha1.PackageVariant{}
	finalizer := pvFinalizer
	if r.set {
		obj, finalizer = &configv1alpha2.PackageVariantSet{}, pvsFinalizer
	}
	if err := r.client.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	// The repositories this sync reads and writes stay open until it
	// ends.
	sc := r.repos.scope()
	defer sc.done()
	e, err := sc.engine(req.Namespace)
	if err != nil {
		return ctrl.Result{}, err
	}
	opts := &variant.Options{Objects: r.objects}
	var repos configv1alpha1.RepositoryList
	if err := r.client.List(ctx, &repos, client.InNamespace(req.Namespace)); err != nil {
		return ctrl.Result{}, err
	}
	keys := make([]string, 0, len(repos.Items))
	for i := range repos.Items {
		opts.RepositorySpecs = append(opts.RepositorySpecs, porchapi.RepositoryToSpec(&repos.Items[i]))
		keys = append(keys, repoKey(req.Namespace, repos.Items[i].Name))
	}

	deleting := obj.GetDeletionTimestamp() != nil
	if deleting && !controllerutil.ContainsFinalizer(obj, finalizer) {
		return ctrl.Result{}, nil
	}
	// A set is synced by every replica over the downstream repositories
	// it holds; its own replica (primary) keeps its finalizer and status
	// and removes it. A variant's reconcile is gated to its replica.
	primary := !r.set || r.shards.owns(repoKey(req.Namespace, req.Name))
	if r.set && r.shards != nil {
		if deleting && !primary {
			return ctrl.Result{}, nil
		}
		if !deleting && !controllerutil.ContainsFinalizer(obj, finalizer) && !primary {
			// Nothing is written before the finalizer that makes the
			// set's removal wait for its downstreams.
			return ctrl.Result{RequeueAfter: time.Second}, nil
		}
		if !deleting {
			var owned func(string) bool
			var done func()
			ctx, owned, done = r.shards.enterHeld(ctx, req.Namespace, keys)
			defer done()
			opts.Downstreams = owned
		}
	}
	if !primary {
		return r.syncShare(ctx, e, obj, opts)
	}
	if !deleting && controllerutil.AddFinalizer(obj, finalizer) {
		if err := r.client.Update(ctx, obj); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
	}

	if !deleting {
		if reason := variantfail.Held(conditionsOf(obj), obj.GetGeneration()); reason != "" {
			// Held by an earlier sync that a bound refused or found
			// invalid: not synced again, nor requeued, until an edit of
			// the spec makes a new generation (which the For predicate
			// reconciles).
			log.FromContext(ctx).V(1).Info("variant held; not synced until its spec changes", "reason", reason, "generation", obj.GetGeneration())
			return ctrl.Result{}, nil
		}
	}

	if h := syncHook; h != nil && !deleting {
		h(req)
	}
	status, syncErr := r.sync(ctx, e, obj, opts)
	if deleting {
		if syncErr != nil {
			return ctrl.Result{}, syncErr
		}
		controllerutil.RemoveFinalizer(obj, finalizer)
		return ctrl.Result{}, client.IgnoreNotFound(r.client.Update(ctx, obj))
	}
	reason := variantfail.Reason(syncErr)
	if status != nil || reason != "" {
		st, err := variantfail.Status(status, obj.GetGeneration(), reason, syncErr)
		if err != nil {
			return ctrl.Result{}, err
		}
		if err := r.writeStatus(ctx, obj, st); err != nil {
			return ctrl.Result{}, err
		}
	}
	if r.rediscover != nil {
		r.rediscover(ctx, req.Namespace)
	}
	switch {
	case syncErr == nil:
		return ctrl.Result{RequeueAfter: r.resync}, nil
	case reason != "":
		// Held: the status says why; retrying would do the refused work
		// again.
		log.FromContext(ctx).Info("variant sync failed; held until its spec changes", "reason", reason,
			"error", variantfail.Truncate(syncErr.Error(), variantfail.MaxMessageBytes))
		return ctrl.Result{}, nil
	case errors.Is(syncErr, repository.ErrNotFound):
		// Stalled until the upstream (or a repository) appears; the
		// status says why, and the resync looks again.
		return ctrl.Result{RequeueAfter: r.resync}, nil
	}
	// Transient: controller-runtime retries with its backoff.
	return ctrl.Result{}, syncErr
}

// syncShare syncs a set over the downstream repositories this replica
// holds (opts.Downstreams) when another replica is the set's own: its
// status is that replica's to write, so a failure here is logged and
// retried, or for a held one (a bound, an invalid spec, which the set's
// own replica records) left until the spec changes.
func (r *variantReconciler) syncShare(ctx context.Context, e *engine.Engine, obj client.Object, opts *variant.Options) (ctrl.Result, error) {
	if variantfail.Held(conditionsOf(obj), obj.GetGeneration()) != "" {
		return ctrl.Result{}, nil
	}
	if h := syncHook; h != nil {
		h(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
	}
	_, err := r.sync(ctx, e, obj, opts)
	if r.rediscover != nil {
		r.rediscover(ctx, obj.GetNamespace())
	}
	switch {
	case err == nil, errors.Is(err, repository.ErrNotFound):
		return ctrl.Result{RequeueAfter: r.resync}, nil
	case variantfail.Reason(err) != "":
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, err
}

// conditionsOf returns the status conditions of a PackageVariant or Set.
func conditionsOf(obj client.Object) []metav1.Condition {
	switch o := obj.(type) {
	case *configv1alpha1.PackageVariant:
		return o.Status.Conditions
	case *configv1alpha2.PackageVariantSet:
		return o.Status.Conditions
	}
	return nil
}

// sync runs the variant package on obj and returns the status to record
// (nil when obj is being deleted).
func (r *variantReconciler) sync(ctx context.Context, eng *engine.Engine, obj client.Object, opts *variant.Options) (any, error) {
	if r.set {
		pvs, err := porchapi.TypedVariantSet(obj.(*configv1alpha2.PackageVariantSet))
		if err != nil {
			return stalled(err), err
		}
		if pvs.DeletionTimestamp != nil {
			_, err := variant.RemoveSet(ctx, eng, pvs, opts)
			return nil, err
		}
		res, err := variant.SyncSet(ctx, eng, pvs, opts)
		return map[string]any{"conditions": res.Conditions}, err
	}
	pv, err := porchapi.TypedVariant(obj.(*configv1alpha1.PackageVariant))
	if err != nil {
		return stalled(err), err
	}
	if pv.DeletionTimestamp != nil {
		_, err := variant.Remove(ctx, eng, pv, opts)
		return nil, err
	}
	res, err := variant.Sync(ctx, eng, pv, opts)
	return res.Status(), err
}

// stalled is the status of a spec that does not decode.
func stalled(err error) any {
	return map[string]any{"conditions": []metav1.Condition{{
		Type: "Stalled", Status: metav1.ConditionTrue, Reason: "ValidationError", Message: err.Error(),
		LastTransitionTime: metav1.Now(),
	}}}
}

// writeStatus records status (the variant package's, of the same JSON
// as the object's) in obj's status subresource when it changed.
func (r *variantReconciler) writeStatus(ctx context.Context, obj client.Object, status any) error {
	raw, err := json.Marshal(status)
	if err != nil {
		return err
	}
	var cur any
	switch o := obj.(type) {
	case *configv1alpha1.PackageVariant:
		cur = &o.Status
	case *configv1alpha2.PackageVariantSet:
		cur = &o.Status
	}
	old, err := json.Marshal(cur)
	if err != nil {
		return err
	}
	if sameJSON(old, raw) {
		return nil
	}
	switch o := obj.(type) {
	case *configv1alpha1.PackageVariant:
		o.Status = configv1alpha1.PackageVariantStatus{}
	case *configv1alpha2.PackageVariantSet:
		o.Status = configv1alpha2.PackageVariantSetStatus{}
	}
	if err := json.Unmarshal(raw, cur); err != nil {
		return err
	}
	err = r.client.Status().Update(ctx, obj)
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil // a newer version is queued
	}
	return err
}

// sameJSON reports whether two JSON documents hold the same value,
// ignoring the conditions' transition times.
func sameJSON(a, b []byte) bool {
	var x, y map[string]any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	for _, m := range []map[string]any{x, y} {
		if cs, ok := m["conditions"].([]any); ok {
			for _, c := range cs {
				if cm, ok := c.(map[string]any); ok {
					delete(cm, "lastTransitionTime")
				}
			}
		}
	}
	return reflect.DeepEqual(x, y)
}
