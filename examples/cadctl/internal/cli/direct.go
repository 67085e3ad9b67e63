package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/examples/internal/porchapi"
	"github.com/configasdata/cad/fnruntime"
	"github.com/configasdata/cad/fnruntime/stdfn"
	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
)

// DirectOptions configure NewDirectClient. The zero value, and nil, mean
// the defaults.
type DirectOptions struct {
	// CacheDir keeps the local clones of remote repositories; default
	// <user cache dir>/cadctl, or memory when there is none.
	CacheDir string
	// Resolver resolves the functions of the packages' pipelines, which
	// run on every save as Porch runs them; default cad's builtin
	// functions.
	Resolver pipeline.Resolver
	// Now is the clock of the repositories' status; default time.Now.
	Now func() time.Time
}

// DirectClient is the Client of direct mode: the repositories registered in
// a configuration file, opened with cad's git backend and driven by an
// embedded engine.Engine. Changes to the registrations are written to the
// file at once.
type DirectClient struct {
	ns   string
	path string
	cfg  configFile
	set  *repoSet
	eng  *engine.Engine
	pipe *capturePipeline
	now  func() time.Time
}

var _ Client = (*DirectClient)(nil)

// NewDirectClient returns the direct-mode client of namespace ns over the
// configuration file at path (which need not exist yet).
func NewDirectClient(path, ns string, opts *DirectOptions) (*DirectClient, error) {
	var o DirectOptions
	if opts != nil {
		o = *opts
	}
	if o.CacheDir == "" {
		if dir, err := os.UserCacheDir(); err == nil {
			o.CacheDir = filepath.Join(dir, "cadctl")
		}
	}
	if o.Resolver == nil {
		o.Resolver = fnruntime.NewRegistry(nil)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	cfg, err := loadConfig(path)
	if err != nil {
		return nil, err
	}
	d := &DirectClient{ns: ns, path: path, cfg: cfg, now: o.Now}
	d.set = &repoSet{cacheDir: o.CacheDir, open: map[string]repository.Repository{}}
	d.set.reset(cfg.inNamespace(ns))
	d.pipe = &capturePipeline{inner: stdfn.Kptfile(o.Resolver, nil)}
	d.eng, err = engine.New(&engine.Options{Repositories: d.set, Pipeline: d.pipe})
	if err != nil {
		return nil, err
	}
	return d, nil
}

// Close closes the repositories that were opened.
func (d *DirectClient) Close() error { return d.set.close() }

// ListRepositories returns the registered repositories with a Ready
// condition saying whether each one opens.
func (d *DirectClient) ListRepositories(ctx context.Context) ([]porchapi.Repository, error) {
	repos := d.cfg.inNamespace(d.ns)
	sort.Slice(repos, func(i, j int) bool { return repos[i].Name < repos[j].Name })
	for i := range repos {
		cond := metav1.Condition{Type: porchapi.RepositoryReady, Status: metav1.ConditionTrue,
			Reason: porchapi.ReasonReady, Message: "Repository Ready", LastTransitionTime: metav1.NewTime(d.now())}
		if _, err := d.set.Repository(ctx, repos[i].Name); err != nil {
			cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, porchapi.ReasonError, err.Error()
		}
		repos[i].Status.Conditions = []metav1.Condition{cond}
	}
	return repos, nil
}

// CreateRepository registers repo after checking that it opens.
func (d *DirectClient) CreateRepository(ctx context.Context, repo *porchapi.Repository) (*porchapi.Repository, error) {
	r := *repo
	r.Namespace = d.ns
	r.TypeMeta = metav1.TypeMeta{APIVersion: porchapi.ConfigGroupVersion.String(), Kind: porchapi.KindRepository}
	if d.cfg.find(d.ns, r.Name) >= 0 {
		return nil, statusErrorf(http.StatusConflict, metav1.StatusReasonAlreadyExists, "%s %q already exists", resRepositories, r.Name)
	}
	spec := porchapi.RepositoryToSpec(&r)
	if err := spec.Validate(); err != nil {
		return nil, statusErrorf(http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, "Repository %q is invalid: %v", r.Name, err)
	}
	if spec.Type != repository.TypeGit {
		return nil, statusErrorf(http.StatusUnprocessableEntity, metav1.StatusReasonInvalid,
			"Repository %q is invalid: direct mode supports git repositories only (use --server for %s)", r.Name, spec.Type)
	}
	if r.Spec.Git != nil && isLocalPath(r.Spec.Git.Repo) {
		abs, err := filepath.Abs(r.Spec.Git.Repo)
		if err != nil {
			return nil, err
		}
		g := *r.Spec.Git
		g.Repo = abs
		r.Spec.Git = &g
	}
	probe := &repoSet{cacheDir: d.set.cacheDir, open: map[string]repository.Repository{}}
	probe.reset([]porchapi.Repository{r})
	_, err := probe.Repository(ctx, r.Name)
	_ = probe.close()
	if err != nil {
		return nil, fmt.Errorf("cannot register repository %q: %w", r.Name, err)
	}
	d.cfg.Repositories = append(d.cfg.Repositories, r)
	if err := d.cfg.save(d.path); err != nil {
		return nil, err
	}
	d.set.reset(d.cfg.inNamespace(d.ns))
	return &r, nil
}

// DeleteRepository unregisters the repository called name.
func (d *DirectClient) DeleteRepository(ctx context.Context, name string) error {
	i := d.cfg.find(d.ns, name)
	if i < 0 {
		return notFound(resRepositories, name)
	}
	d.cfg.Repositories = append(d.cfg.Repositories[:i], d.cfg.Repositories[i+1:]...)
	if err := d.cfg.save(d.path); err != nil {
		return err
	}
	d.set.reset(d.cfg.inNamespace(d.ns))
	return nil
}

// ListPackageRevisions lists the revisions of every registered repository
// of the namespace (all namespaces with opts.AllNamespaces).
func (d *DirectClient) ListPackageRevisions(ctx context.Context, opts ListOptions) ([]porchapi.PackageRevision, error) {
	clients := []*DirectClient{d}
	if opts.AllNamespaces {
		clients = nil
		seen := map[string]bool{}
		for _, r := range d.cfg.Repositories {
			if seen[r.Namespace] {
				continue
			}
			seen[r.Namespace] = true
			if r.Namespace == d.ns {
				clients = append(clients, d)
				continue
			}
			o, err := d.inNamespace(r.Namespace)
			if err != nil {
				return nil, err
			}
			defer o.Close()
			clients = append(clients, o)
		}
	}
	var out []porchapi.PackageRevision
	for _, c := range clients {
		prs, err := c.listNamespace(ctx, opts.Status)
		if err != nil {
			return nil, err
		}
		out = append(out, prs...)
	}
	sortPackageRevisions(out)
	return out, nil
}

func (d *DirectClient) inNamespace(ns string) (*DirectClient, error) {
	o := &DirectClient{ns: ns, path: d.path, cfg: d.cfg, now: d.now, pipe: d.pipe}
	o.set = &repoSet{cacheDir: d.set.cacheDir, open: map[string]repository.Repository{}}
	o.set.reset(d.cfg.inNamespace(ns))
	var err error
	o.eng, err = engine.New(&engine.Options{Repositories: o.set, Pipeline: d.pipe})
	return o, err
}

func (d *DirectClient) listNamespace(ctx context.Context, status bool) ([]porchapi.PackageRevision, error) {
	names, _ := d.set.Names(ctx)
	var out []porchapi.PackageRevision
	for _, name := range names {
		r, err := d.set.Repository(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("repository %q: %w", name, err)
		}
		revs, err := r.List(ctx, repository.ListOptions{})
		if err != nil {
			return nil, apiError(err)
		}
		latest := latestRevisions(revs)
		for _, rev := range revs {
			m := rev.Meta()
			pr, err := d.toPackageRevision(ctx, rev, isLatest(m, latest), status)
			if err != nil {
				return nil, err
			}
			out = append(out, pr)
		}
	}
	return out, nil
}

// latestRevisions returns the highest published revision number of each
// package.
func latestRevisions(revs []revision.PackageRevision) map[string]int {
	latest := map[string]int{}
	for _, rev := range revs {
		m := rev.Meta()
		if m.Lifecycle.IsPublished() && m.Key.Revision > latest[m.Key.Package] {
			latest[m.Key.Package] = m.Key.Revision
		}
	}
	return latest
}

func isLatest(m revision.Meta, latest map[string]int) bool {
	return m.Lifecycle.IsPublished() && m.Key.Revision > 0 && latest[m.Key.Package] == m.Key.Revision
}

func (d *DirectClient) toPackageRevision(ctx context.Context, rev revision.PackageRevision, latest, status bool) (porchapi.PackageRevision, error) {
	m := rev.Meta()
	ro := porchapi.RevisionOptions{Namespace: d.ns, Deployment: d.set.Deployment(m.Key.Repository), Latest: latest}
	if status {
		files, err := rev.Files(ctx)
		if err != nil {
			return porchapi.PackageRevision{}, apiError(err)
		}
		if data, ok := files.Get(revision.KptfileName); ok {
			if kf, err := revision.ParseKptfile(data); err == nil {
				ro.Kptfile = kf
			}
		}
	}
	return porchapi.FromRevision(m, ro), nil
}

// lookup resolves a package revision name to the revision.
func (d *DirectClient) lookup(ctx context.Context, resource, name string) (revision.PackageRevision, error) {
	key, err := porchapi.ParseName(name)
	if err != nil {
		return nil, notFound(resource, name)
	}
	if _, ok := d.set.spec(key.Repository); !ok {
		return nil, notFound(resource, name)
	}
	rev, err := d.eng.Get(ctx, key.Repository, revision.Key{Package: key.Package, Workspace: key.Workspace})
	if err != nil {
		if errors.Is(err, repository.ErrNotFound) || errors.Is(err, repository.ErrInvalidInput) {
			return nil, notFound(resource, name)
		}
		return nil, apiError(err)
	}
	return rev, nil
}

func (d *DirectClient) latestOf(ctx context.Context, m revision.Meta) bool {
	if !m.Lifecycle.IsPublished() || m.Key.Revision <= 0 {
		return false
	}
	r, err := d.set.Repository(ctx, m.Key.Repository)
	if err != nil {
		return false
	}
	revs, err := r.List(ctx, repository.ListOptions{Package: m.Key.Package})
	if err != nil {
		return false
	}
	return isLatest(m, latestRevisions(revs))
}

func (d *DirectClient) object(ctx context.Context, rev revision.PackageRevision) (*porchapi.PackageRevision, error) {
	pr, err := d.toPackageRevision(ctx, rev, d.latestOf(ctx, rev.Meta()), true)
	if err != nil {
		return nil, err
	}
	return &pr, nil
}

// GetPackageRevision returns the package revision called name.
func (d *DirectClient) GetPackageRevision(ctx context.Context, name string) (*porchapi.PackageRevision, error) {
	rev, err := d.lookup(ctx, resPackageRevisions, name)
	if err != nil {
		return nil, err
	}
	return d.object(ctx, rev)
}

// CreatePackageRevision creates a package revision with the engine
// operation its creation task names.
func (d *DirectClient) CreatePackageRevision(ctx context.Context, pr *porchapi.PackageRevision) (*porchapi.PackageRevision, error) {
	task, err := porchapi.CreationTask(pr)
	if err != nil {
		return nil, statusErrorf(http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, "%v", err)
	}
	repo := pr.Spec.RepositoryName
	if _, ok := d.set.spec(repo); !ok {
		return nil, statusErrorf(http.StatusNotFound, metav1.StatusReasonNotFound, "%s %q not found", resRepositories, repo)
	}
	key := revision.Key{Package: pr.Spec.PackageName, Workspace: pr.Spec.WorkspaceName}
	md := porchapi.MetadataOf(pr)
	var rev revision.PackageRevision
	switch task.Type {
	case porchapi.TaskTypeInit:
		rev, err = d.eng.Init(ctx, repo, key, porchapi.InitOptions(task.Init, md))
	case porchapi.TaskTypeClone:
		src, serr := d.cloneSource(ctx, task.Clone.Upstream)
		if serr != nil {
			return nil, serr
		}
		rev, err = d.eng.Clone(ctx, repo, key, src, engine.CloneOptions{
			Fetcher: &gitrepo.Fetcher{}, Strategy: revision.UpdateStrategy(task.Clone.Strategy), Metadata: md,
		})
	case porchapi.TaskTypeEdit:
		var src revision.PackageRevision
		src, err = d.lookup(ctx, resPackageRevisions, task.Edit.Source.Name)
		if err != nil {
			return nil, err
		}
		sk := src.Meta().Key
		if sk.Repository != repo || sk.Package != key.Package {
			return nil, statusErrorf(http.StatusUnprocessableEntity, metav1.StatusReasonInvalid,
				"source package revision %s is not a revision of package %q in repository %q", task.Edit.Source.Name, key.Package, repo)
		}
		rev, err = d.eng.Copy(ctx, repo, sk, key.Workspace, engine.CopyOptions{Metadata: md})
	case porchapi.TaskTypeUpgrade:
		rev, err = d.upgrade(ctx, repo, key, task.Upgrade, md)
	}
	if err != nil {
		return nil, apiError(err)
	}
	return d.object(ctx, rev)
}

func (d *DirectClient) cloneSource(ctx context.Context, up porchapi.UpstreamPackage) (engine.CloneSource, error) {
	switch {
	case up.UpstreamRef != nil:
		src, err := d.lookup(ctx, resPackageRevisions, up.UpstreamRef.Name)
		if err != nil {
			return engine.CloneSource{}, err
		}
		k := src.Meta().Key
		return engine.CloneSource{Revision: &k}, nil
	case up.Git != nil:
		g := porchapi.GitUpstream(up.Git)
		return engine.CloneSource{Git: &g}, nil
	}
	return engine.CloneSource{}, statusErrorf(http.StatusUnprocessableEntity, metav1.StatusReasonInvalid,
		"clone from an OCI upstream is not supported in direct mode")
}

func (d *DirectClient) upgrade(ctx context.Context, repo string, key revision.Key, u *porchapi.PackageUpgradeTaskSpec, md revision.Metadata) (revision.PackageRevision, error) {
	var revs [3]revision.PackageRevision
	for i, name := range []string{u.LocalPackageRevisionRef.Name, u.OldUpstream.Name, u.NewUpstream.Name} {
		rev, err := d.lookup(ctx, resPackageRevisions, name)
		if err != nil {
			return nil, err
		}
		revs[i] = rev
	}
	local := revs[0].Meta().Key
	if local.Repository != repo || local.Package != key.Package {
		return nil, statusErrorf(http.StatusUnprocessableEntity, metav1.StatusReasonInvalid,
			"local package revision %s is not a revision of package %q in repository %q", u.LocalPackageRevisionRef.Name, key.Package, repo)
	}
	oldK, newK := revs[1].Meta().Key, revs[2].Meta().Key
	return d.eng.Upgrade(ctx, repo, local,
		engine.Ref{Repository: oldK.Repository, Key: oldK}, engine.Ref{Repository: newK.Repository, Key: newK},
		key.Workspace, engine.UpgradeOptions{Strategy: revision.UpdateStrategy(u.Strategy), Metadata: md})
}

// UpdatePackageRevision changes the lifecycle (Draft to Proposed,
// Published to DeletionProposed and back) or the metadata of a revision.
func (d *DirectClient) UpdatePackageRevision(ctx context.Context, pr *porchapi.PackageRevision) (*porchapi.PackageRevision, error) {
	rev, err := d.lookup(ctx, resPackageRevisions, pr.Name)
	if err != nil {
		return nil, err
	}
	m := rev.Meta()
	if pr.ResourceVersion != "" && pr.ResourceVersion != m.Version {
		return nil, conflictOn(resPackageRevisions, pr.Name)
	}
	from, to := m.Lifecycle, revision.Lifecycle(pr.Spec.Lifecycle)
	repo, key := m.Key.Repository, m.Key
	switch {
	case to == "" || to == from:
		if md := porchapi.MetadataOf(pr); !md.Equal(m.Metadata) {
			rev, err = d.eng.SetMetadata(ctx, repo, key, md, m.Version)
		}
	case from == revision.LifecycleDraft && to == revision.LifecycleProposed:
		rev, err = d.eng.Propose(ctx, repo, key, engine.IfVersion(m.Version))
	case from == revision.LifecyclePublished && to == revision.LifecycleDeletionProposed:
		rev, err = d.eng.ProposeDelete(ctx, repo, key, engine.IfVersion(m.Version))
	case from == revision.LifecycleDeletionProposed && to == revision.LifecyclePublished:
		rev, err = d.eng.Reject(ctx, repo, key, engine.IfVersion(m.Version))
	default:
		return nil, statusErrorf(http.StatusUnprocessableEntity, metav1.StatusReasonInvalid,
			"cannot change the lifecycle of %s from %s to %s with an update", pr.Name, from, to)
	}
	if err != nil {
		return nil, apiError(err)
	}
	return d.object(ctx, rev)
}

// UpdateApproval approves (Published) or rejects (Draft) a proposal.
func (d *DirectClient) UpdateApproval(ctx context.Context, pr *porchapi.PackageRevision) (*porchapi.PackageRevision, error) {
	rev, err := d.lookup(ctx, resPackageRevisions, pr.Name)
	if err != nil {
		return nil, err
	}
	m := rev.Meta()
	if pr.ResourceVersion != "" && pr.ResourceVersion != m.Version {
		return nil, conflictOn(resPackageRevisions, pr.Name)
	}
	from, to := m.Lifecycle, revision.Lifecycle(pr.Spec.Lifecycle)
	switch {
	case from == revision.LifecycleProposed && to == revision.LifecyclePublished:
		rev, err = d.eng.Approve(ctx, m.Key.Repository, m.Key, engine.IfVersion(m.Version))
	case from == revision.LifecycleProposed && to == revision.LifecycleDraft,
		from == revision.LifecycleDeletionProposed && to == revision.LifecyclePublished:
		rev, err = d.eng.Reject(ctx, m.Key.Repository, m.Key, engine.IfVersion(m.Version))
	default:
		return nil, statusErrorf(http.StatusUnprocessableEntity, metav1.StatusReasonInvalid,
			"cannot change approval from %s to %s", from, to)
	}
	if err != nil {
		return nil, apiError(err)
	}
	return d.object(ctx, rev)
}

// DeletePackageRevision deletes a revision; a published one must be
// proposed for deletion first.
func (d *DirectClient) DeletePackageRevision(ctx context.Context, name string) error {
	rev, err := d.lookup(ctx, resPackageRevisions, name)
	if err != nil {
		return err
	}
	m := rev.Meta()
	if m.Lifecycle == revision.LifecyclePublished {
		return statusErrorf(http.StatusForbidden, metav1.StatusReasonForbidden,
			"failed to delete package revision %q: published PackageRevisions must be proposed for deletion by setting spec.lifecycle to 'DeletionProposed' prior to deletion", name)
	}
	return apiError(d.eng.Delete(ctx, m.Key.Repository, m.Key, engine.IfVersion(m.Version)))
}

// GetResources returns the files of the revision called name.
func (d *DirectClient) GetResources(ctx context.Context, name string) (*porchapi.PackageRevisionResources, error) {
	rev, err := d.lookup(ctx, resResources, name)
	if err != nil {
		return nil, err
	}
	files, err := rev.Files(ctx)
	if err != nil {
		return nil, apiError(err)
	}
	prr := porchapi.FromFiles(d.ns, rev.Meta(), files)
	return &prr, nil
}

// UpdateResources replaces the files of a draft and renders it, as a
// Porch PackageRevisionResources update does.
func (d *DirectClient) UpdateResources(ctx context.Context, prr *porchapi.PackageRevisionResources) (*porchapi.PackageRevisionResources, error) {
	rev, err := d.lookup(ctx, resResources, prr.Name)
	if err != nil {
		return nil, err
	}
	m := rev.Meta()
	if prr.ResourceVersion == "" {
		return nil, statusErrorf(http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, "%s", porchapi.ResourceVersionRequiredMessage)
	}
	if m.Lifecycle != revision.LifecycleDraft {
		return nil, statusErrorf(http.StatusForbidden, metav1.StatusReasonForbidden,
			"%s %q is forbidden: cannot change the resources of a package revision in lifecycle %s; only drafts can be changed", resResources, prr.Name, m.Lifecycle)
	}
	if prr.ResourceVersion != m.Version {
		return nil, conflictOn(resResources, prr.Name)
	}
	files, err := porchapi.FilesOf(prr)
	if err != nil {
		return nil, statusErrorf(http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, "%v", err)
	}
	save := m.Annotations[porchapi.PushOnRenderFailureAnnotation] == "true"
	d.pipe.reset()
	saved, err := d.eng.Update(ctx, m.Key.Repository, m.Key, files, engine.UpdateOptions{SaveOnRenderFailure: save, Version: m.Version})
	var re *pipeline.RenderError
	if errors.As(err, &re) {
		if saved == nil {
			return nil, statusErrorf(http.StatusInternalServerError, metav1.StatusReasonInternalError, "%s", porchapi.RenderFailureMessage(re, false))
		}
		out, oerr := d.resourcesOf(ctx, saved, re)
		if oerr != nil {
			return nil, oerr
		}
		return out, statusErrorf(http.StatusInternalServerError, metav1.StatusReasonInternalError, "%s", porchapi.RenderFailureMessage(re, true))
	}
	if err != nil {
		if errors.Is(err, repository.ErrConflict) {
			return nil, conflictOn(resResources, prr.Name)
		}
		return nil, apiError(err)
	}
	return d.resourcesOf(ctx, saved, nil)
}

func (d *DirectClient) resourcesOf(ctx context.Context, rev revision.PackageRevision, renderErr error) (*porchapi.PackageRevisionResources, error) {
	files, err := rev.Files(ctx)
	if err != nil {
		return nil, apiError(err)
	}
	out := porchapi.FromFiles(d.ns, rev.Meta(), files)
	out.Status.RenderStatus = porchapi.RenderStatusFrom(d.pipe.lastSteps(), renderErr)
	return &out, nil
}

// apiError gives an engine or repository error the Status of the outcome
// it means.
func apiError(err error) error {
	if err == nil {
		return nil
	}
	var se *StatusError
	if errors.As(err, &se) {
		return err
	}
	code, reason := http.StatusInternalServerError, metav1.StatusReasonInternalError
	switch {
	case errors.Is(err, repository.ErrNotFound):
		code, reason = http.StatusNotFound, metav1.StatusReasonNotFound
	case errors.Is(err, repository.ErrAlreadyExists):
		code, reason = http.StatusConflict, metav1.StatusReasonAlreadyExists
	case errors.Is(err, repository.ErrConflict):
		code, reason = http.StatusConflict, metav1.StatusReasonConflict
	case errors.Is(err, repository.ErrImmutable):
		code, reason = http.StatusForbidden, metav1.StatusReasonForbidden
	case errors.Is(err, repository.ErrInvalidTransition), errors.Is(err, repository.ErrInvalidInput), errors.Is(err, engine.ErrNotReady):
		code, reason = http.StatusUnprocessableEntity, metav1.StatusReasonInvalid
	case errors.Is(err, repository.ErrUnavailable):
		code, reason = http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable
	}
	msg := err.Error()
	if m, ok := porchapi.Message(err); ok {
		msg = m // Porch's words
	}
	return &StatusError{Code: code, Reason: reason, Message: msg}
}

// repoSet is the engine's view of the registered repositories of one
// namespace: it opens each on first use and keeps it open.
type repoSet struct {
	cacheDir string

	mu    sync.Mutex
	specs map[string]porchapi.Repository
	open  map[string]repository.Repository
}

var (
	_ engine.Repositories = (*repoSet)(nil)
	_ engine.URLer        = (*repoSet)(nil)
	_ engine.Deployer     = (*repoSet)(nil)
)

func (s *repoSet) reset(repos []porchapi.Repository) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.specs = map[string]porchapi.Repository{}
	for _, r := range repos {
		s.specs[r.Name] = r
	}
	for name, r := range s.open {
		if _, ok := s.specs[name]; !ok {
			_ = r.Close()
			delete(s.open, name)
		}
	}
}

