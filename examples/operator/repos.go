package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/google/go-containerregistry/pkg/authn"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/configasdata/cad/api/config/v1alpha1"
	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/examples/internal/confine"
	"github.com/configasdata/cad/examples/internal/maintsched"
	"github.com/configasdata/cad/examples/internal/porchapi"
	"github.com/configasdata/cad/examples/internal/repopool"
	"github.com/configasdata/cad/examples/internal/secretauth"
	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/repository/ocirepo"
)

// repoSet opens the repositories that Repository objects describe, one
// per object, through a repopool.Pool: a repository is opened at its
// first use, kept open while it is used and closed again when it has not
// been used for the pool's idle time or when more than the pool's bound
// are open, least recently used first (remote repositories cloned in
// memory and OCI repositories stay open: they hold no descriptors and
// would be fetched anew). A repository is reopened when its spec
// (generation) or its credentials Secret (resourceVersion) changes. The
// repositories are used through a repoScope, one per reconcile, which
// holds each repository it touched open until the reconcile ends. It
// hands out engines per namespace whose repository names are the
// Repository objects of that namespace. It is safe for concurrent use.
type repoSet struct {
	objects  client.Reader // Repository objects (the manager's cache)
	secrets  client.Reader // Secrets, read from the API server directly
	cacheDir string        // "" keeps remote clones in memory
	pipe     pipeline.Pipeline
	roots    *confine.Roots // where local repositories may be; nil: nowhere
	// readMaxAge is gitrepo's RemoteReadMaxAge for remote repositories:
	// reads within it of the last fetch (the reconciles of the objects a
	// discovery just listed) ask the remote nothing.
	readMaxAge time.Duration
	pool       *repopool.Pool

	mu    sync.Mutex
	known map[types.NamespacedName]*knownRepo
	// lastPush is each Repository's PushedAnnotation when last
	// reconciled (webhook.go).
	lastPush map[types.NamespacedName]string
}

// knownRepo is what the set knows of a registered repository, open or
// not.
type knownRepo struct {
	spec        repository.Spec
	fingerprint string
	// maint is the error of the last scheduled maintenance run of the
	// repository, "" when it succeeded or none ran.
	maint string
	// inputs and count are those of the last discovery that found
	// nothing to do (see repoReconciler.discover); "" when none did.
	inputs string
	count  int
}

// discovered returns the revision count of the last discovery of ns/name
// that found nothing to do, when it had these inputs.
func (s *repoSet) discovered(nn types.NamespacedName, inputs string) (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := s.known[nn]
	if k == nil || inputs == "" || k.inputs != inputs {
		return 0, false
	}
	return k.count, true
}

// noteDiscovered records that a discovery of ns/name with these inputs
// found nothing to do and count revisions ("" forgets it).
func (s *repoSet) noteDiscovered(nn types.NamespacedName, inputs string, count int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if k := s.known[nn]; k != nil {
		k.inputs, k.count = inputs, count
	}
}

func newRepoSet(objects, secrets client.Reader, cacheDir string, pipe pipeline.Pipeline, roots *confine.Roots) *repoSet {
	return &repoSet{objects: objects, secrets: secrets, cacheDir: cacheDir, pipe: pipe, roots: roots,
		pool: repopool.New(nil), known: map[types.NamespacedName]*knownRepo{}}
}

// poolKey is the key of the Repository object nn in the pool.
func poolKey(nn types.NamespacedName) string { return nn.String() }

// repoScope is the repositories one reconcile uses: each is acquired from
// the set's pool at its first use and kept open until done. It is safe
// for concurrent use.
type repoScope struct {
	s  *repoSet
	sc *repopool.Scope
}

// scope returns an empty scope; call done when the reconcile ends.
func (s *repoSet) scope() *repoScope { return &repoScope{s: s, sc: s.pool.Scope()} }

// done releases the repositories of the scope.
func (sc *repoScope) done() { sc.sc.Release() }

// get returns the repository of the Repository object ns/name, and the
// object. Errors match repository.ErrNotFound when there is no such
// object, and are those of the backend's Open otherwise.
func (sc *repoScope) get(ctx context.Context, ns, name string) (repository.Repository, *configv1alpha1.Repository, error) {
	var obj configv1alpha1.Repository
	if err := sc.s.objects.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &obj); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, fmt.Errorf("repository %s/%s: %w", ns, name, repository.ErrNotFound)
		}
		return nil, nil, err
	}
	r, err := sc.openObject(ctx, &obj)
	return r, &obj, err
}

// openObject returns the repository of obj, opening it when it is not
// open or its spec or Secret changed since it was opened.
func (sc *repoScope) openObject(ctx context.Context, obj *configv1alpha1.Repository) (repository.Repository, error) {
	nn := types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name}
	if err := sc.s.register(ctx, obj); err != nil {
		return nil, err
	}
	return sc.sc.Acquire(ctx, poolKey(nn))
}

