package apiserver

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/examples/internal/porchapi"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
)

var grPackageRevisions = schema.GroupResource{Group: porchapi.Group, Resource: porchapi.ResourcePackageRevisions}

// prFieldSet returns the selectable fields of a PackageRevision (see
// porchapi.PackageRevisionFieldSet). Lists of PackageRevisionResources
// select through the revisions they list, and on their Kptfile's labels
// once read (see prrImpl.list).
func prFieldSet(o metav1.Object) fields.Set {
	if pr, ok := o.(*porchapi.PackageRevision); ok {
		return porchapi.PackageRevisionFieldSet(pr)
	}
	return nil
}

// prImpl serves packagerevisions and their approval subresource.
type prImpl struct{ s *Server }

// branchOf returns the branch of a git repository, whose name is the
// placeholder revisions' workspace; "" for other repositories.
func branchOf(e *repoEntry) string {
	if e.spec.Type != repository.TypeGit || e.spec.Git == nil {
		return ""
	}
	if e.spec.Git.Branch == "" {
		return repository.DefaultBranch
	}
	return e.spec.Git.Branch
}

// lookupPR resolves a PackageRevision name in ns to its repository and key.
func (s *Server) lookupPR(ns, name string) (*repoEntry, revision.Key, error) {
	k, err := porchapi.ParseName(name)
	if err != nil {
		return nil, revision.Key{}, errNotFound(grPackageRevisions, name)
	}
	e, ok := s.entry(ns, k.Repository)
	if !ok {
		return nil, revision.Key{}, errNotFound(grPackageRevisions, name)
	}
	if err := e.openErr(); err != nil {
		return nil, revision.Key{}, newStatus(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable,
			fmt.Sprintf("repository %q is not open: %v", e.name, err))
	}
	if b := branchOf(e); b != "" && k.Workspace == b {
		k.Revision = revision.Placeholder
	}
	return e, k, nil
}

// getRevision returns the revision a PackageRevision name in ns names, as
// eng reads it.
func (s *Server) getRevision(ctx context.Context, eng *engine.Engine, ns, name string) (*repoEntry, revision.PackageRevision, error) {
	e, k, err := s.lookupPR(ns, name)
	if err != nil {
		return nil, nil, err
	}
	rev, err := eng.Get(ctx, e.name, k)
	if err != nil {
		if errors.Is(err, repository.ErrNotFound) {
			return nil, nil, errNotFound(grPackageRevisions, name)
		}
		return nil, nil, err
	}
	if porchapi.NameOf(rev.Meta().Key) != name {
		return nil, nil, errNotFound(grPackageRevisions, name)
	}
	return e, rev, nil
}

// isLatest reports whether rev is the latest published revision of its
// package, as eng reads the package.
func (s *Server) isLatest(ctx context.Context, eng *engine.Engine, rev revision.PackageRevision) bool {
	m := rev.Meta()
	if !m.Lifecycle.IsPublished() || m.Key.Revision <= 0 {
		return false
	}
	l, err := eng.Latest(ctx, m.Key.Repository, m.Key.Package)
	return err == nil && l.Meta().Key.Revision == m.Key.Revision
}

// prObject builds the served object of rev; it reads the revision's
// Kptfile.
func (s *Server) prObject(ctx context.Context, ns string, e *repoEntry, rev revision.PackageRevision, latest bool) (*porchapi.PackageRevision, error) {
	m := rev.Meta()
	ck := prCacheKey{ns: ns, repo: e.name, key: m.Key.String(), version: m.Version, latest: latest, deployment: e.spec.Deployment,
		published: m.PublishedBy + "@" + m.PublishedAt.String()}
	if m.Version != "" {
		if o, ok := s.prs.get(ck); ok {
			return o, nil
		}
	}
	files, err := rev.Files(ctx)
	switch {
	case errors.Is(err, revision.ErrLimit):
		// A file over a read bound (pushed to the repository by someone
		// else) costs this revision its Kptfile's fields, not its place
		// in lists: the other revisions of the repository stay listed,
		// and reading its resources reports the bound.
		s.log.Warn("package revision listed without its Kptfile: its files are over a read bound", "revision", m.Key.String(), "err", err)
		files = revision.Files{}
	case err != nil:
		return nil, err
	}
	var kf *revision.Kptfile
	if data, ok := files.Get(revision.KptfileName); ok {
		kf, err = revision.ParseKptfile(data)
		if err != nil {
			s.log.Warn("package revision has a Kptfile that does not parse", "revision", rev.Meta().Key.String(), "err", err)
			kf = nil
		}
	}
	o := porchapi.FromRevision(m, porchapi.RevisionOptions{
		Namespace: ns, Kptfile: kf, Deployment: e.spec.Deployment, Latest: latest,
	})
	if e.spec.Git != nil {
		repo, err := s.acquire(ctx, e)
		if err != nil {
			return nil, err
		}
		if typ, url := repository.LocationOf(repo); typ == repository.TypeGit {
			o.Status.SelfLock = porchapi.SelfLock(m, url, e.spec.Git)
		}
	}
	if m.Version != "" {
		s.prs.put(ck, &o)
	}
	return &o, nil
}