func (s *repoSet) spec(name string) (porchapi.Repository, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.specs[name]
	return r, ok
}

// Repository opens the repository called name.
func (s *repoSet) Repository(ctx context.Context, name string) (repository.Repository, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.open[name]; ok {
		return r, nil
	}
	obj, ok := s.specs[name]
	if !ok {
		return nil, repository.Errorf("open", name, revision.Key{}, repository.ErrNotFound, "repository %q is not registered", name)
	}
	spec := porchapi.RepositoryToSpec(&obj)
	if spec.Type != repository.TypeGit || spec.Git == nil {
		return nil, repository.Errorf("open", name, revision.Key{}, repository.ErrNotSupported, "direct mode opens git repositories only")
	}
	opts := &gitrepo.Options{}
	if !isLocalPath(spec.Git.Repo) && !strings.HasPrefix(spec.Git.Repo, "file://") && s.cacheDir != "" {
		sum := sha256.Sum256([]byte(spec.Git.Repo + "\x00" + spec.Git.Branch))
		opts.CacheDir = filepath.Join(s.cacheDir, "git", name+"-"+hex.EncodeToString(sum[:6]))
	}
	r, err := gitrepo.Open(ctx, spec, opts)
	if err != nil {
		return nil, err
	}
	s.open[name] = r
	return r, nil
}

