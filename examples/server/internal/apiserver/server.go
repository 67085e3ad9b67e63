// Package apiserver is cad's reference server: Porch's API groups served by
// k8s.io/apiserver's generic API server, as Porch serves them, with cad's
// engine and repositories as the storage of each resource, so that kubectl,
// client-go, controller-runtime and porchctl work against it unchanged.
//
// It serves porch.kpt.dev/v1alpha1 packagerevisions (with the approval
// subresource) and packagerevisionresources, config.porch.kpt.dev/v1alpha1
// repositories and packagevariants, config.porch.kpt.dev/v1alpha2
// packagevariantsets, and core v1 namespaces and (without Options.Secrets)
// secrets. The generic server gives them the whole Kubernetes API
// contract: discovery, OpenAPI v2 and v3 (kubectl explain), get, list,
// watch, create, update, every patch type including server-side apply with
// managedFields, delete, dry runs (kubectl diff), label and field
// selectors, Tables, resourceVersions with optimistic concurrency and
// Kubernetes Status errors. A dry run of a package revision write runs in
// a write batch of its repository that is discarded (generic.go,
// genericstorage.go).
//
// Package revisions are not stored by the server: each is read from its
// repository on every request (see the cad library's design), and its
// resourceVersion is the revision's Meta.Version, which changes with its
// content, lifecycle and labels. A PackageRevision is created from its one
// creation task (init, clone, edit or upgrade), which is not stored; an
// update of spec.lifecycle proposes, rejects or proposes deletion, and the
// approval subresource approves. Labels and annotations are kept in the
// repository (repository.MetadataWriter); kpt.dev/latest-revision is
// computed. Watches come from one poller that reads every registered
// repository's Version every Options.GitPollInterval and, when it
// changed, its listing, and sends what changed (watch.go).
//
// Registered repositories are opened on demand and kept in a bounded
// pool (scope.go): at most Options.MaxOpenRepositories stay open while
// no request uses them, and one unused for Options.RepositoryIdleTimeout
// is closed. A request holds the repositories it touches open until its
// response is written. What the server keeps of a repository (its
// listing, its list responses, its Version's stamps, its damage and
// maintenance status) belongs to its registration and survives the
// closing and opening again of the repository.
//
// Lists read no more than the repositories' state demands: a
// repository's listing (its revisions and their served objects, each
// object's JSON encoded once) is kept while its Version stays the same,
// and a PackageRevision list response is kept whole, keyed by the request
// (namespace, selectors, limit, continue token, JSON or Table) and the
// Versions of the repositories it covers, bounded by
// Options.ListCacheBytes. A request whose repositories did not change
// since an identical one gets that body as it was written; concurrent
// identical requests share one build. A local git repository's Version
// is checked with a few stat calls while its refs' files are unchanged
// (versionCache), so a write by any process, this one or
// another, is seen by the next list. Later pages of a paged list come
// from the list the first page was cut from, never from a new list.
// With Options.LiveCluster, GET packagerevisions/NAME/livestatus (cad's,
// not Porch's) returns a LiveStatus: the status of the revision's
// resources in that cluster, computed by the cad library's live package.
//
// The other objects are kept in an embedded store under the data directory
// (package store) and survive a restart. Each registered Repository is opened
// with cad.Open (gitrepo, ocirepo); PackageVariants and PackageVariantSets are
// synced by a VariantSyncer, by default cad's variant package, on every
// change and periodically.
//
// # Security
//
// Without Options.Tokens and Options.ClientCertificates the server has no
// authentication and no authorization: bind it to loopback. With either,
// every request but /healthz, /livez, /readyz and /version must
// authenticate (401 otherwise) and is authorized by the roles of its user
// (see Role; 403 otherwise). Options.RefuseSelfApproval refuses the
// approval of a revision by a user who created, edited or proposed it;
// the server records those users in the revision's AuthorsAnnotation.
//
// Local git repositories, and local or file:// clone sources, are opened
// only under Options.RepositoryRoots (the data directory by default, less
// the server's own caches). A repository or clone URL that embeds
// credentials is refused: credentials come from a secretRef, resolved to a
// Secret the server serves or in Options.SecretsDir (see its layout
// there). Request bodies are capped by Options.MaxBodyBytes, YAML bodies
// by Options.YAMLLimits before they are decoded. Roles are server-wide,
// not scoped to namespaces; Secrets are an admin's.
//
// A Server is safe for concurrent use. Build it with New, serve its Handler
// and run its background work (the poller that feeds watches, closing
// idle repositories, reopening repositories that failed to open,
// maintenance, PackageVariant syncing) with Run.
package apiserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/configasdata/cad"
	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/examples/internal/confine"
	"github.com/configasdata/cad/examples/internal/maintsched"
	"github.com/configasdata/cad/examples/internal/porchapi"
	"github.com/configasdata/cad/examples/internal/repopool"
	"github.com/configasdata/cad/examples/internal/variantfail"
	"github.com/configasdata/cad/examples/server/internal/store"
	"github.com/configasdata/cad/fnruntime"
	"github.com/configasdata/cad/fnruntime/stdfn"
	"github.com/configasdata/cad/live"
	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/repository/ocirepo"
	"github.com/configasdata/cad/revision"
)

