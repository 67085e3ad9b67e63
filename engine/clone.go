package engine

import (
	"context"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/configasdata/cad/internal/upstreamid"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// MessageClone is the commit message of Clone, as Porch writes it.
const MessageClone = "Creating new revision by cloning"

// PackageContextFile is the file Clone generates in a deployment
// repository (kpt's builtins/gen-pkg-context).
const PackageContextFile = "package-context.yaml"

// CloneSource is the upstream of Clone: exactly one field is set.
type CloneSource struct {
	// Revision is a published revision in a repository of the Engine's
	// Repositories; Revision.Repository names that repository, empty
	// meaning the target repository.
	Revision *revision.Key
	// Git is a package in a git repository the Engine does not manage,
	// read with CloneOptions.Fetcher.
	Git *repository.GitUpstream
	// Helm is a Helm chart, rendered with CloneOptions.Charts: the
	// package holds the rendered resources, and its upstream and lock
	// record the chart, version and values (type helm).
	Helm *HelmUpstream
}

// GitUpstream is a package in a git repository the Engine does not
// manage, with its credentials; the type lives in the repository contract
// so that fetchers need not import the engine.
//
// Deprecated: use repository.GitUpstream, the same type.
type GitUpstream = repository.GitUpstream

// UpstreamFetcher reads a package from a git upstream for Clone and
// Upgrade (see repository.UpstreamFetcher); repository/gitrepo.Fetcher
// implements it.
//
// Deprecated: use repository.UpstreamFetcher, the same type.
type UpstreamFetcher = repository.UpstreamFetcher

// URLer is an optional interface of Repositories: URL returns the git URL
// of the repository called name, or "" when it has none. Clone records it
// as the upstream repo of a clone from that repository; without it (or
// when it is "") the repository name is recorded. [Repos] implements it
// from its repositories' repository.Locator.
type URLer interface {
	URL(name string) string
}

// Deployer is an optional interface of Repositories: Deployment reports
// whether the repository called name is a deployment repository (Porch's
// Repository spec.deployment), into which Clone generates
// package-context.yaml.
type Deployer interface {
	Deployment(name string) bool
}

// CloneOptions configure Clone.
type CloneOptions struct {
	// Fetcher reads a CloneSource.Git upstream; required for one.
	Fetcher repository.UpstreamFetcher
	// Charts renders a CloneSource.Helm upstream; required for one.
	Charts ChartRenderer
	// ForDeployment generates package-context.yaml, as kpt pkg get
	// --for-deployment does; it is also generated when the Engine's
	// Repositories implement Deployer and report the target repository as
	// a deployment repository.
	ForDeployment bool
	// Strategy is the Kptfile's upstream.updateStrategy. Empty writes
	// none, as Porch's clone does; an upgrade then merges with
	// resource-merge, kpt's default.
	Strategy revision.UpdateStrategy
	// Metadata becomes the new draft's labels and annotations, written
	// with it (see [Engine.SetMetadata]).
	Metadata revision.Metadata
	// Mutate, when set, edits the cloned content (upstream, merge keys and
	// package context in place) before it is rendered and committed, so
	// that the draft is written only fully specialised (see [Mutation]).
	Mutate Mutation
	// Kptfile creates a Kptfile in a clone of an upstream that has none.
	// By default such a clone stays without one and records its upstream
	// and lock in cad's package file (revision.PackageFileName) instead.
	Kptfile bool
}

// Clone creates a new package as a draft in repository repo, with the
// package path and workspace of key, from src, as Porch's clone task does:
//
//   - the content is the upstream's;
//   - the Kptfile gets metadata.name the last element of the package
//     path, upstream {type git, git{repo, directory, ref}, updateStrategy
//     (only when [CloneOptions].Strategy is set)}, upstreamLock {type git,
//     git{repo, directory, ref, commit}} (a git directory without a
//     leading slash, "" for the root) and, as every resource, the
//     upstream-identifier annotation and kpt-merge comment, of its new
//     name ("kpt.dev|Kptfile|default|<name>"); an
//     upstream without a Kptfile gets no Kptfile (unless
//     [CloneOptions].Kptfile): the same name, upstream and lock go into
//     cad's package file (revision.PackageFileName), created or edited; for a registered source repo is
//     its URL when the Repositories implement [URLer] (Repos does) and
//     have one, else its name,
//     directory the package path, ref "<package>/v<N>" and commit the
//     revision's Meta.Commit (else Version); for a git source they are as given and the
//     commit the fetcher read; for a Helm source, upstream {type helm,
//     helm{repo, chart, version (as asked, else the one rendered),
//     releaseName, namespace, values}} and upstreamLock {type helm,
//     helm{repo, chart, version rendered, digest}};
//   - every KRM resource of a .yaml/.yml file other than a Kptfile, local
//     config included, gets the annotation internal.kpt.dev/upstream-identifier
//     "<group>|<kind>|<namespace or default>|<name>" and the comment
//     "metadata: # kpt-merge: <namespace>/<name>", unless it has them (best
//     effort: a file that does not parse is copied as is);
//   - in a deployment repository (see [CloneOptions].ForDeployment and
//     [Deployer]) package-context.yaml is (re)generated: ConfigMap
//     kptfile.kpt.dev, local-config, data.name the package name.
//
// The content is rendered when the Engine has a Pipeline, then committed
// with the message [MessageClone].
//
// Errors: a *PlaceholderError (matching repository.ErrInvalidInput) for the
// placeholder revision as source; repository.ErrInvalidInput for a source
// that is not Published or DeletionProposed, a CloneSource with not exactly
// one field, a Git source without repo or ref or without a Fetcher, a Helm
// source without repo or chart or without a ChartRenderer, a bad
// key or a nested package path, and a *revision.YAMLLimitError (matching
// it) for an upstream YAML file over a bound of Options.YAMLLimits;
// a *PackageExistsError (matching repository.ErrAlreadyExists) when the
// package already exists in repo (use Copy for a new revision); repository.ErrNotFound
// for an unknown repository or source (the renderer's for an unknown
// chart or version); the renderer's other errors (an unreachable
// repository, a template error) wrapped; a failed render returns the
// *pipeline.RenderError (errors.As). On any error nothing is written.
func (e *Engine) Clone(ctx context.Context, repo string, key revision.Key, src CloneSource, opts CloneOptions) (revision.PackageRevision, error) {
	const op = "clone"
	key.Repository = repo
	if err := key.ValidateNew(); err != nil {
		return nil, wrap(op, key, err)
	}
	if n := btoi(src.Revision != nil) + btoi(src.Git != nil) + btoi(src.Helm != nil); n != 1 {
		return nil, invalid(op, key, "clone source must be exactly one of a registered revision, a git upstream and a Helm chart")
	}
	r, err := e.repo(ctx, op, key)
	if err != nil {
		return nil, err
	}
	if err := checkNewPackage(ctx, op, r, key); err != nil {
		return nil, err
	}
	var (
		files revision.Files
		from  origin
	)
	if src.Revision != nil {
		sk := *src.Revision
		if sk.Repository == "" {
			sk.Repository = repo
		}
		files, from, err = e.fetchRevision(ctx, op, sk)
	} else if src.Git != nil {
		files, from, err = fetchGit(ctx, op, key, *src.Git, opts.Fetcher)
	} else {
		files, from, err = fetchHelm(ctx, op, key, *src.Helm, opts.Charts)
	}
	if err != nil {
		return nil, err
	}
	if err := revision.CheckYAMLFiles(ctx, files, e.opts.YAMLLimits); err != nil {
		return nil, wrap(op, key, err) // hostile upstream content, from any backend
	}
	files, err = cloneFiles(key.Package, files, from, opts.Strategy, opts.Kptfile)
	if err != nil {
		return nil, wrap(op, key, err)
	}
	if opts.ForDeployment || e.deployment(repo) {
		files, err = files.With(PackageContextFile, []byte(packageContextFor(path.Base(key.Package))))
		if err != nil {
			return nil, wrap(op, key, err)
		}
	}
	if files, err = e.finish(ctx, op, key, files, opts.Mutate); err != nil {
		return nil, err
	}
	created := &revision.Creation{Op: revision.CreatedByClone, Strategy: opts.Strategy}
	if src.Revision != nil {
		created.Source = e.fullKey(ctx, repo, *src.Revision)
	} else if src.Git != nil {
		created.Git = &revision.GitUpstreamRef{Repo: src.Git.Repo, Ref: src.Git.Ref, Directory: src.Git.Directory}
	}
	return e.create(ctx, op, r, key, files, MessageClone, opts.Metadata, created)
}

// origin is where a clone or an upgrade takes its content from, as the
// package's upstream and lock record it.
type origin struct {
	// generic is set for a repository that is not a git repository (an
	// OCI registry): the lock is kpt's generic lock, storeID repo,
	// resourceID ref and resourceVersion commit.
	generic bool
	repo    string // the git URL or repository name; a generic lock's store id
	dir     string // the package directory
	ref     string // "<package>/v<N>", a tag or a branch
	commit  string // the content id
	// helm is set for a rendered Helm chart; the fields above are unused
	// then.
	helm *helmOrigin
}

// records returns the upstream and the lock that name o.
func (o origin) records(strategy revision.UpdateStrategy) (*revision.Upstream, *revision.UpstreamLock) {
	if o.helm != nil {
		return o.helm.records(strategy)
	}
	if o.generic {
		return &revision.Upstream{Type: revision.GenericOrigin, UpdateStrategy: strategy},
			&revision.UpstreamLock{Type: revision.GenericOrigin, Generic: &revision.GenericLock{StoreID: o.repo, ResourceID: o.ref, ResourceVersion: o.commit}}
	}
	return &revision.Upstream{Type: revision.GitOrigin, Git: &revision.Git{Repo: o.repo, Directory: o.dir, Ref: o.ref}, UpdateStrategy: strategy},
		&revision.UpstreamLock{Type: revision.GitOrigin, Git: &revision.GitLock{Repo: o.repo, Directory: o.dir, Ref: o.ref, Commit: o.commit}}
}

// locate returns what an upstream record names repository name by: its
// URL when the Repositories implement [URLer] and have one, else for a
// repository that is not git (repository.Locator) "<type>://<address>",
// else its name; and whether it is not a git repository.
func (e *Engine) locate(ctx context.Context, name string) (id string, generic bool) {
	id = name
	if u, ok := e.opts.Repositories.(URLer); ok {
		if s := u.URL(name); s != "" {
			id = s
		}
	}
	r, err := e.opts.Repositories.Repository(ctx, name)
	if err != nil {
		return id, false
	}
	if typ, addr := repository.LocationOf(r); typ != "" && typ != repository.TypeGit {
		generic = true
		if id == name && addr != "" {
			id = string(typ) + "://" + addr
		}
	}
	return id, generic
}

// fetchRevision reads the published revision src of a registered
// repository and the origin that names it.
func (e *Engine) fetchRevision(ctx context.Context, op string, src revision.Key) (revision.Files, origin, error) {
	sm, files, err := e.publishedFiles(ctx, op, src)
	if err != nil {
		return revision.Files{}, origin{}, err
	}
	id, generic := e.locate(ctx, src.Repository)
	return files, origin{
		generic: generic,
		repo:    id,
		dir:     sm.Key.Package,
		ref:     sm.Key.Package + "/v" + strconv.Itoa(sm.Key.Revision),
		commit:  contentID(sm),
	}, nil
}

// fetchGit reads up with f and returns the origin that names it.
func fetchGit(ctx context.Context, op string, key revision.Key, up repository.GitUpstream, f repository.UpstreamFetcher) (revision.Files, origin, error) {
	switch {
	case f == nil:
		return revision.Files{}, origin{}, invalid(op, key, "cloning from a git upstream needs CloneOptions.Fetcher")
	case up.Repo == "" || up.Ref == "":
		return revision.Files{}, origin{}, invalid(op, key, "git upstream needs a repo and a ref")
	}
	files, commit, err := f.Fetch(ctx, up)
	if err != nil {
		return revision.Files{}, origin{}, wrap(op, key, err)
	}
	if files.Len() == 0 {
		return revision.Files{}, origin{}, repository.Errorf(op, key.Repository, key, repository.ErrNotFound,
			"no files in directory %q of %s at %q", up.Directory, up.Repo, up.Ref)
	}
	// Recorded without a leading slash, as Porch records it (kpt's
	// UpdateUpstream): porchctl sends "/basens", the Kptfile says
	// "basens", and the root is "".
	dir := strings.TrimPrefix(up.Directory, "/")
	return files, origin{repo: up.Repo, dir: dir, ref: up.Ref, commit: commit}, nil
}

func (e *Engine) deployment(repo string) bool {
	d, ok := e.opts.Repositories.(Deployer)
	return ok && d.Deployment(repo)
}

// cloneFiles rewrites upstream content for the package at pkgPath: the
// Kptfile's name, upstream and lock (or, for an upstream without a
// Kptfile, unless addKptfile, the package file's), and the resources'
// merge keys.
func cloneFiles(pkgPath string, files revision.Files, from origin, strategy revision.UpdateStrategy, addKptfile bool) (revision.Files, error) {
	files, err := upstreamid.StampFiles(files)
	if err != nil {
		return revision.Files{}, err
	}
	up, upLock := from.records(strategy)
	if !files.Has(revision.KptfileName) && !addKptfile {
		return withPackageFile(files, path.Base(pkgPath), up, upLock)
	}
	m := files.Map()
	kf := revision.NewKptfile("")
	if data, ok := m[revision.KptfileName]; ok {
		parsed, err := revision.ParseKptfile(data)
		if err != nil {
			return revision.Files{}, fmt.Errorf("%w: upstream Kptfile: %w", repository.ErrInvalidInput, err)
		}
		kf = parsed
	}
	kf.Metadata.Name = path.Base(pkgPath)
	kf.Upstream = up
	kf.UpstreamLock = upLock
	data, err := kf.Encode()
	if err != nil {
		return revision.Files{}, err
	}
	// The Kptfile takes its merge identity from its new name, as Porch's
	// clone gives it.
	if data, err = upstreamid.StampKptfile(data); err != nil {
		return revision.Files{}, err
	}
	m[revision.KptfileName] = data
	return revision.NewFiles(m)
}

// packageContextFor is the package-context.yaml of kpt's
// builtins/gen-pkg-context for a package called name (a DNS label, so
// plain YAML).
func packageContextFor(name string) string {
	return strings.Replace(packageContext, "name: example\n", "name: "+name+"\n", 1)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