// getPR returns the served PackageRevision called name in ns, as eng
// reads it.
func (s *Server) getPR(ctx context.Context, eng *engine.Engine, ns, name string) (*porchapi.PackageRevision, revision.PackageRevision, *repoEntry, error) {
	e, rev, err := s.getRevision(ctx, eng, ns, name)
	if err != nil {
		return nil, nil, nil, err
	}
	obj, err := s.prObject(ctx, ns, e, rev, s.isLatest(ctx, eng, rev))
	if err != nil {
		return nil, nil, nil, err
	}
	return obj, rev, e, nil
}

func (p *prImpl) get(ctx context.Context, rq *request) (metav1.Object, error) {
	obj, _, _, err := p.s.getPR(ctx, p.s.engineFor(ctx, rq), rq.ns, rq.name)
	return obj, err
}

// listedRevision is a revision found by a list, before its files are read.
type listedRevision struct {
	e      *repoEntry
	ns     string
	rev    revision.PackageRevision
	latest bool
	// obj is its served object when it comes from a repository's
	// listing (shared: not to be modified).
	obj *porchapi.PackageRevision
}

// listRevisions lists the revisions in namespace ns ("" for all) that the
// selectors of lo may select, with their latest flags, selected by metadata
// and fields. Repositories that cannot be listed are skipped with a warning.
func (s *Server) listRevisions(ctx context.Context, rq *request, ns string, lo *listOptions) []listedRevision {
	repoSel, _ := lo.field.RequiresExactMatch("spec.repository")
	pkgSel, _ := lo.field.RequiresExactMatch("spec.packageName")
	var entries []*repoEntry
	for _, e := range s.entries(ns) {
		if repoSel != "" && e.name != repoSel {
			continue
		}
		if err := e.openErr(); err != nil {
			rq.warn("repository %s/%s is not open: %v", e.ns, e.name, err)
			continue
		}
		entries = append(entries, e)
	}
	type result struct {
		revs []listedRevision
		err  error
	}
	results := make([]result, len(entries))
	var wg sync.WaitGroup
	sem := make(chan struct{}, defaultListConcurrency)
	for i, e := range entries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if pkgSel == "" {
				// The whole repository: from its listing, built once per
				// state of its refs.
				revs, ok, err := s.listing(ctx, e, rq.def.gr == grPackageRevisions)
				if ok {
					results[i] = result{revs, err}
					return
				}
			}
			revs, err := s.listRepository(ctx, e, pkgSel)
			results[i] = result{revs, err}
		}()
	}
	wg.Wait()
	pre := *lo
	pre.field = porchapi.WithoutPackageMetadataFields(lo.field)
	var out []listedRevision
	for i, r := range results {
		if r.err != nil && repository.Damage(r.err) != nil {
			// The revisions that could be read are served.
			rq.warn("repository %s/%s: %v", entries[i].ns, entries[i].name, r.err)
		} else if r.err != nil {
			rq.warn("repository %s/%s could not be listed: %v", entries[i].ns, entries[i].name, r.err)
			s.log.Warn("list failed", "namespace", entries[i].ns, "repository", entries[i].name, "err", r.err)
			continue
		}
		for _, lr := range r.revs {
			if lr.obj != nil {
				if lo.matches(rq.def, lr.obj) {
					out = append(out, lr)
				}
				continue
			}
			// Select on what is known without files (the Kptfile's labels
			// are selected on once it is read).
			o := porchapi.FromRevision(lr.rev.Meta(), porchapi.RevisionOptions{Namespace: lr.ns, Latest: lr.latest})
			if pre.matches(rq.def, &o) {
				out = append(out, lr)
			}
		}
	}
	return out
}

// listRepository lists the revisions of the repository of e (of package
// pkg only, when set), with their latest flags.
//
// When the list left damaged revisions out, it returns the others with
// the list's error (a *repository.DamageError), and a whole list (pkg
// empty) records the damage in the Repository's status.
func (s *Server) listRepository(ctx context.Context, e *repoEntry, pkg string) ([]listedRevision, error) {
	repo, err := s.acquire(ctx, e)
	if err != nil {
		return nil, err
	}
	revs, err := repo.List(ctx, repository.ListOptions{Package: pkg})
	if pkg == "" && (err == nil || repository.Damage(err) != nil) {
		s.noteDamage(e, err)
	}
	if err != nil && repository.Damage(err) == nil {
		return nil, err
	}
	latest := map[string]int{}
	for _, r := range revs {
		m := r.Meta()
		if m.Lifecycle.IsPublished() && m.Key.Revision > latest[m.Key.Package] {
			latest[m.Key.Package] = m.Key.Revision
		}
	}
	out := make([]listedRevision, 0, len(revs))
	for _, r := range revs {
		m := r.Meta()
		out = append(out, listedRevision{e: e, ns: e.ns, rev: r,
			latest: m.Lifecycle.IsPublished() && m.Key.Revision > 0 && latest[m.Key.Package] == m.Key.Revision})
	}
	return out, err
}

