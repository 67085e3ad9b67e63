package main

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	configv1alpha1 "github.com/configasdata/cad/api/config/v1alpha1"
	configv1alpha2 "github.com/configasdata/cad/api/config/v1alpha2"
	porchv1alpha2 "github.com/configasdata/cad/api/porch/v1alpha2"
	"github.com/configasdata/cad/examples/internal/confine"
	"github.com/configasdata/cad/examples/internal/maintsched"
	"github.com/configasdata/cad/examples/internal/repopool"
	"github.com/configasdata/cad/fnrunner"
	"github.com/configasdata/cad/fnruntime"
	"github.com/configasdata/cad/fnruntime/stdfn"
	"github.com/configasdata/cad/pipeline"
)

// Options configure the operator. The zero value of each field is its
// default.
type Options struct {
	// Namespace restricts the operator to one namespace; "" watches all.
	Namespace string
	// LeaderElection makes the replicas elect one leader through a Lease;
	// only the leader reconciles. Ignored when Shards is set.
	LeaderElection bool
	// Shards, when positive, makes the replicas share the work instead:
	// the Repositories are hashed into Shards shards, each with a Lease
	// (<LeaderElectionID>-shard-<i>) that one replica at a time holds, and
	// a replica reconciles only the objects of the shards it holds (see
	// shard.go for the owner of each kind and why no repository is ever
	// reconciled by two replicas at once), and caches only the
	// PackageRevisions of those shards (prcache.go). Every replica of a
	// group must have the same Shards: while live replicas disagree, none
	// acquires a shard. Default 0: no sharding.
	Shards int
	// LeaderElectionID names the Lease, or with Shards prefixes the
	// names of the Leases; default "cad-operator".
	LeaderElectionID string
	// LeaderElectionNamespace is the namespace of the Lease(s); default
	// Namespace, or "default".
	LeaderElectionNamespace string
	// LeaseDuration, RenewDeadline and RetryPeriod tune the election, or
	// the shards' Leases; default controller-runtime's (15s, 10s, 2s).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// MetricsAddr serves Prometheus metrics there; default "0", none.
	MetricsAddr string
	// PprofAddr serves Go's net/http/pprof profiles there (a CPU profile
	// of an idle fleet, for one); default "", none.
	PprofAddr string
	// CacheDir keeps the local clones of remote git repositories; default
	// in memory.
	CacheDir string
	// Poll is how often each repository is read again for discovery;
	// default 30s.
	Poll time.Duration
	// RepositoryRoots are the directories under which a local git
	// repository (a Repository's git.repo or a cloneFrom.git.repo given as
	// a path or a file:// URL) may be opened, symbolic links resolved, as
	// the reference server's --repository-root; CacheDir is never allowed.
	// Default none: the operator opens no repository on its own
	// filesystem, and such a Repository or PackageRevision gets a Ready
	// condition False that says why.
	RepositoryRoots []string

	// MaxOpenRepositories bounds the local git repositories (and with
	// CacheDir the remote ones' clones) open and unused at once: each
	// holds two file descriptors and its caches, so beyond it the least
	// recently used are closed, to be opened again at their next read (a
	// repository in use is never closed). Remote repositories cloned in
	// memory and OCI repositories hold no descriptors and stay open.
	// Default repopool.DefaultMaxOpen (256).
	MaxOpenRepositories int
	// RepositoryIdleTimeout closes a repository of MaxOpenRepositories'
	// kind that has not been used for this long (with a Poll shorter than
	// it, every repository is used at each poll and only the bound closes
	// them). Default repopool.DefaultIdleTimeout (5m); negative: never.
	RepositoryIdleTimeout time.Duration

	// MaintainInterval is how long the leader waits between two
	// maintenance passes over the open repositories (repository.Maintain:
	// a local git repository, or a remote's clone under CacheDir, gets
	// its small packs, loose objects and idle loose refs packed), from
	// the end of one to the start of the next; passes never overlap. A
	// failed run is logged and shown in the Repository's
	// ConditionMaintenanceFailed. Default maintsched.DefaultInterval
	// (1h); negative turns the scheduled passes off, leaving the
	// maintenance writes run by themselves.
	MaintainInterval time.Duration

	// WebhookAddr, with WebhookSecret, serves POST /webhooks/git on that
	// address, on every replica: a git server's push webhook signed with
	// WebhookSecret (package gitwebhook) stamps PushedAnnotation on each
	// Repository whose URL it names, which makes the replica that
	// reconciles it read the repository at once, asking a remote even
	// within its read window, so that Poll can be long. Default "": off.
	WebhookAddr   string
	WebhookSecret []byte

	// Workers is the number of objects of each kind reconciled at once;
	// default 4.
	Workers int
	// FunctionRunner, when set, evaluates the function images that are
	// not built in (see fnrunner.Client.Resolver); default none: such a
	// step fails with fnruntime.NotFoundError.
	FunctionRunner *fnrunner.Client
	// Wasm, when set, runs the function images that are not built in and
	// are kpt wasm images in-process (fnruntime.Options.Wasm; wasmfn),
	// before FunctionRunner; default none.
	Wasm fnruntime.WasmRuntime

	// inProcessReplica lets tests run several managers in one process
	// (controller names are otherwise unique per process).
	inProcessReplica bool
	// keepLeaseOnStop makes a stopping leader (or holder of shards) keep
	// its Leases until they expire, as a killed process does (tests).
	keepLeaseOnStop bool
	// identity names the replica in the sharding Leases; default the
	// host name and a random suffix.
	identity string
}