// register registers obj's repository in the pool, as it now is: spec
// and Secret. A change of either closes the open repository (once its
// users are done) and makes the next use open it anew.
func (s *repoSet) register(ctx context.Context, obj *configv1alpha1.Repository) error {
	nn := types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name}
	spec := porchapi.RepositoryToSpec(obj)
	var sec *corev1.Secret
	fp := fmt.Sprint(obj.Generation)
	if ref := secretName(spec); ref != "" {
		sec = &corev1.Secret{}
		if err := s.secrets.Get(ctx, types.NamespacedName{Namespace: obj.Namespace, Name: ref}, sec); err != nil {
			return fmt.Errorf("repository %s: secret %q: %w", nn, ref, err)
		}
		fp += "/" + sec.ResourceVersion
	}
	s.mu.Lock()
	k := s.known[nn]
	if k != nil && k.fingerprint == fp {
		s.mu.Unlock()
		return nil
	}
	s.known[nn] = &knownRepo{spec: spec, fingerprint: fp}
	s.mu.Unlock()
	s.pool.Set(poolKey(nn), fp, func(ctx context.Context) (repository.Repository, error) {
		return s.open(ctx, nn, spec, sec)
	}, s.pinned(spec))
	return nil
}

// pinned reports whether the repository of spec stays open for as long as
// it is registered: one that holds no descriptors and that would be
// fetched anew in full when opened again (a remote cloned in memory, an
// OCI repository, a repository in memory).
func (s *repoSet) pinned(spec repository.Spec) bool {
	if spec.Type != repository.TypeGit || spec.Git == nil {
		return true
	}
	_, local, err := gitrepo.LocalPath(spec.Git.Repo)
	return err == nil && !local && (s.cacheDir == "" || spec.Git.Repo == gitrepo.MemoryURL)
}

// open opens the repository nn of spec, with the credentials in sec (nil:
// none).
func (s *repoSet) open(ctx context.Context, nn types.NamespacedName, spec repository.Spec, sec *corev1.Secret) (repository.Repository, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	switch spec.Type {
	case repository.TypeGit:
		if err := s.roots.CheckGitURL(spec.Git.Repo); err != nil {
			return nil, fmt.Errorf("repository %s: %w", nn, err)
		}
		auth, err := gitAuth(sec)
		if err != nil {
			return nil, err
		}
		o := &gitrepo.Options{Auth: auth, RemoteReadMaxAge: s.readMaxAge}
		if s.cacheDir != "" && strings.Contains(spec.Git.Repo, "://") && !strings.HasPrefix(spec.Git.Repo, "file://") {
			o.CacheDir = filepath.Join(s.cacheDir, nn.Namespace, nn.Name)
		}
		return gitrepo.Open(ctx, spec, o)
	case repository.TypeOCI:
		auth, err := ociAuth(sec)
		if err != nil {
			return nil, err
		}
		return ocirepo.Open(ctx, spec, &ocirepo.Options{Auth: auth})
	default:
		return nil, fmt.Errorf("repository %s: %w: type %q", nn, repository.ErrInvalidInput, spec.Type)
	}
}

// maintainable returns the registered repositories, for a maintenance
// pass, open or not: each is acquired from the pool for its own run
// (opened when it is closed) and released after it, so a fleet larger
// than the pool's bound is maintained one repository at a time.
func (s *repoSet) maintainable() []maintsched.Repo {
	s.mu.Lock()
	out := make([]maintsched.Repo, 0, len(s.known))
	for nn := range s.known {
		out = append(out, maintsched.Repo{Namespace: nn.Namespace, Name: nn.Name,
			Repository: pooledMaintainer{pool: s.pool, key: poolKey(nn), name: nn.Name}})
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b maintsched.Repo) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return out
}

// pooledMaintainer is a registered repository in a maintenance pass: its
// run acquires the repository from the pool (opening it when it is
// closed) and releases it at the end. Only Name and MaintainStorage are
// called on it: the rest of repository.Repository is a nil interface's.
type pooledMaintainer struct {
	repository.Repository
	pool *repopool.Pool
	key  string
	name string
}

func (m pooledMaintainer) Name() string { return m.name }

// MaintainStorage maintains the repository; it does nothing for a
// repository that is not a repository.Maintainer. Errors match
// repository.ErrClosed when the repository was unregistered or cannot be
// opened (its discovery reports why), and are the repository's
// otherwise.
func (m pooledMaintainer) MaintainStorage(ctx context.Context) error {
	repo, release, err := m.pool.Acquire(ctx, m.key)
	if err != nil {
		return fmt.Errorf("maintain %s: %w", m.key, errors.Join(repository.ErrClosed, err))
	}
	defer release()
	if _, ok := repo.(repository.Maintainer); !ok {
		return nil
	}
	return repository.Maintain(ctx, repo)
}

// noteMaintenance records the outcome of a scheduled maintenance run of
// r (err nil: it succeeded) and reports whether that changed what
// maintenanceError returns. A repository whose spec changed meanwhile
// keeps its own outcome.
func (s *repoSet) noteMaintenance(r maintsched.Repo, err error) bool {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := s.known[types.NamespacedName{Namespace: r.Namespace, Name: r.Name}]
	if k == nil || k.maint == msg {
		return false
	}
	if fp, _ := s.pool.Fingerprint(poolKey(types.NamespacedName{Namespace: r.Namespace, Name: r.Name})); fp != k.fingerprint {
		return false
	}
	k.maint = msg
	return true
}