// loadAll calls fn for every listed revision, a few at a time.
func loadAll(ctx context.Context, revs []listedRevision, fn func(ctx context.Context, i int, lr listedRevision) error) error {
	var wg sync.WaitGroup
	sem := make(chan struct{}, defaultListConcurrency)
	errs := make([]error, len(revs))
	for i, lr := range revs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = fn(ctx, i, lr)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// listPRs returns the served PackageRevisions lo selects in ns.
func (s *Server) listPRs(ctx context.Context, rq *request, ns string, lo *listOptions) ([]*porchapi.PackageRevision, error) {
	revs := s.listRevisions(ctx, rq, ns, lo)
	objs := make([]*porchapi.PackageRevision, len(revs))
	var todo []int // the revisions not from a repository's listing
	for i, lr := range revs {
		if objs[i] = lr.obj; lr.obj == nil {
			todo = append(todo, i)
		}
	}
	load := make([]listedRevision, len(todo))
	for j, i := range todo {
		load[j] = revs[i]
	}
	err := loadAll(ctx, load, func(ctx context.Context, j int, lr listedRevision) error {
		o, err := s.prObject(ctx, lr.ns, lr.e, lr.rev, lr.latest)
		objs[todo[j]] = o
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(todo) > 0 && porchapi.SelectsPackageMetadata(lo.field) {
		// Those were selected without their Kptfile's labels.
		objs = slices.DeleteFunc(objs, func(o *porchapi.PackageRevision) bool { return !lo.matches(rq.def, o) })
	}
	return objs, nil
}

func (p *prImpl) list(ctx context.Context, rq *request, lo *listOptions) ([]metav1.Object, string, error) {
	// A later page of a list the server still holds comes from that list:
	// consistent with the first page, and nothing is listed again.
	if tok, ok, err := parseContinue(lo); err != nil {
		return nil, "", err
	} else if ok && tok.RV != "" {
		if m, ok := p.s.snaps.get(tok.RV); ok {
			out := make([]metav1.Object, 0, len(m))
			for _, o := range m {
				if rq.ns == "" || o.Namespace == rq.ns {
					out = append(out, o)
				}
			}
			return out, tok.RV, nil
		}
	}
	objs, err := p.s.listPRs(ctx, rq, rq.ns, lo)
	if err != nil {
		return nil, "", err
	}
	out := make([]metav1.Object, len(objs))
	for i, o := range objs {
		out[i] = o
	}
	return out, p.s.snaps.put(objs), nil
}

// validatePRCreate checks the spec of a PackageRevision to create and
// returns its repository and key.
func (s *Server) validatePRCreate(rq *request, in *porchapi.PackageRevision) (*repoEntry, revision.Key, error) {
	kind := porchapi.KindPackageRevision
	name := porchapi.PackageRevisionName(in.Spec.RepositoryName, in.Spec.PackageName, in.Spec.WorkspaceName)
	inv := func(field, msg string) error { return errInvalid(grPackageRevisions, kind, name, field, msg) }
	if in.Kind != "" && in.Kind != kind {
		return nil, revision.Key{}, errBadRequest("the object's kind is %q, not %s", in.Kind, kind)
	}
	if in.Spec.RepositoryName == "" {
		return nil, revision.Key{}, inv("spec.repository", "Required value")
	}
	if in.Spec.PackageName == "" {
		return nil, revision.Key{}, inv("spec.packageName", "Required value")
	}
	if in.Spec.WorkspaceName == "" {
		return nil, revision.Key{}, inv("spec.workspaceName", "Required value")
	}
	if err := revision.ValidatePackagePath(in.Spec.PackageName); err != nil {
		return nil, revision.Key{}, inv("spec.packageName", err.Error())
	}
	if err := revision.ValidateWorkspace(in.Spec.WorkspaceName); err != nil {
		return nil, revision.Key{}, inv("spec.workspaceName", err.Error())
	}
	switch in.Spec.Lifecycle {
	case "", porchapi.LifecycleDraft:
	default:
		return nil, revision.Key{}, inv("spec.lifecycle", fmt.Sprintf("Unsupported value: %q: a package revision is created as a Draft", in.Spec.Lifecycle))
	}
	if in.Spec.Revision != 0 {
		return nil, revision.Key{}, inv("spec.revision", "a new package revision has revision 0; numbers are assigned on approval")
	}
	if _, ok := in.Labels[porchapi.LatestRevisionLabel]; ok {
		return nil, revision.Key{}, errForbidden(grPackageRevisions, name, "the "+porchapi.LatestRevisionLabel+" label is managed by the server")
	}
	if err := porchapi.MetadataOf(in).Validate(); err != nil {
		return nil, revision.Key{}, inv("metadata", err.Error())
	}
	e, ok := s.entry(rq.ns, in.Spec.RepositoryName)
	if !ok {
		return nil, revision.Key{}, inv("spec.repository", fmt.Sprintf("Not found: repository %q is not registered in namespace %q", in.Spec.RepositoryName, rq.ns))
	}
	if err := e.openErr(); err != nil {
		return nil, revision.Key{}, newStatus(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable,
			fmt.Sprintf("repository %q is not open: %v", e.name, err))
	}
	if b := branchOf(e); b != "" && in.Spec.WorkspaceName == b {
		return nil, revision.Key{}, inv("spec.workspaceName", fmt.Sprintf("%q is the repository's branch, the workspace of its placeholder revisions", b))
	}
	if in.Name != "" && in.Name != name {
		rq.warn("metadata.name %q is ignored: a package revision is named <repository>.<package>.<workspace>, %q", in.Name, name)
	}
	return e, revision.Key{Repository: e.name, Package: in.Spec.PackageName, Workspace: in.Spec.WorkspaceName}, nil
}

// sourceKey resolves a PackageRevision name used as a task's source.
func (s *Server) sourceKey(ns, name, field, newName string) (*repoEntry, revision.Key, error) {
	e, k, err := s.lookupPR(ns, name)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, revision.Key{}, errInvalid(grPackageRevisions, porchapi.KindPackageRevision, newName, field,
				fmt.Sprintf("Not found: package revision %q", name))
		}
		return nil, revision.Key{}, err
	}
	return e, k, nil
}

func (p *prImpl) create(ctx context.Context, rq *request, obj runtime.Object) (metav1.Object, error) {
	s := p.s
	in := obj.(*porchapi.PackageRevision)
	e, key, err := s.validatePRCreate(rq, in)
	if err != nil {
		return nil, err
	}
	name := porchapi.NameOf(key)
	rq.name = name
	task, err := porchapi.CreationTask(in)
	if err != nil {
		return nil, errInvalid(grPackageRevisions, porchapi.KindPackageRevision, name, "spec.tasks", err.Error())
	}
	eng := s.engineFor(ctx, rq)
	mutate := createMutation(in)
	md := porchapi.MetadataOf(in)
	if _, sent := md.Annotations[AuthorsAnnotation]; sent {
		md, _ = keepManaged(md, revision.Metadata{})
		rq.warn("annotation %s is managed by the server: the value sent is ignored", AuthorsAnnotation)
	}
	if u := userFrom(ctx); u != nil {
		md, _ = withAuthor(md, u.Name)
	}
	var rev revision.PackageRevision
	run := func(md revision.Metadata) (revision.PackageRevision, error) {
		switch task.Type {
		case porchapi.TaskTypeInit:
			if task.Init != nil && task.Init.Subpackage != "" {
				return nil, errInvalid(grPackageRevisions, porchapi.KindPackageRevision, name, "spec.tasks[0].init.subpackage",
					"initialising a subpackage is not supported by cad's server")
			}
			return eng.Init(ctx, e.name, key, porchapi.InitOptions(task.Init, md))
		case porchapi.TaskTypeClone:
			c := task.Clone
			opts := engine.CloneOptions{Strategy: revision.UpdateStrategy(c.Strategy), Metadata: md, Mutate: mutate}
			var src engine.CloneSource
			switch u := c.Upstream; {
			case u.UpstreamRef != nil:
				se, sk, err := s.sourceKey(rq.ns, u.UpstreamRef.Name, "spec.tasks[0].clone.upstreamRef.upstreamRef.name", name)
				if err != nil {
					return nil, err
				}
				sk.Repository = se.name
				src.Revision = &sk
			case u.Git != nil:
				if err := s.checkGitURL(u.Git.Repo); err != nil {
					return nil, errInvalid(grPackageRevisions, porchapi.KindPackageRevision, name, "spec.tasks[0].clone.upstreamRef.git.repo",
						strings.TrimPrefix(err.Error(), repository.ErrInvalidInput.Error()+": "))
				}
				auth, err := s.gitAuth(rq.ns, u.Git.SecretRef.Name, u.Git.Repo)
				if err != nil {
					return nil, errInvalid(grPackageRevisions, porchapi.KindPackageRevision, name, "spec.tasks[0].clone.upstreamRef.git.secretRef",
						err.Error())
				}
				g := porchapi.GitUpstream(u.Git)
				src.Git = &g
				opts.Fetcher = &gitrepo.Fetcher{Auth: auth}
			default:
				return nil, errInvalid(grPackageRevisions, porchapi.KindPackageRevision, name, "spec.tasks[0].clone.upstreamRef.oci",
					"clone from OCI is not implemented")
			}
			return eng.Clone(ctx, e.name, key, src, opts)
		case porchapi.TaskTypeEdit:
			se, sk, err := s.sourceKey(rq.ns, task.Edit.Source.Name, "spec.tasks[0].edit.sourceRef.name", name)
			if err != nil {
				return nil, err
			}
			if se.name != e.name || sk.Package != key.Package {
				return nil, errInvalid(grPackageRevisions, porchapi.KindPackageRevision, name, "spec.tasks[0].edit.sourceRef.name",
					"the source must be a revision of the same package in the same repository")
			}
			return eng.Copy(ctx, e.name, sk, key.Workspace, engine.CopyOptions{Metadata: md, Mutate: mutate})
		case porchapi.TaskTypeUpgrade:
			u := task.Upgrade
			refs := make([]engine.Ref, 3)
			for i, ref := range []struct{ name, field string }{
				{u.OldUpstream.Name, "oldUpstreamRef"}, {u.NewUpstream.Name, "newUpstreamRef"}, {u.LocalPackageRevisionRef.Name, "localPackageRevisionRef"},
			} {
				se, sk, err := s.sourceKey(rq.ns, ref.name, "spec.tasks[0].upgrade."+ref.field+".name", name)
				if err != nil {
					return nil, err
				}
				refs[i] = engine.Ref{Repository: se.name, Key: sk}
			}
			if refs[2].Repository != e.name || refs[2].Key.Package != key.Package {
				return nil, errInvalid(grPackageRevisions, porchapi.KindPackageRevision, name, "spec.tasks[0].upgrade.localPackageRevisionRef.name",
					"the local revision must be a revision of the same package in the same repository")
			}
			return eng.Upgrade(ctx, e.name, refs[2].Key, refs[0], refs[1], key.Workspace,
				engine.UpgradeOptions{Strategy: revision.UpdateStrategy(u.Strategy), Metadata: md, Mutate: mutate})
		}
		return nil, errInvalid(grPackageRevisions, porchapi.KindPackageRevision, name, "spec.tasks[0].type", "unsupported task")
	}
	rev, err = run(md)
	if err != nil && !md.IsZero() && errors.Is(err, repository.ErrNotSupported) {
		rq.warn("labels and annotations were not stored: repository %q cannot keep package revision metadata yet", e.name)
		rev, err = run(revision.Metadata{})
	}
	if err != nil && apiStatus(err) == nil && errors.Is(err, repository.ErrNotFound) {
		// The repository exists: what is missing is a source of the task.
		return nil, errInvalid(grPackageRevisions, porchapi.KindPackageRevision, name, "spec.tasks[0]", "Not found: "+err.Error())
	}
	if err != nil {
		return nil, err
	}
	if task.Type == porchapi.TaskTypeInit && mutate != nil {
		if rev, err = s.mutateDraft(ctx, s.engineFor(ctx, rq), rev, mutate); err != nil {
			return nil, fmt.Errorf("package revision %s was created, but setting its readiness gates and package metadata failed: %w", name, err)
		}
	}
	return s.prObject(ctx, rq.ns, e, rev, false)
}

// mutateDraft applies m to a draft's files and saves them with eng.
func (s *Server) mutateDraft(ctx context.Context, eng *engine.Engine, rev revision.PackageRevision, m engine.Mutation) (revision.PackageRevision, error) {
	files, err := rev.Files(ctx)
	if err != nil {
		return nil, err
	}
	out, err := m(ctx, files)
	if err != nil {
		return nil, err
	}
	if out.Equal(files) {
		return rev, nil
	}
	k := rev.Meta().Key
	return eng.Update(ctx, k.Repository, k, out, engine.UpdateOptions{})
}

// createMutation merges a new revision's readiness gates and package
// metadata into its Kptfile, additively as Porch does on create; nil when
// the spec sets neither.
func createMutation(in *porchapi.PackageRevision) engine.Mutation {
	gates, pm := in.Spec.ReadinessGates, in.Spec.PackageMetadata
	if len(gates) == 0 && (pm == nil || len(pm.Labels)+len(pm.Annotations) == 0) {
		return nil
	}
	return kptfileMutation(func(kf *revision.Kptfile) {
		if len(gates) > 0 {
			if kf.Info == nil {
				kf.Info = &revision.PackageInfo{}
			}
			for _, g := range porchapi.ReadinessGatesTo(gates) {
				if !slices.Contains(kf.Info.ReadinessGates, g) {
					kf.Info.ReadinessGates = append(kf.Info.ReadinessGates, g)
				}
			}
		}
		if pm != nil {
			kf.Metadata.Labels = mergeMaps(kf.Metadata.Labels, pm.Labels)
			kf.Metadata.Annotations = mergeMaps(kf.Metadata.Annotations, pm.Annotations)
		}
	})
}

func mergeMaps(a, b map[string]string) map[string]string {
	if len(b) == 0 {
		return a
	}
	out := maps.Clone(a)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, b)
	return out
}