// Names returns the names of the registered repositories, sorted.
func (s *repoSet) Names(context.Context) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return sortedKeys(s.specs), nil
}

// URL returns the git URL of the repository called name.
func (s *repoSet) URL(name string) string {
	r, ok := s.spec(name)
	if !ok || r.Spec.Git == nil {
		return ""
	}
	return r.Spec.Git.Repo
}

// Deployment reports whether name is a deployment repository.
func (s *repoSet) Deployment(name string) bool {
	r, ok := s.spec(name)
	return ok && r.Spec.Deployment
}

func (s *repoSet) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for name, r := range s.open {
		errs = append(errs, r.Close())
		delete(s.open, name)
	}
	return errors.Join(errs...)
}

var scpLike = regexp.MustCompile(`^[\w.-]+@[\w.-]+:`)

// isLocalPath reports whether a repository address is a path on this
// machine rather than a URL.
func isLocalPath(addr string) bool {
	return !strings.Contains(addr, "://") && !scpLike.MatchString(addr)
}

// capturePipeline renders with inner and keeps the steps of the last
// render, so that a push can report the function results as Porch's
// PackageRevisionResources status does.
type capturePipeline struct {
	inner pipeline.Pipeline

	mu    sync.Mutex
	steps []pipeline.StepResult
}

