package main

import (
	"context"
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
	"github.com/configasdata/cad/examples/internal/secretauth"
	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/repository/ocirepo"
)

// repoSet opens the repositories that Repository objects describe and keeps
// them open, one per object, reopening one when its spec (generation) or
// its credentials Secret (resourceVersion) changes. It hands out one
// engine per namespace, whose repository names are the Repository objects
// of that namespace. It is safe for concurrent use.
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

	mu   sync.Mutex
	open map[types.NamespacedName]*openRepo
	// lastPush is each Repository's PushedAnnotation when last
	// reconciled (webhook.go).
	lastPush map[types.NamespacedName]string
	engines  map[string]*engine.Engine
}

type openRepo struct {
	repo        repository.Repository
	spec        repository.Spec
	fingerprint string
	// maint is the error of the last scheduled maintenance run of repo,
	// "" when it succeeded or none ran.
	maint string
}

func newRepoSet(objects, secrets client.Reader, cacheDir string, pipe pipeline.Pipeline, roots *confine.Roots) *repoSet {
	return &repoSet{objects: objects, secrets: secrets, cacheDir: cacheDir, pipe: pipe, roots: roots,
		open: map[types.NamespacedName]*openRepo{}, engines: map[string]*engine.Engine{}}
}

// get returns the open repository of the Repository object ns/name, and
// the object. Errors match repository.ErrNotFound when there is no such
// object, and are those of the backend's Open otherwise.
func (s *repoSet) get(ctx context.Context, ns, name string) (repository.Repository, *configv1alpha1.Repository, error) {
	var obj configv1alpha1.Repository
	if err := s.objects.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &obj); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, fmt.Errorf("repository %s/%s: %w", ns, name, repository.ErrNotFound)
		}
		return nil, nil, err
	}
	r, err := s.openObject(ctx, &obj)
	return r, &obj, err
}

// openObject returns the open repository of obj, opening it when it is not
// open or its spec or Secret changed.
func (s *repoSet) openObject(ctx context.Context, obj *configv1alpha1.Repository) (repository.Repository, error) {
	nn := types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name}
	spec := porchapi.RepositoryToSpec(obj)
	var sec *corev1.Secret
	fp := fmt.Sprint(obj.Generation)
	if ref := secretName(spec); ref != "" {
		sec = &corev1.Secret{}
		if err := s.secrets.Get(ctx, types.NamespacedName{Namespace: obj.Namespace, Name: ref}, sec); err != nil {
			return nil, fmt.Errorf("repository %s: secret %q: %w", nn, ref, err)
		}
		fp += "/" + sec.ResourceVersion
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if o, ok := s.open[nn]; ok && o.fingerprint == fp {
		return o.repo, nil
	}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	var r repository.Repository
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
			o.CacheDir = filepath.Join(s.cacheDir, obj.Namespace, obj.Name)
		}
		g, err := gitrepo.Open(ctx, spec, o)
		if err != nil {
			return nil, err
		}
		r = g
	case repository.TypeOCI:
		auth, err := ociAuth(sec)
		if err != nil {
			return nil, err
		}
		o, err := ocirepo.Open(ctx, spec, &ocirepo.Options{Auth: auth})
		if err != nil {
			return nil, err
		}
		r = o
	default:
		return nil, fmt.Errorf("repository %s: %w: type %q", nn, repository.ErrInvalidInput, spec.Type)
	}
	// The replaced repository is not closed: a reconcile may still be
	// using it. Repositories hold no goroutines; the garbage collector
	// reclaims it.
	s.open[nn] = &openRepo{repo: r, spec: spec, fingerprint: fp}
	return r, nil
}

// maintainable returns the open repositories, for a maintenance pass.
func (s *repoSet) maintainable() []maintsched.Repo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]maintsched.Repo, 0, len(s.open))
	for nn, o := range s.open {
		out = append(out, maintsched.Repo{Namespace: nn.Namespace, Name: nn.Name, Repository: o.repo})
	}
	slices.SortFunc(out, func(a, b maintsched.Repo) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return out
}