// kptfileMutation edits the root Kptfile of a package with edit.
func kptfileMutation(edit func(kf *revision.Kptfile)) engine.Mutation {
	return func(ctx context.Context, files revision.Files) (revision.Files, error) {
		data, ok := files.Get(revision.KptfileName)
		if !ok {
			return files, fmt.Errorf("the package has no Kptfile to record readiness gates and package metadata in: %w", repository.ErrInvalidInput)
		}
		kf, err := revision.ParseKptfile(data)
		if err != nil {
			return files, err
		}
		edit(kf)
		out, err := kf.Encode()
		if err != nil {
			return files, err
		}
		return files.With(revision.KptfileName, out)
	}
}

func (p *prImpl) update(ctx context.Context, rq *request, obj runtime.Object) (metav1.Object, error) {
	s := p.s
	in := obj.(*porchapi.PackageRevision)
	cur, rev, e, err := s.getPR(ctx, s.engineFor(ctx, rq), rq.ns, rq.name)
	if err != nil {
		return nil, err
	}
	if err := checkUpdate(rq, in, cur); err != nil {
		return nil, err
	}
	eng := s.engineFor(ctx, rq)
	m := rev.Meta()
	key := m.Key
	inv := func(field, msg string) error {
		return errInvalid(grPackageRevisions, porchapi.KindPackageRevision, rq.name, field, msg)
	}
	md := porchapi.MetadataOf(in)
	if err := md.Validate(); err != nil {
		return nil, inv("metadata", err.Error())
	}
	md, overridden := keepManaged(md, m.Metadata)
	if overridden {
		rq.warn("annotation %s is managed by the server: the value sent is ignored", AuthorsAnnotation)
	}
	// A deletion waiting for finalizers stays requested; only the server
	// sets it (see delete).
	deleting := porchapi.DeletionRequested(m.Metadata)
	if deleting {
		md = porchapi.WithDeletionTimestamp(md, cur.DeletionTimestamp.Time)
		if err := errNewFinalizers(grPackageRevisions, rq.name, porchapi.Finalizers(md), porchapi.Finalizers(m.Metadata)); err != nil {
			return nil, err
		}
	}
	// The object's labels and annotations; readiness is compared below.
	md.ReadinessGates, md.Conditions = m.ReadinessGates, m.Conditions
	// Readiness gates, package metadata and conditions of a Draft, and
	// conditions of a Proposed revision (revision data, which a checker
	// sets without touching the content). An absent readinessGates or
	// packageMetadata keeps what there is; an empty one clears it.
	gatesChanged := in.Spec.ReadinessGates != nil && !slices.Equal(in.Spec.ReadinessGates, cur.Spec.ReadinessGates)
	pmChanged := in.Spec.PackageMetadata != nil && !equalPackageMetadata(in.Spec.PackageMetadata, cur.Spec.PackageMetadata)
	var conds []revision.Condition
	for _, c := range in.Status.Conditions {
		if !slices.Contains(cur.Status.Conditions, c) {
			conds = append(conds, porchapi.ConditionsTo([]porchapi.Condition{c})...)
		}
	}
	// Refuse what cannot be done before anything is written.
	if m.Lifecycle != revision.LifecycleDraft {
		if gatesChanged {
			return nil, inv("spec.readinessGates", fmt.Sprintf("field is immutable for a %s package revision", m.Lifecycle))
		}
		if pmChanged {
			return nil, inv("spec.packageMetadata", fmt.Sprintf("field is immutable for a %s package revision", m.Lifecycle))
		}
	}
	from, to := m.Lifecycle, revision.Lifecycle(in.Spec.Lifecycle)
	if to != "" && to != from {
		switch {
		case from == revision.LifecycleDraft && to == revision.LifecycleProposed,
			from == revision.LifecycleProposed && to == revision.LifecycleDraft,
			from == revision.LifecycleDeletionProposed && to == revision.LifecyclePublished,
			from == revision.LifecyclePublished && to == revision.LifecycleDeletionProposed:
		case to == revision.LifecyclePublished:
			return nil, inv("spec.lifecycle", fmt.Sprintf("Invalid value: %q: a package revision is published through the approval subresource", to))
		default:
			return nil, inv("spec.lifecycle", fmt.Sprintf("Invalid value: %q: cannot change lifecycle from %s to %s", to, from, to))
		}
	}
	contentChange := m.Lifecycle == revision.LifecycleDraft && (gatesChanged || pmChanged || len(conds) > 0)
	// A checker's conditions on a proposal: revision data, not content.
	proposalConds := m.Lifecycle == revision.LifecycleProposed && len(conds) > 0
	propose := from == revision.LifecycleDraft && to == revision.LifecycleProposed
	if contentChange || proposalConds || !md.Equal(m.Metadata) {
		if err := requireRole(ctx, rq, "update package revisions", RoleEditor); err != nil {
			return nil, err
		}
	}
	if to != "" && to != from {
		role := RoleApprover
		if propose {
			role = RoleEditor
		}
		if err := requireRole(ctx, rq, fmt.Sprintf("change the lifecycle of a package revision from %s to %s", from, to), role); err != nil {
			return nil, err
		}
	}
	clientMD := md
	if u := userFrom(ctx); u != nil && (contentChange || propose) {
		md, _ = withAuthor(md, u.Name)
	}
	// Metadata first: it is the only change with a version check in the
	// same write, and it records the authors before their change.
	if !md.Equal(m.Metadata) {
		if _, err := eng.SetMetadata(ctx, e.name, key, md, m.Version); err != nil {
			if errors.Is(err, repository.ErrNotSupported) {
				if !clientMD.Equal(m.Metadata) {
					return nil, notSupportedMetadata(rq.name, e.name, err)
				}
				rq.warn("the authors of this revision are not recorded: repository %q keeps no package revision metadata", e.name)
			} else {
				return nil, err
			}
		}
	}
	if m.Lifecycle != revision.LifecycleDraft {
		if proposalConds {
			if _, err := eng.SetConditions(ctx, e.name, key, conds...); err != nil {
				return nil, err
			}
		} else if len(conds) > 0 {
			rq.warn("status.conditions are ignored: a published revision's conditions cannot change")
		}
	} else {
		if gatesChanged {
			if _, err := eng.SetReadinessGates(ctx, e.name, key, porchapi.ReadinessGatesTo(in.Spec.ReadinessGates)); err != nil {
				return nil, err
			}
		}
		if pmChanged {
			pm := in.Spec.PackageMetadata
			if pm == nil {
				pm = &porchapi.PackageMetadata{}
			}
			r, err := eng.Get(ctx, e.name, key)
			if err != nil {
				return nil, err
			}
			if _, err := s.mutateDraft(ctx, s.engineFor(ctx, rq), r, kptfileMutation(func(kf *revision.Kptfile) {
				kf.Metadata.Labels = maps.Clone(pm.Labels)
				kf.Metadata.Annotations = maps.Clone(pm.Annotations)
			})); err != nil {
				return nil, err
			}
		}
		if len(conds) > 0 {
			if _, err := eng.SetConditions(ctx, e.name, key, conds...); err != nil {
				return nil, err
			}
		}
	}
	// Lifecycle.
	if to != "" && to != from {
		var err error
		switch {
		case from == revision.LifecycleDraft && to == revision.LifecycleProposed:
			_, err = eng.Propose(ctx, e.name, key)
		case from == revision.LifecycleProposed && to == revision.LifecycleDraft,
			from == revision.LifecycleDeletionProposed && to == revision.LifecyclePublished:
			_, err = eng.Reject(ctx, e.name, key)
		case from == revision.LifecyclePublished && to == revision.LifecycleDeletionProposed:
			_, err = eng.ProposeDelete(ctx, e.name, key)
		}
		if err != nil {
			return nil, err
		}
	}
	if deleting && len(porchapi.Finalizers(md)) == 0 {
		// The last finalizer went: the deletion it held back happens now,
		// and the answer is the object as it was last.
		last, rev, _, err := s.getPR(ctx, s.engineFor(ctx, rq), rq.ns, rq.name)
		if err != nil {
			return nil, err
		}
		if err := eng.Delete(ctx, e.name, key, engine.IfVersion(rev.Meta().Version)); err != nil {
			return nil, err
		}
		return last, nil
	}
	out, _, _, err := s.getPR(ctx, s.engineFor(ctx, rq), rq.ns, rq.name)
	return out, err
}