// Defaults of Options.
const (
	DefaultMaxBodyBytes     = 6 << 20 // Porch's figure
	DefaultMaxPackageFiles  = 10000
	DefaultGitPollInterval  = time.Second
	DefaultMaintainInterval = maintsched.DefaultInterval
	DefaultVariantResync    = 5 * time.Minute
	DefaultMaxWatch         = time.Hour
	DefaultRepositoryName   = "default"
	DefaultNamespace        = "default"
	defaultOpenTimeout      = 2 * time.Minute
	defaultReopenInterval   = 30 * time.Second
	defaultListConcurrency  = 8
	defaultRequestTimeout   = 2 * time.Minute
)

// OpenFunc opens the repository spec describes, registered in namespace ns.
type OpenFunc func(ctx context.Context, ns string, spec repository.Spec) (repository.Repository, error)

// Options configure New. Only DataDir is required.
type Options struct {
	// DataDir holds the object store, the default repository and the
	// local clones of remote git repositories; created when missing.
	DataDir string
	// NoDefaultRepository leaves out the registration, on the first start
	// with DataDir, of a local bare git repository (DataDir/git/default.git)
	// as Repository "default" in namespace "default".
	NoDefaultRepository bool
	// Open opens registered repositories. Default: git through gitrepo
	// (remote repositories cloned under DataDir/cache), oci through
	// ocirepo, both with cad.Open.
	Open OpenFunc
	// Pipeline renders packages on every save. Default: the Kptfile
	// pipeline with fnruntime's builtin functions (no exec, no
	// containers), with YAMLLimits.
	Pipeline pipeline.Pipeline
	// GitPollInterval is how often the server reads the Version of every
	// registered repository to find the changes that package revision
	// watches report (a local git repository whose refs' files did not
	// change is checked with stat calls, without opening it); default
	// DefaultGitPollInterval. A remote git repository (with the default
	// Open) is read from its mirror, without asking the remote, within
	// half of it of its last fetch (gitrepo.Options.RemoteReadMaxAge), so
	// that one poll and the reads that follow it share one fetch; a push
	// webhook makes the next read ask at once.
	GitPollInterval time.Duration
	// MaxOpenRepositories bounds the registered repositories kept open
	// while no request uses them (an open local git repository holds
	// file descriptors and caches): beyond it the least recently used
	// are closed, and opened again by the next request or poll that
	// needs them. Repositories a request uses stay open until its
	// response is written. OCI repositories and git repositories in
	// memory (gitrepo.MemoryURL) stay open; a remote git repository
	// (cloned under DataDir/cache) closed for the bound is opened again,
	// and fetched, at its next poll. Default repopool.DefaultMaxOpen
	// (256).
	MaxOpenRepositories int
	// RepositoryIdleTimeout closes an open repository that no request
	// or poll used for this long. Default repopool.DefaultIdleTimeout
	// (5m); negative: never.
	RepositoryIdleTimeout time.Duration
	// MaintainInterval is how long Run waits between two maintenance
	// passes over the registered repositories, each closed one opened
	// for its run through the pool (repository.Maintain: a git
	// repository on disk, or a remote's mirror under the data
	// directory, gets its small packs, loose objects and idle loose refs
	// packed), from the end of one to the start of the next; passes
	// never overlap. A failed run is logged and shown in the
	// Repository's ConditionMaintenanceFailed. Default
	// DefaultMaintainInterval; negative turns the scheduled passes off,
	// leaving the maintenance writes run by themselves.
	MaintainInterval time.Duration
	// ListCacheBytes bounds the memory of the list response cache: the
	// bodies of recent PackageRevision lists, each kept while the
	// repositories it covers stay at the Versions it was built from, so
	// that repeated and concurrent identical lists are written without
	// being built again. Default DefaultListCacheBytes; negative turns
	// the cache off.
	ListCacheBytes int64
	// CompressLists sends PackageRevision lists of 128 KiB or more
	// gzip-compressed to clients that accept it (as kube-apiserver
	// does); a cached list is compressed once.
	CompressLists bool
	// listGzipMin replaces gzipMinBytes when set (tests).
	listGzipMin int
	// MaxBodyBytes bounds request bodies; default DefaultMaxBodyBytes.
	// Larger bodies get 413.
	MaxBodyBytes int64
	// MaxPackageFiles bounds the files of one PackageRevisionResources
	// update; default DefaultMaxPackageFiles. An update with more gets 413
	// before any work is done on it.
	MaxPackageFiles int
	// YAMLLimits bound the work of reading user YAML: request bodies sent
	// as YAML (per-file bounds), and the package content the engine
	// writes (engine.Options.YAMLLimits). nil means revision's defaults.
	// A body over a bound gets 400, content over a bound the engine's
	// *revision.YAMLLimitError (400). The default Pipeline gets them too;
	// a Pipeline given in Options has its own pipeline.Options.YAMLLimits.
	YAMLLimits *revision.YAMLLimits
	// MaxWatch bounds the duration of one watch request; default
	// DefaultMaxWatch.
	MaxWatch time.Duration
	// RequestTimeout bounds the work of one non-watch request; default
	// two minutes.
	RequestTimeout time.Duration
	// Variants syncs PackageVariants and PackageVariantSets. Nil means
	// VariantPackageSyncer, cad's variant package.
	Variants VariantSyncer
	// NoVariantSync stores PackageVariants and PackageVariantSets without
	// acting on them.
	NoVariantSync bool
	// VariantResync is how often every PackageVariant and Set is synced
	// again; default DefaultVariantResync.
	VariantResync time.Duration
	// VariantRetryHeld is how long a PackageVariant or Set held by a sync
	// that failed for good (a bound refused it, or it is invalid: see
	// VariantSyncer) stays skipped before one more sync is tried, at the
	// next resync after it passes. Default 0: a held object is synced
	// again only when its spec changes.
	VariantRetryHeld time.Duration
	// WebhookSecret, when set, serves POST /webhooks/git: a git server's
	// push webhook (GitHub, Gitea, Forgejo, GitLab, Bitbucket) signed
	// with it (package gitwebhook) makes every registered git repository
	// whose URL the payload names be read at once, so that polls
	// (GitPollInterval) can be rare. The path is outside the API's
	// authentication: the signature is its.
	WebhookSecret []byte
	// AuthorName and AuthorEmail identify the server's commits; empty means
	// each repository's configured author.
	AuthorName, AuthorEmail string
	// Logger receives the server's log; nil is silent.
	Logger *slog.Logger
	// LiveCluster, when set, is the cluster packages are deployed to: the
	// packagerevisions/NAME/livestatus subresource (GET) then returns the
	// status of a revision's resources there (see LiveStatus).
	LiveCluster live.Reader

	// Tokens, when not nil, authenticates requests that carry an
	// "Authorization: Bearer <token>" header (see LoadTokenFile).
	Tokens Tokens
	// ClientCertificates authenticates requests by the TLS client
	// certificate that the http.Server verified (its tls.Config's
	// ClientCAs and ClientAuth): the user is the subject's common name,
	// its groups the subject's organizations.
	ClientCertificates bool
	// RefuseSelfApproval refuses (403) the approval of a revision by a
	// user who created, edited or proposed it. It needs authentication.
	RefuseSelfApproval bool
	// RepositoryRoots are the directories under which local git
	// repositories and local clone sources may be opened. Default: the
	// data directory. The data directory's git directory (the default
	// repository's) is always allowed, its object store and its caches of
	// remote repositories never.
	RepositoryRoots []string
	// SecretsDir holds the credentials that the secretRefs of
	// repositories and git clone upstreams name, as
	// <SecretsDir>/<namespace>/<secret name>/<key> files, the layout of a
	// Kubernetes Secret mounted as a volume. The keys are those of
	// Porch's Secrets: username and password (basic auth), bearerToken,
	// or ssh-privatekey with the optional ssh-passphrase and known_hosts.
	// Empty means none: a secretRef fails to resolve, and the repository
	// reports it in its Ready condition.
	SecretsDir string
	// Secrets, when not nil, resolves secretRefs instead of SecretsDir:
	// it returns the data of secret name in namespace ns (a Kubernetes
	// Secret's data), or an error wrapping repository.ErrNotFound when
	// there is none.
	Secrets func(ctx context.Context, ns, name string) (map[string][]byte, error)

	// ExternalRepositories makes the Repository objects someone else's
	// (a Kubernetes cluster's): the server registers none of its own
	// (no default repository, none from the data directory), mirrors
	// those given to ApplyRepository and RemoveRepository, and refuses
	// to create, change or delete repositories over its API (403).
	ExternalRepositories bool
	// RequestHeader, when not nil, authenticates requests that an
	// authenticating proxy (kube-apiserver's aggregation layer)
	// forwards; see RequestHeader.
	RequestHeader *RequestHeader
	// Authorizer, when not nil, decides every resource request instead
	// of the cad:* roles (a SubjectAccessReview in a cluster): its
	// answer is final (Porch's own split of verbs over subresources:
	// approving is an update of packagerevisions/approval). An error
	// refuses the request with 500.
	Authorizer authorizer.Authorizer
}