// noteMaintenance records the outcome of a scheduled maintenance run of
// r (err nil: it succeeded) and reports whether that changed what
// maintenanceError returns. A repository reopened meanwhile keeps its
// own outcome.
func (s *repoSet) noteMaintenance(r maintsched.Repo, err error) bool {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.open[types.NamespacedName{Namespace: r.Namespace, Name: r.Name}]
	if !ok || o.repo != r.Repository || o.maint == msg {
		return false
	}
	o.maint = msg
	return true
}

// maintenanceError returns the error of the last scheduled maintenance
// run of the open repository ns/name, "" when it succeeded or none ran.
func (s *repoSet) maintenanceError(ns, name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o, ok := s.open[types.NamespacedName{Namespace: ns, Name: name}]; ok {
		return o.maint
	}
	return ""
}

// forget closes and drops the repository of the deleted object ns/name.
func (s *repoSet) forget(ns, name string) {
	nn := types.NamespacedName{Namespace: ns, Name: name}
	s.mu.Lock()
	o, ok := s.open[nn]
	delete(s.open, nn)
	delete(s.lastPush, nn)
	s.mu.Unlock()
	if ok {
		_ = o.repo.Close()
	}
}

// spec returns the spec of the open repository ns/name.
func (s *repoSet) spec(ns, name string) (repository.Spec, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.open[types.NamespacedName{Namespace: ns, Name: name}]
	if !ok {
		return repository.Spec{}, false
	}
	return o.spec, true
}

// engine returns the engine of namespace ns.
func (s *repoSet) engine(ns string) (*engine.Engine, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.engines[ns]; ok {
		return e, nil
	}
	e, err := engine.New(&engine.Options{Repositories: nsRepos{s: s, ns: ns}, Pipeline: s.pipe,
		AuthorName: "cad operator", AuthorEmail: "operator@cad.invalid"})
	if err != nil {
		return nil, err
	}
	s.engines[ns] = e
	return e, nil
}

// engineAs returns an engine over the repositories of ns whose commits
// and approvals name user as their author (its email too when user looks
// like one).
func (s *repoSet) engineAs(ns, user string) (*engine.Engine, error) {
	email := ""
	if strings.Contains(user, "@") {
		email = user
	}
	return engine.New(&engine.Options{Repositories: nsRepos{s: s, ns: ns}, Pipeline: s.pipe, AuthorName: user, AuthorEmail: email})
}

// nsRepos is the engine.Repositories of one namespace: the Repository
// objects in it.
type nsRepos struct {
	s  *repoSet
	ns string
}

var (
	_ engine.Repositories = nsRepos{}
	_ engine.URLer        = nsRepos{}
	_ engine.Deployer     = nsRepos{}
)

func (n nsRepos) Repository(ctx context.Context, name string) (repository.Repository, error) {
	r, _, err := n.s.get(ctx, n.ns, name)
	return r, err
}

func (n nsRepos) Names(ctx context.Context) ([]string, error) {
	var list configv1alpha1.RepositoryList
	if err := n.s.objects.List(ctx, &list, client.InNamespace(n.ns)); err != nil {
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
	if s, ok := n.s.spec(n.ns, name); ok && s.Git != nil {
		return s.Git.Repo
	}
	return ""
}

func (n nsRepos) Deployment(name string) bool {
	s, ok := n.s.spec(n.ns, name)
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

// changed tells the open repository ns/name, if any, that it may have
// changed (a remote is asked again at its next read, even within its
// read window).
func (s *repoSet) changed(ns, name string) {
	s.mu.Lock()
	var repo repository.Repository
	if o := s.open[types.NamespacedName{Namespace: ns, Name: name}]; o != nil {
		repo = o.repo
	}
	s.mu.Unlock()
	if n, ok := repo.(repository.Notifiable); ok {
		n.Changed()
	}
}