// identityHook, when set (by tests, before any operator starts), is the
// sharding identity of the replicas that have none in their Options.
var identityHook string

// operator is the manager and what its reconcilers share. One more
// reconciler (PackageVariant, PackageVariantSet) is one more add* call
// in main.go.
type operator struct {
	mgr ctrl.Manager
	// client is the manager's client, which with sharding reads the
	// PackageRevisions of the shards held too (shardedClient).
	client client.Client
	// latest caches the metadata of the PackageRevisions labelled latest,
	// with sharding; nil without.
	latest cache.Cache
	repos  *repoSet
	opts   Options
	// shards holds this replica's shards; nil without sharding.
	shards *sharder
	touch  chan event.GenericEvent
	// rediscover asks the Repository reconciler to discover a repository
	// now rather than at its next poll.
	rediscover chan event.GenericEvent
	// webhookURL is where the webhook listens, once addWebhook ran.
	webhookURL string
}

// scheme returns the scheme of every kind the operator reads or writes.
func scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, porchv1alpha2.AddToScheme, configv1alpha1.AddToScheme, configv1alpha2.AddToScheme,
	} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// newOperator returns the operator on the API server cfg points at, with
// no reconciler yet. It starts nothing: run mgr.Start.
func newOperator(cfg *rest.Config, o Options) (*operator, error) {
	if o.LeaderElectionID == "" {
		o.LeaderElectionID = "cad-operator"
	}
	if o.LeaderElectionNamespace == "" {
		o.LeaderElectionNamespace = o.Namespace
		if o.LeaderElectionNamespace == "" {
			o.LeaderElectionNamespace = "default"
		}
	}
	if o.MetricsAddr == "" {
		o.MetricsAddr = "0"
	}
	if o.Poll <= 0 {
		o.Poll = 30 * time.Second
	}
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.LeaseDuration <= 0 {
		o.LeaseDuration = 15 * time.Second
	}
	if o.RenewDeadline <= 0 {
		o.RenewDeadline = 10 * time.Second
	}
	if o.RetryPeriod <= 0 {
		o.RetryPeriod = 2 * time.Second
	}
	if o.Shards < 0 {
		return nil, fmt.Errorf("sharding: %d shards", o.Shards)
	}
	if o.Shards > 0 {
		o.LeaderElection = false
	}
	s, err := scheme()
	if err != nil {
		return nil, err
	}
	mo := ctrl.Options{
		Scheme:                        s,
		Metrics:                       metricsserver.Options{BindAddress: o.MetricsAddr},
		HealthProbeBindAddress:        "0",
		PprofBindAddress:              o.PprofAddr,
		LeaderElection:                o.LeaderElection,
		LeaderElectionID:              o.LeaderElectionID,
		LeaderElectionNamespace:       o.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: !o.keepLeaseOnStop,
	}
	mo.Controller = config.Controller{MaxConcurrentReconciles: o.Workers}
	if o.inProcessReplica {
		skip := true
		mo.Controller.SkipNameValidation = &skip
	}
	if o.LeaseDuration > 0 {
		mo.LeaseDuration = &o.LeaseDuration
	}
	if o.RenewDeadline > 0 {
		mo.RenewDeadline = &o.RenewDeadline
	}
	if o.RetryPeriod > 0 {
		mo.RetryPeriod = &o.RetryPeriod
	}
	// The cache keeps objects without their managedFields, which the
	// operator never reads: a PackageRevision's are a large part of its
	// size, and every replica caches every object. (Updates of a cached
	// object leave the server's managedFields as they are: nil means
	// unchanged.)
	mo.Cache = cache.Options{DefaultTransform: cache.TransformStripManagedFields()}
	if o.Namespace != "" {
		mo.Cache.DefaultNamespaces = map[string]cache.Config{o.Namespace: {}}
	}
	if o.Shards > 0 {
		// The PackageRevisions of the shards are cached by shard, those
		// without a shard label here (prcache.go).
		sel, err := unshardedSelector(o.Shards)
		if err != nil {
			return nil, err
		}
		mo.Cache.ByObject = map[client.Object]cache.ByObject{&porchv1alpha2.PackageRevision{}: {Label: sel}}
	}
	mgr, err := ctrl.NewManager(cfg, mo)
	if err != nil {
		return nil, fmt.Errorf("manager: %w", err)
	}
	c := mgr.GetClient()
	var sh *sharder
	var latest cache.Cache
	if o.Shards > 0 {
		store, err := newKubeLeases(cfg, o.LeaderElectionNamespace, o.LeaderElectionID)
		if err != nil {
			return nil, err
		}
		if o.identity == "" {
			o.identity = identityHook
		}
		if o.identity == "" {
			o.identity = newIdentity()
		}
		sh, err = newSharder(store, o.LeaderElectionID, o.identity, o.Shards, o.LeaseDuration, o.RenewDeadline, o.RetryPeriod,
			mgr.GetLogger().WithName("sharding"))
		if err != nil {
			return nil, err
		}
		sh.keepOnStop = o.keepLeaseOnStop
		sh.caches = &prCaches{newCache: func(i int) (cache.Cache, error) {
			co := cache.Options{HTTPClient: mgr.GetHTTPClient(), Scheme: s, Mapper: mgr.GetRESTMapper(),
				DefaultTransform: mo.Cache.DefaultTransform, DefaultNamespaces: mo.Cache.DefaultNamespaces,
				ByObject: map[client.Object]cache.ByObject{&porchv1alpha2.PackageRevision{}: {
					Label: labels.SelectorFromSet(labels.Set{shardLabel(o.Shards): strconv.Itoa(i)})}}}
			return cache.New(cfg, co)
		}}
		c = &shardedClient{Client: c, prs: sh.caches}
		if err := mgr.Add(sh); err != nil {
			return nil, err
		}
		// The variant reconcilers' trigger: the metadata of every
		// shard's latest revisions.
		latest, err = cache.New(cfg, cache.Options{HTTPClient: mgr.GetHTTPClient(), Scheme: s, Mapper: mgr.GetRESTMapper(),
			DefaultTransform: mo.Cache.DefaultTransform, DefaultNamespaces: mo.Cache.DefaultNamespaces,
			DefaultLabelSelector: labels.SelectorFromSet(labels.Set{porchv1alpha2.LatestRevisionLabel: "true"})})
		if err != nil {
			return nil, fmt.Errorf("sharding: %w", err)
		}
		if err := mgr.Add(latest); err != nil {
			return nil, err
		}
	}
	var resolver pipeline.Resolver = fnruntime.NewRegistry(&fnruntime.Options{Wasm: o.Wasm})
	if o.FunctionRunner != nil {
		resolver = o.FunctionRunner.Resolver(resolver)
	}
	pipe := stdfn.Kptfile(resolver, nil)
	var private map[string]string
	if o.CacheDir != "" {
		private = map[string]string{"cache": o.CacheDir}
	}
	roots, err := confine.New("operator", o.RepositoryRoots, private)
	if err != nil {
		return nil, err
	}
	repos := newRepoSet(c, mgr.GetAPIReader(), o.CacheDir, pipe, roots)
	repos.pool = repopool.New(&repopool.Options{MaxOpen: o.MaxOpenRepositories, IdleTimeout: o.RepositoryIdleTimeout})
	// Every replica closes its idle repositories, leader or not, and all
	// of them when it stops (those in use at their release).
	if err := mgr.Add(everyReplica(func(ctx context.Context) error {
		defer repos.pool.Close()
		return repos.pool.Run(ctx)
	})); err != nil {
		return nil, err
	}
	// A remote repository is fetched at most about twice a poll for
	// reads: by its discovery, and by a reconcile after half a poll.
	// Writes always fetch first.
	repos.readMaxAge = o.Poll / 2
	return &operator{
		mgr:        mgr,
		client:     c,
		latest:     latest,
		repos:      repos,
		opts:       o,
		shards:     sh,
		touch:      make(chan event.GenericEvent, 1024),
		rediscover: make(chan event.GenericEvent, 1024),
	}, nil
}