// Server is the reference server. See the package documentation.
type Server struct {
	opts  Options
	log   *slog.Logger
	store *store.Store
	pipe  pipeline.Pipeline

	mu      sync.RWMutex
	repos   map[nsName]*repoEntry
	engines map[string]*engine.Engine
	running bool // Run was called
	// pool holds the registered repositories open, at most
	// Options.MaxOpenRepositories of them while unused (scope.go).
	pool *repopool.Pool
	// pushed takes the registrations a push webhook named, for the
	// poller to poll at once; kick asks it for a whole pass (when pushed
	// is full).
	pushed chan *repoEntry
	kick   chan struct{}

	hub      *hub
	snaps    *snapshots
	prs      *prCache   // PackageRevision objects by revision version
	jsons    *jsonMemo  // their JSON, for lists
	lists    *listCache // list bodies; nil when off
	variantQ chan variantWork
	variants VariantSyncer // nil when variants are not synced
	// heldRetries says when a held variant is tried again.
	heldRetries *variantfail.Retries
	// interrupted is the journal of a variant sync that the process did
	// not survive, until that object is synced again (variant loop only).
	interrupted *syncJournal
	handler     http.Handler
	stopHooks   context.CancelFunc
	// prDef is the packagerevisions resource, whose lists cachedLists
	// serves.
	prDef *resourceDef
	// scheme and codecs of the served kinds (newScheme)
	scheme   *runtime.Scheme
	codecs   serializer.CodecFactory
	closeOne sync.Once
	roots    *confine.Roots // resolved RepositoryRoots
}