func (p *capturePipeline) Render(ctx context.Context, files revision.Files) (*pipeline.Output, error) {
	out, err := p.inner.Render(ctx, files)
	p.mu.Lock()
	defer p.mu.Unlock()
	var re *pipeline.RenderError
	switch {
	case out != nil:
		p.steps = out.Steps
	case errors.As(err, &re):
		p.steps = re.Steps()
	}
	return out, err
}

func (p *capturePipeline) reset() {
	p.mu.Lock()
	p.steps = nil
	p.mu.Unlock()
}

func (p *capturePipeline) lastSteps() []pipeline.StepResult {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.steps
}

func sortPackageRevisions(prs []porchapi.PackageRevision) {
	sort.SliceStable(prs, func(i, j int) bool {
		if prs[i].Namespace != prs[j].Namespace {
			return prs[i].Namespace < prs[j].Namespace
		}
		return prs[i].Name < prs[j].Name
	})
}

// discoverUpgrades asks the engine which packages' latest revisions have
// newer upstream revisions (engine.Engine.DiscoverUpgrades).
func (d *DirectClient) discoverUpgrades(ctx context.Context) ([]upgradeCandidate, error) {
	cands, err := d.eng.DiscoverUpgrades(ctx, nil)
	if err != nil {
		return nil, apiError(err)
	}
	out := make([]upgradeCandidate, 0, len(cands))
	for _, cd := range cands {
		c := upgradeCandidate{downstream: porchapi.NameOf(cd.Downstream), upstreamRepo: cd.Upstream.Repository, upstreamRev: cd.Upstream.Revision}
		for _, k := range cd.Newer {
			if k.Workspace == "" {
				if rev, err := d.eng.Get(ctx, k.Repository, k); err == nil {
					k = rev.Meta().Key
				}
			}
			c.newer = append(c.newer, namedRevision{name: porchapi.NameOf(k), rev: k.Revision})
		}
		out = append(out, c)
	}
	return out, nil
}