// errNewFinalizers refuses, as Kubernetes does, the finalizers of now
// that were not in before, on an object being deleted; nil when there are
// none.
func errNewFinalizers(gr schema.GroupResource, name string, now, before []string) error {
	added := slices.DeleteFunc(slices.Clone(now), func(f string) bool { return slices.Contains(before, f) })
	if len(added) == 0 {
		return nil
	}
	return errForbidden(gr, name, fmt.Sprintf("no new finalizers can be added if the object is being deleted, found new finalizers %q", added))
}

// checkUpdate checks an update of cur to in: resourceVersion, immutable
// spec fields, the server-managed label.
func checkUpdate(rq *request, in, cur *porchapi.PackageRevision) error {
	inv := func(field, msg string) error {
		return errInvalid(grPackageRevisions, porchapi.KindPackageRevision, rq.name, field, msg)
	}
	if in.ResourceVersion != "" && in.ResourceVersion != cur.ResourceVersion {
		return errConflict(grPackageRevisions, rq.name, staleMessage)
	}
	if in.Spec.PackageName != "" && in.Spec.PackageName != cur.Spec.PackageName {
		return inv("spec.packageName", "field is immutable")
	}
	if in.Spec.RepositoryName != "" && in.Spec.RepositoryName != cur.Spec.RepositoryName {
		return inv("spec.repository", "field is immutable")
	}
	if in.Spec.WorkspaceName != "" && in.Spec.WorkspaceName != cur.Spec.WorkspaceName {
		return inv("spec.workspaceName", "field is immutable")
	}
	if in.Spec.Revision != 0 && in.Spec.Revision != cur.Spec.Revision {
		return inv("spec.revision", "field is immutable: revision numbers are assigned on approval")
	}
	if porchapi.IsLatest(in) && !porchapi.IsLatest(cur) {
		return errForbidden(grPackageRevisions, rq.name, "the "+porchapi.LatestRevisionLabel+" label is managed by the server")
	}
	// spec.tasks is ignored on update: cad keeps no task list, and
	// kubectl apply sends the creation task back with every change.
	return nil
}