type nsName struct{ ns, name string }

// repoEntry is one registered repository: its spec and what the server
// keeps of it while it is open or closed. The repository itself is in
// the server's pool under key, acquired by each request that uses it
// (scope.go).
type repoEntry struct {
	ns, name string
	spec     repository.Spec
	err      error  // why it did not open when registered (reopenLoop registers it again); nil: it opened; not changed after
	gen      uint64 // unique to this registration
	key      string // its key in the pool, unique to this registration

	// vc reads the Version of a git repository on disk while it is
	// closed too; set at its first open (nil: none).
	vcMu sync.Mutex
	vc   *versionCache

	// pollMu guards what the poller saw last (watch.go).
	pollMu   sync.Mutex
	polled   bool   // the poller has a baseline
	pollVer  string // the Version it was taken at ("" for none)
	pollObjs map[string]*porchapi.PackageRevision

	dmgMu  sync.Mutex
	damage []string // what the last whole list left out as damaged
	maint  string   // the error of the last scheduled maintenance run; "" when it succeeded
}

// noteDamage records what err, a whole list of e's repository, says was
// left out as damaged (nothing when it holds no *repository.DamageError)
// and stores e's status again when that changed: the Repository then has
// a Damaged condition naming it.
func (s *Server) noteDamage(e *repoEntry, err error) {
	now := porchapi.DamageOf(err)
	e.dmgMu.Lock()
	changed := !slices.Equal(now, e.damage)
	e.damage = now
	e.dmgMu.Unlock()
	if changed {
		s.setRepositoryStatus(e)
	}
}