// everyReplica is a runnable that runs on every replica, not only the
// leader.
type everyReplica func(context.Context) error

func (f everyReplica) Start(ctx context.Context) error { return f(ctx) }
func (everyReplica) NeedLeaderElection() bool          { return false }

// prRepositoryIndex is the cache index of PackageRevisions by the
// Repository their RepositoryLabel names: a discovery lists the objects of
// its repository through it, in time proportional to them. (A label
// selector would be matched against every object of the namespace, so
// each poll of each repository would cost time proportional to the whole
// fleet's objects.)
const prRepositoryIndex = "cad.repository"

// prRepositoryOf is the prRepositoryIndex value of o.
func prRepositoryOf(o client.Object) []string {
	if r := o.GetLabels()[porchv1alpha2.RepositoryLabel]; r != "" {
		return []string{r}
	}
	return nil
}

// addRepositories adds the Repository reconciler (discovery).
func (op *operator) addRepositories() error {
	if err := op.mgr.GetFieldIndexer().IndexField(context.Background(), &porchv1alpha2.PackageRevision{}, prRepositoryIndex, prRepositoryOf); err != nil {
		return err
	}
	r := &repoReconciler{client: op.client, repos: op.repos, poll: op.opts.Poll, touch: op.touch}
	return r.setup(op.mgr, op.rediscover, op.shards)
}