func notSupportedMetadata(name, repo string, err error) error {
	return withCause(newStatus(http.StatusNotImplemented, "NotImplemented",
		fmt.Sprintf("cannot set the labels and annotations of package revision %q: repository %q does not keep package revision metadata (%v)", name, repo, err)), err)
}

func equalPackageMetadata(a, b *porchapi.PackageMetadata) bool {
	var al, aa, bl, ba map[string]string
	if a != nil {
		al, aa = a.Labels, a.Annotations
	}
	if b != nil {
		bl, ba = b.Labels, b.Annotations
	}
	return maps.Equal(al, bl) && maps.Equal(aa, ba)
}

func (p *prImpl) delete(ctx context.Context, rq *request, opts *metav1.DeleteOptions) (metav1.Object, error) {
	s := p.s
	e, rev, err := s.getRevision(ctx, s.engineFor(ctx, rq), rq.ns, rq.name)
	if err != nil {
		return nil, err
	}
	m := rev.Meta()
	if pc := opts.Preconditions; pc != nil {
		if pc.ResourceVersion != nil && *pc.ResourceVersion != m.Version {
			return nil, errConflict(grPackageRevisions, rq.name, "the ResourceVersion in the precondition ("+*pc.ResourceVersion+") does not match the ResourceVersion in record ("+m.Version+"). The object might have been modified")
		}
		if pc.UID != nil && string(*pc.UID) != string(porchapi.PackageRevisionUID(rq.ns, rq.name)) {
			return nil, errConflict(grPackageRevisions, rq.name, "the UID in the precondition does not match the UID in record")
		}
	}
	if m.Lifecycle == revision.LifecyclePublished {
		return nil, errForbidden(grPackageRevisions, rq.name,
			"published PackageRevisions must be proposed for deletion by setting spec.lifecycle to 'DeletionProposed' prior to deletion")
	}
	role := RoleEditor
	if m.Lifecycle == revision.LifecycleDeletionProposed {
		role = RoleApprover
	}
	if err := requireRole(ctx, rq, fmt.Sprintf("delete a %s package revision", m.Lifecycle), role); err != nil {
		return nil, err
	}
	if len(porchapi.Finalizers(m.Metadata)) > 0 {
		// As Kubernetes does: the revision is only marked; it goes when
		// an update removes its last finalizer.
		if !porchapi.DeletionRequested(m.Metadata) {
			md := porchapi.WithDeletionTimestamp(m.Metadata, time.Now())
			if _, err := s.engineFor(ctx, rq).SetMetadata(ctx, e.name, m.Key, md, m.Version); err != nil {
				if errors.Is(err, repository.ErrNotSupported) {
					return nil, notSupportedMetadata(rq.name, e.name, err)
				}
				return nil, err
			}
		}
		out, _, _, err := s.getPR(ctx, s.engineFor(ctx, rq), rq.ns, rq.name)
		return out, err
	}
	if err := s.engineFor(ctx, rq).Delete(ctx, e.name, m.Key, engine.IfVersion(m.Version)); err != nil {
		return nil, err
	}
	return nil, nil
}