// noteMaintenance records the outcome of a scheduled maintenance run of
// e's repository (err nil: it succeeded) and stores e's status again when
// that changed: a failure shows in ConditionMaintenanceFailed.
func (s *Server) noteMaintenance(e *repoEntry, err error) {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	e.dmgMu.Lock()
	changed := msg != e.maint
	e.maint = msg
	e.dmgMu.Unlock()
	if changed {
		s.setRepositoryStatus(e)
	}
}

// maintenanceError returns the error of the last scheduled maintenance
// run of e's repository, "" when it succeeded or none ran.
func (e *repoEntry) maintenanceError() string {
	e.dmgMu.Lock()
	defer e.dmgMu.Unlock()
	return e.maint
}

// damaged returns what the last whole list of e's repository left out as
// damaged.
func (e *repoEntry) damaged() []string {
	e.dmgMu.Lock()
	defer e.dmgMu.Unlock()
	return e.damage
}

// New builds a Server over the data directory of opts: it opens the store,
// registers the default repository on first start, and registers every
// stored repository, opening each once to report in its status whether it
// opens (a repository that fails to open is retried by Run); beyond
// Options.MaxOpenRepositories they are closed again, least recently used
// first. It starts no goroutines.
func New(ctx context.Context, opts *Options) (*Server, error) {
	if opts == nil || opts.DataDir == "" {
		return nil, errors.New("apiserver: Options.DataDir is required")
	}
	o := *opts
	if o.GitPollInterval <= 0 {
		o.GitPollInterval = DefaultGitPollInterval
	}
	if o.MaintainInterval == 0 {
		o.MaintainInterval = DefaultMaintainInterval
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.MaxPackageFiles <= 0 {
		o.MaxPackageFiles = DefaultMaxPackageFiles
	}
	if o.MaxWatch <= 0 {
		o.MaxWatch = DefaultMaxWatch
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = defaultRequestTimeout
	}
	if o.VariantResync <= 0 {
		o.VariantResync = DefaultVariantResync
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	dir, err := filepath.Abs(o.DataDir)
	if err != nil {
		return nil, fmt.Errorf("apiserver: %w", err)
	}
	o.DataDir = dir
	if o.RefuseSelfApproval && o.Tokens == nil && !o.ClientCertificates {
		return nil, errors.New("apiserver: Options.RefuseSelfApproval needs authentication (Tokens or ClientCertificates)")
	}
	roots, err := resolveRoots(dir, o.RepositoryRoots)
	if err != nil {
		return nil, err
	}
	st, err := store.Open(filepath.Join(dir, "objects"), nil)
	if err != nil {
		return nil, fmt.Errorf("apiserver: %w", err)
	}
	s := &Server{
		opts:     o,
		log:      log,
		store:    st,
		repos:    map[nsName]*repoEntry{},
		engines:  map[string]*engine.Engine{},
		hub:      newHub(),
		snaps:    newSnapshots(64),
		prs:      newPRCache(defaultPRCacheSize),
		jsons:    newJSONMemo(defaultPRCacheSize),
		variantQ: make(chan variantWork, 1024),
		roots:    roots,
		pool:     repopool.New(&repopool.Options{MaxOpen: o.MaxOpenRepositories, IdleTimeout: o.RepositoryIdleTimeout}),
		kick:     make(chan struct{}, 1),
		pushed:   make(chan *repoEntry, 256),

		heldRetries: &variantfail.Retries{Interval: o.VariantRetryHeld},
	}
	if o.ListCacheBytes == 0 {
		o.ListCacheBytes = DefaultListCacheBytes
	}
	if o.ListCacheBytes > 0 {
		s.lists = newListCache(o.ListCacheBytes)
		if o.listGzipMin > 0 {
			s.lists.gzipMin = o.listGzipMin
		}
	}
	if !o.NoVariantSync {
		s.variants = o.Variants
		if s.variants == nil {
			s.variants = VariantPackageSyncer{}
		}
	}
	s.pipe = o.Pipeline
	if s.pipe == nil {
		s.pipe = stdfn.Kptfile(fnruntime.NewRegistry(nil), &pipeline.Options{YAMLLimits: o.YAMLLimits})
	}
	if s.opts.Open == nil {
		s.opts.Open = s.defaultOpen
	}
	if err := s.bootstrap(); err != nil {
		return nil, err
	}
	objs, _ := s.store.List(resRepositories, "*")
	if o.ExternalRepositories {
		// A mirror: the cluster's informer fills it again.
		for _, u := range objs {
			_, _ = s.store.Delete(resRepositories, u.GetNamespace(), u.GetName(), "")
		}
		objs = nil
	}
	for _, u := range objs {
		r, err := repositoryFrom(u)
		if err != nil {
			log.Warn("stored repository does not decode", "namespace", u.GetNamespace(), "name", u.GetName(), "err", err)
			continue
		}
		if r, err = s.stripStoredCredentials(u, r); err != nil {
			return nil, err
		}
		s.setRepositoryStatus(s.register(ctx, r))
	}
	gs, err := s.genericServer()
	if err != nil {
		return nil, fmt.Errorf("apiserver: %w", err)
	}
	prepared := gs.PrepareRun()
	hookCtx, stopHooks := context.WithCancel(context.WithoutCancel(ctx))
	s.stopHooks = stopHooks
	gs.RunPostStartHooks(hookCtx)
	s.handler = s.withWebhook(liftWatchDeadlines(prepared.Handler))
	return s, nil
}

// bootstrap creates namespace default and, on the first start, the default
// repository.
func (s *Server) bootstrap() error {
	if _, err := s.store.Get(resNamespaces, "", DefaultNamespace); errors.Is(err, store.ErrNotFound) {
		if _, err := s.store.Create(resNamespaces, newNamespace(DefaultNamespace)); err != nil {
			return fmt.Errorf("apiserver: create namespace default: %w", err)
		}
	}
	marker := filepath.Join(s.opts.DataDir, "initialized")
	if _, err := os.Stat(marker); err == nil || s.opts.NoDefaultRepository || s.opts.ExternalRepositories {
		return nil
	}
	gitDir := filepath.Join(s.opts.DataDir, "git", "default.git")
	if _, err := os.Stat(gitDir); errors.Is(err, os.ErrNotExist) {
		if _, err := git.PlainInitWithOptions(gitDir, &git.PlainInitOptions{
			Bare:        true,
			InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName(repository.DefaultBranch)},
		}); err != nil {
			return fmt.Errorf("apiserver: create the default git repository: %w", err)
		}
	}
	if _, err := s.store.Get(resRepositories, DefaultNamespace, DefaultRepositoryName); errors.Is(err, store.ErrNotFound) {
		r := porchapi.RepositoryFromSpec(DefaultNamespace, repository.Spec{
			Name:        DefaultRepositoryName,
			Description: "local git repository created by the cad reference server",
			Type:        repository.TypeGit,
			Git:         &repository.GitSpec{Repo: gitDir, Branch: repository.DefaultBranch, CreateBranch: true},
		})
		u, err := toUnstructured(&r)
		if err != nil {
			return err
		}
		if _, err := s.store.Create(resRepositories, u); err != nil {
			return fmt.Errorf("apiserver: register the default repository: %w", err)
		}
	}
	return os.WriteFile(marker, []byte("cad reference server data directory\n"), 0o644)
}

// isRemote reports whether a git URL names a remote (not a local path).
func isRemote(url string) bool {
	for _, p := range []string{"http://", "https://", "ssh://", "git://"} {
		if strings.HasPrefix(url, p) {
			return true
		}
	}
	at, colon := strings.Index(url, "@"), strings.Index(url, ":")
	slash := strings.Index(url, "/")
	return at > 0 && colon > at && (slash < 0 || colon < slash)
}

func (s *Server) defaultOpen(ctx context.Context, ns string, spec repository.Spec) (repository.Repository, error) {
	return cad.Open(ctx, spec, cad.Backends{
		repository.TypeGit: func(ctx context.Context, spec cad.Spec) (cad.Repository, error) {
			o := &gitrepo.Options{PollInterval: s.opts.GitPollInterval, Logger: s.log}
			if isRemote(spec.Git.Repo) {
				o.CacheDir = filepath.Join(s.opts.DataDir, "cache", ns, spec.Name)
				o.RemoteReadMaxAge = s.opts.GitPollInterval / 2
			}
			auth, err := s.gitAuth(ns, spec.Git.SecretRef.Name, spec.Git.Repo)
			if err != nil {
				return nil, err
			}
			o.Auth = auth
			r, err := gitrepo.Open(ctx, spec, o)
			if err != nil {
				return nil, err // not a typed nil in the interface
			}
			return r, nil
		},
		repository.TypeOCI: func(ctx context.Context, spec cad.Spec) (cad.Repository, error) {
			o := &ocirepo.Options{PollInterval: s.opts.GitPollInterval, Logger: s.log}
			auth, err := s.ociAuth(ns, spec.OCI.SecretRef.Name)
			if err != nil {
				return nil, err
			}
			o.Auth = auth
			r, err := ocirepo.Open(ctx, spec, o)
			if err != nil {
				return nil, err
			}
			return r, nil
		},
	})
}

// entry returns the registration of repository name in ns.
func (s *Server) entry(ns, name string) (*repoEntry, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, ok := s.repos[nsName{ns, name}]
	return e, ok
}

// entries returns the registrations in ns ("" for all), sorted.
func (s *Server) entries(ns string) []*repoEntry {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []*repoEntry
	for k, e := range s.repos {
		if ns == "" || k.ns == ns {
			out = append(out, e)
		}
	}
	sortEntries(out)
	return out
}

// engineFor returns the Engine of request rq: over the repositories of
// its namespace, acting for the user of ctx (its commits and approvals
// are authored by the user; without authentication engine(rq.ns)'s
// authors), and, for a dry run, working through its write batch (rq.dry)
// in place of that repository.
func (s *Server) engineFor(ctx context.Context, rq *request) *engine.Engine {
	return s.userEngine(ctx, rq.ns).Using(rq.dry)
}

// userEngine returns the Engine over the repositories of namespace ns that
// acts for the user of ctx. Without authentication it is engine(ns).
func (s *Server) userEngine(ctx context.Context, ns string) *engine.Engine {
	u := userFrom(ctx)
	if u == nil {
		return s.engine(ns)
	}
	e, err := engine.New(&engine.Options{
		Repositories: nsRepos{s: s, ns: ns},
		Pipeline:     s.pipe,
		Logger:       s.log,
		YAMLLimits:   s.opts.YAMLLimits,
		AuthorName:   u.Name,
		AuthorEmail:  u.Name,
	})
	if err != nil {
		panic(err) // only for missing Repositories
	}
	return e
}

// engine returns the Engine over the repositories of namespace ns.
func (s *Server) engine(ns string) *engine.Engine {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.engines[ns]; ok {
		return e
	}
	e, err := engine.New(&engine.Options{
		Repositories: nsRepos{s: s, ns: ns},
		Pipeline:     s.pipe,
		Logger:       s.log,
		YAMLLimits:   s.opts.YAMLLimits,
		AuthorName:   s.opts.AuthorName,
		AuthorEmail:  s.opts.AuthorEmail,
	})
	if err != nil {
		panic(err) // only for missing Repositories
	}
	s.engines[ns] = e
	return e
}

// nsRepos is the engine.Repositories of one namespace; it also implements
// engine.URLer and engine.Deployer.
type nsRepos struct {
	s  *Server
	ns string
}

func (n nsRepos) Repository(ctx context.Context, name string) (repository.Repository, error) {
	e, ok := n.s.entry(n.ns, name)
	if !ok {
		return nil, repository.Errorf("open", name, cad.Key{}, repository.ErrNotFound,
			"no repository %q in namespace %q", name, n.ns)
	}
	return n.s.acquire(ctx, e)
}

func (n nsRepos) Names(context.Context) ([]string, error) {
	var names []string
	for _, e := range n.s.entries(n.ns) {
		if e.openErr() == nil {
			names = append(names, e.name)
		}
	}
	return names, nil
}

func (n nsRepos) URL(name string) string {
	if e, ok := n.s.entry(n.ns, name); ok && e.spec.Git != nil {
		return e.spec.Git.Repo
	}
	return ""
}

func (n nsRepos) Deployment(name string) bool {
	e, ok := n.s.entry(n.ns, name)
	return ok && e.spec.Deployment
}

// Handler returns the server's HTTP handler.
func (s *Server) Handler() http.Handler { return s.handler }

// Run runs the server's background work until ctx is done: the poller
// that reads every registered repository's Version and feeds package
// revision watches with what changed, closing repositories idle for
// Options.RepositoryIdleTimeout, reopening repositories that failed to
// open, maintaining the repositories every Options.MaintainInterval
// (opening those that are closed), and syncing PackageVariants and Sets
// (unless Options.NoVariantSync). It returns nil when ctx is done, after
// that work stopped.
func (s *Server) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.running {
		s.mu.Unlock()
		return errors.New("apiserver: Run called twice")
	}
	s.running = true
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, run := range []func(context.Context){
		s.pollLoop,
		s.reopenLoop,
		func(ctx context.Context) { s.pool.Run(ctx) },
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run(ctx)
		}()
	}
	if s.opts.MaintainInterval > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.maintainLoop().Run(ctx)
		}()
	}
	if s.variants != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.variantLoop(ctx)
		}()
	}
	<-ctx.Done()
	wg.Wait()
	return nil
}

// reopenLoop retries repositories that failed to open.
func (s *Server) reopenLoop(ctx context.Context) {
	t := time.NewTicker(defaultReopenInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, e := range s.entries("") {
			if e.openErr() == nil {
				continue
			}
			u, err := s.store.Get(resRepositories, e.ns, e.name)
			if err != nil {
				continue
			}
			r, err := repositoryFrom(u)
			if err != nil {
				continue
			}
			if e := s.register(ctx, r); e.openErr() == nil {
				s.setRepositoryStatus(e)
			}
		}
	}
}

// Close closes every repository no request uses, and the others when
// their requests end. The server must not be used after.
func (s *Server) Close() error {
	s.closeOne.Do(func() {
		if s.stopHooks != nil {
			s.stopHooks()
		}
		s.pool.Close()
	})
	return nil
}