// addMaintenance adds the scheduled maintenance of the open repositories
// (Options.MaintainInterval), run by the leader only, or with sharding by
// every replica over the repositories of its shards; none when it is
// off.
func (op *operator) addMaintenance() error {
	if op.opts.MaintainInterval < 0 {
		return nil
	}
	loop := &maintsched.Loop{
		Interval: op.opts.MaintainInterval,
		Logger:   slog.New(logr.ToSlogHandler(op.mgr.GetLogger().WithName("maintenance"))),
		Repos: func() []maintsched.Repo {
			return slices.DeleteFunc(op.repos.maintainable(), func(r maintsched.Repo) bool {
				return !op.shards.owns(repoKey(r.Namespace, r.Name))
			})
		},
		Report: func(r maintsched.Repo, err error) {
			if op.repos.noteMaintenance(r, err) {
				op.rediscoverRepository(context.Background(), r.Namespace, r.Name) // shows it in the status
			}
		},
	}
	// A RunnableFunc runs on the leader only.
	return op.mgr.Add(manager.RunnableFunc(loop.Run))
}

// addPackageRevisions adds the PackageRevision reconciler.
func (op *operator) addPackageRevisions() error {
	r := &prReconciler{client: op.client, repos: op.repos, retry: op.opts.Poll, events: op.mgr.GetEventRecorder("cad-operator"), rediscover: op.rediscoverRepository}
	return r.setup(op.mgr, op.touch, op.shards)
}

// rediscoverRepository queues the discovery of Repository name in ns (the
// PackageRevision reconciler wrote to it). It never blocks: a full queue
// means discovery is busy anyway.
func (op *operator) rediscoverRepository(ctx context.Context, ns, name string) {
	var obj configv1alpha1.Repository
	if err := op.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &obj); err != nil {
		return
	}
	select {
	case op.rediscover <- event.GenericEvent{Object: &obj}:
	default:
	}
}

// addVariants adds the PackageVariant and PackageVariantSet reconcilers.
func (op *operator) addVariants() error {
	objects := kubeObjects{reader: op.mgr.GetAPIReader(), mapper: op.mgr.GetRESTMapper()}
	for _, set := range []bool{false, true} {
		r := &variantReconciler{set: set, client: op.client, repos: op.repos, objects: objects,
			resync: op.opts.Poll, rediscover: op.rediscoverNamespace}
		if err := r.setup(op.mgr, op.shards, op.latest); err != nil {
			return err
		}
	}
	return nil
}

// rediscoverNamespace queues the discovery of every repository of ns (the
// drafts a variant sync wrote appear as objects without waiting for the
// poll). It never blocks: a full queue means discovery is busy anyway.
func (op *operator) rediscoverNamespace(ctx context.Context, ns string) {
	var l configv1alpha1.RepositoryList
	if err := op.client.List(ctx, &l, client.InNamespace(ns)); err != nil {
		return
	}
	for i := range l.Items {
		select {
		case op.rediscover <- event.GenericEvent{Object: l.Items[i].DeepCopy()}:
		default:
		}
	}
}