// approve serves an update of the approval subresource: a lifecycle
// change, approval the one no other update makes.
func (p *prImpl) approve(ctx context.Context, rq *request, obj runtime.Object) (metav1.Object, error) {
	s := p.s
	in := obj.(*porchapi.PackageRevision)
	cur, rev, e, err := s.getPR(ctx, s.engineFor(ctx, rq), rq.ns, rq.name)
	if err != nil {
		return nil, err
	}
	if in.ResourceVersion != "" && in.ResourceVersion != cur.ResourceVersion {
		return nil, errConflict(grPackageRevisions, rq.name, staleMessage)
	}
	eng := s.engineFor(ctx, rq)
	key := rev.Meta().Key
	// The change applies to the revision as read here, or not at all.
	at := engine.IfVersion(rev.Meta().Version)
	from, to := rev.Meta().Lifecycle, revision.Lifecycle(in.Spec.Lifecycle)
	switch {
	case to == from:
		return cur, nil
	case from == revision.LifecycleProposed && to == revision.LifecyclePublished:
		if err := s.checkSelfApproval(ctx, rq, rev.Meta()); err != nil {
			return nil, err
		}
		_, err = eng.Approve(ctx, e.name, key, at)
	case from == revision.LifecycleProposed && to == revision.LifecycleDraft,
		from == revision.LifecycleDeletionProposed && to == revision.LifecyclePublished:
		_, err = eng.Reject(ctx, e.name, key, at)
	case from == revision.LifecyclePublished && to == revision.LifecycleDeletionProposed:
		_, err = eng.ProposeDelete(ctx, e.name, key, at)
	default:
		return nil, errInvalid(grPackageRevisions, porchapi.KindPackageRevision, rq.name, "spec.lifecycle",
			fmt.Sprintf("Invalid value: %q: cannot change approval from %s to %s", to, from, to))
	}
	if err != nil {
		return nil, err
	}
	out, _, _, err := s.getPR(ctx, s.engineFor(ctx, rq), rq.ns, rq.name)
	return out, err
}