// maintenanceError returns the error of the last scheduled maintenance
// run of the repository ns/name, "" when it succeeded or none ran.
func (s *repoSet) maintenanceError(ns, name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if k := s.known[types.NamespacedName{Namespace: ns, Name: name}]; k != nil {
		return k.maint
	}
	return ""
}

// forget closes and drops the repository of the deleted object ns/name
// (once the reconciles using it are done).
func (s *repoSet) forget(ns, name string) {
	nn := types.NamespacedName{Namespace: ns, Name: name}
	s.mu.Lock()
	delete(s.known, nn)
	delete(s.lastPush, nn)
	s.mu.Unlock()
	s.pool.Remove(poolKey(nn))
}

// spec returns the spec of the registered repository ns/name.
func (s *repoSet) spec(ns, name string) (repository.Spec, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := s.known[types.NamespacedName{Namespace: ns, Name: name}]
	if k == nil {
		return repository.Spec{}, false
	}
	return k.spec, true
}

// engine returns an engine over the repositories of namespace ns, which
// it acquires in sc.
func (sc *repoScope) engine(ns string) (*engine.Engine, error) {
	return engine.New(&engine.Options{Repositories: nsRepos{sc: sc, ns: ns}, Pipeline: sc.s.pipe,
		AuthorName: "cad operator", AuthorEmail: "operator@cad.invalid"})
}

// engineAs returns an engine over the repositories of ns whose commits
// and approvals name user as their author (its email too when user looks
// like one).
func (sc *repoScope) engineAs(ns, user string) (*engine.Engine, error) {
	email := ""
	if strings.Contains(user, "@") {
		email = user
	}
	return engine.New(&engine.Options{Repositories: nsRepos{sc: sc, ns: ns}, Pipeline: sc.s.pipe, AuthorName: user, AuthorEmail: email})
}

// nsRepos is the engine.Repositories of one namespace: the Repository
// objects in it.
type nsRepos struct {
	sc *repoScope
	ns string
}

var (
	_ engine.Repositories = nsRepos{}
	_ engine.URLer        = nsRepos{}
	_ engine.Deployer     = nsRepos{}
)

func (n nsRepos) Repository(ctx context.Context, name string) (repository.Repository, error) {
	r, _, err := n.sc.get(ctx, n.ns, name)
	return r, err
}

func (n nsRepos) Names(ctx context.Context) ([]string, error) {
	var list configv1alpha1.RepositoryList
	if err := n.sc.s.objects.List(ctx, &list, client.InNamespace(n.ns)); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(list.Items))
	for _, r := range list.Items {
		names = append(names, r.Name)
	}
	slices.Sort(names)
	return names, nil
}

func (n nsRepos) URL(name string) string {
	if s, ok := n.sc.s.spec(n.ns, name); ok && s.Git != nil {
		return s.Git.Repo
	}
	return ""
}

func (n nsRepos) Deployment(name string) bool {
	s, ok := n.sc.s.spec(n.ns, name)
	return ok && s.Deployment
}

func secretName(s repository.Spec) string {
	switch {
	case s.Git != nil:
		return s.Git.SecretRef.Name
	case s.OCI != nil:
		return s.OCI.SecretRef.Name
	}
	return ""
}

// errBadSecret is matched by the errors of a Secret that holds no usable
// credentials.
var errBadSecret = secretauth.ErrNoCredentials

// gitAuth returns the go-git credentials of sec (see secretauth.Git). Nil
// for a nil sec.
func gitAuth(sec *corev1.Secret) (transport.AuthMethod, error) {
	if sec == nil {
		return nil, nil
	}
	return secretauth.Git(sec.Name, secretauth.Data(sec), "")
}

// ociAuth returns the registry credentials of sec (see secretauth.OCI).
// Nil for a nil sec.
func ociAuth(sec *corev1.Secret) (authn.Authenticator, error) {
	if sec == nil {
		return nil, nil
	}
	return secretauth.OCI(sec.Name, secretauth.Data(sec))
}

// secret reads the Secret ns/name from the API server.
func (s *repoSet) secret(ctx context.Context, ns, name string) (*corev1.Secret, error) {
	var sec corev1.Secret
	if err := s.secrets.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &sec); err != nil {
		return nil, fmt.Errorf("secret %s/%s: %w", ns, name, err)
	}
	return &sec, nil
}

// changed tells the repository ns/name, when it is open, that it may
// have changed (a remote is asked again at its next read, even within its
// read window). A closed one reads afresh when it opens.
func (s *repoSet) changed(ns, name string) {
	repo, release, ok := s.pool.Peek(poolKey(types.NamespacedName{Namespace: ns, Name: name}))
	if !ok {
		return
	}
	defer release()
	if n, ok := repo.(repository.Notifiable); ok {
		n.Changed()
	}
}
