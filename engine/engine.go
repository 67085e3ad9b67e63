package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// Commit messages the engine writes, as Porch writes them.
const (
	MessageInit = "Creating new empty revision"
	MessageCopy = "Creating new revision by copying previous revision"
	// MessageRender is the message of a draft's later commits, its edits
	// (UpdateDraft) and the re-render of a proposal: Porch's message for
	// a commit of its render task.
	MessageRender = "Rendering package"
)

// Repositories resolves the repositories an Engine may use. The caller
// builds it; [Repos] is a ready-made implementation over a fixed set.
// Implementations must be safe for concurrent use.
type Repositories interface {
	// Repository returns the repository called name, or an error matching
	// repository.ErrNotFound when there is none.
	Repository(ctx context.Context, name string) (repository.Repository, error)
	// Names returns the names of every repository the engine may use. The
	// engine searches them for upstream references before a delete.
	Names(ctx context.Context) ([]string, error)
}

// Repos is a fixed set of repositories keyed by name. It must not be
// modified while an Engine uses it.
type Repos map[string]repository.Repository

var (
	_ Repositories = Repos(nil)
	_ Deployer     = Repos(nil)
	_ URLer        = Repos(nil)
)

// Repository returns r[name], or an *repository.Error matching
// repository.ErrNotFound when r has no such repository.
func (r Repos) Repository(_ context.Context, name string) (repository.Repository, error) {
	if repo, ok := r[name]; ok && repo != nil {
		return repo, nil
	}
	return nil, repository.Errorf("get repository", name, revision.Key{}, repository.ErrNotFound, "no repository %q", name)
}

// Deployment reports whether the repository r[name] is a deployment
// repository: its repository.Spec's Deployment, for repositories that
// report their spec (repository.Specified: gitrepo and ocirepo); false
// otherwise. Clone into a deployment repository adds the package context
// (see [Engine.Clone]).
func (r Repos) Deployment(name string) bool {
	s, ok := r[name].(repository.Specified)
	return ok && s.Spec().Deployment
}

// URL returns the git URL of the repository r[name], without
// credentials, as it reports it (repository.Locator: gitrepo does), so
// that a clone from it records where its upstream is, not the name it has
// in r. It returns "" for a repository that is not git, does not report a
// location, or lives in memory ("mem://": no other process can reach it).
func (r Repos) URL(name string) string {
	typ, addr := repository.LocationOf(r[name])
	if typ != repository.TypeGit || strings.HasPrefix(addr, "mem://") {
		return ""
	}
	return addr
}

// Names returns the names in r, sorted.
func (r Repos) Names(context.Context) ([]string, error) {
	names := make([]string, 0, len(r))
	for n := range r {
		names = append(names, n)
	}
	slices.Sort(names)
	return names, nil
}

// Options configure New. Every field but Repositories is optional.
type Options struct {
	// Repositories resolves repository names; required.
	Repositories Repositories
	// Pipeline renders a package on every save (Init, Copy, Update). Nil
	// means packages are saved as given, without rendering.
	Pipeline pipeline.Pipeline
	// Logger receives debug records of the engine's writes and warnings
	// (a Helm chart republished under its locked version). Nil means
	// silent.
	Logger *slog.Logger
	// Now is the engine's clock, for the timestamps it records; default
	// time.Now. (No operation of this version records one: publication
	// times come from the repository.)
	Now func() time.Time
	// AuthorName and AuthorEmail identify the engine's commits and
	// approvals; empty means each repository's configured author.
	AuthorName, AuthorEmail string
	// Dependencies say where Approve looks for providers when it resolves
	// again the requirements of a revision that carries the dependency
	// gate (see [Engine.Approve]); nil means the defaults of
	// [DependenciesOptions].
	Dependencies *DependenciesOptions
	// YAMLLimits bound the work of reading each YAML file (and Kptfile)
	// that Update is given or Clone and Upgrade read from an upstream:
	// its size, documents, nesting, nodes, alias expansion and mapping
	// size, and the documents and nodes of the package as a whole (see
	// revision.CheckYAMLFiles). Content over a bound makes the operation
	// fail with a *revision.YAMLLimitError (matching
	// repository.ErrInvalidInput), writing nothing. Nil means the defaults
	// of revision.YAMLLimits. Within one operation each file is parsed for
	// the bounds once: the Pipeline's render does not parse again a file
	// whose bytes passed here, provided its renderer's per-file bounds
	// (pipeline.Options.YAMLLimits) are the same as these; a file that
	// changed since, or other bounds, are checked again.
	YAMLLimits *revision.YAMLLimits
	// ProtectKptfileUpstreams makes Delete stricter than Porch: besides
	// the revisions whose creation record names the target as the source
	// of their clone or the new upstream of their upgrade (Porch's rule,
	// always applied), a published revision is also kept while any
	// revision's Kptfile upstream or upstream lock names it (its package
	// directory with its tag or commit), whatever created that revision:
	// a hand-made clone, a kpt CLI clone, an adopted package. It costs a
	// read of every revision's Kptfile in every repository on each
	// delete. Default false, as Porch.
	ProtectKptfileUpstreams bool
}

func (o *Options) withDefaults() Options {
	var out Options
	if o != nil {
		out = *o
	}
	if out.Logger == nil {
		out.Logger = slog.New(slog.DiscardHandler)
	}
	if out.Now == nil {
		out.Now = time.Now
	}
	return out
}

// Engine performs package operations and lifecycle changes over the
// repositories of its Options. It keeps no state of its own between calls
// (but for the one listing of an Engine from WithReferenceSnapshot):
// every operation reads the repository, and every write is the
// repository's compare-and-swap, so any number of Engines, in one process
// or many, may work on the same repositories. An Engine is safe for
// concurrent use.
type Engine struct {
	opts Options
	// refs is the reference listing of an Engine from
	// WithReferenceSnapshot; nil otherwise.
	refs *refSnapshot
}

// New returns an Engine. It returns an error matching
// repository.ErrInvalidInput when opts has no Repositories.
func New(opts *Options) (*Engine, error) {
	o := opts.withDefaults()
	if o.Repositories == nil {
		return nil, fmt.Errorf("engine: new: %w: Options.Repositories is required", repository.ErrInvalidInput)
	}
	return &Engine{opts: o}, nil
}

func (e *Engine) repo(ctx context.Context, op string, key revision.Key) (repository.Repository, error) {
	r, err := e.opts.Repositories.Repository(ctx, key.Repository)
	if err != nil {
		return nil, wrap(op, key, err)
	}
	return r, nil
}

func (e *Engine) commitOptions(msg string) revision.CommitOptions {
	return revision.CommitOptions{Message: msg, AuthorName: e.opts.AuthorName, AuthorEmail: e.opts.AuthorEmail}
}

func (e *Engine) updateOptions(version string) repository.UpdateOptions {
	return repository.UpdateOptions{Version: version, AuthorName: e.opts.AuthorName, AuthorEmail: e.opts.AuthorEmail}
}

// render runs the pipeline over files. Without a pipeline it returns files.
// On failure it returns the files the pipeline left (or files) and the
// *pipeline.RenderError.
func (e *Engine) render(ctx context.Context, files revision.Files) (revision.Files, error) {
	if e.opts.Pipeline == nil {
		return files, nil
	}
	out, err := e.opts.Pipeline.Render(ctx, files)
	if err != nil {
		var re *pipeline.RenderError
		if errors.As(err, &re) && re.Output != nil && re.Output.Files.Len() > 0 {
			return re.Output.Files, err
		}
		return files, err
	}
	if out == nil {
		return files, nil
	}
	return out.Files, nil
}

// contentID is what an upstream lock records for the revision m: the
// backend's content id (a git commit) when it has one, else its Version.
func contentID(m revision.Meta) string {
	if m.Commit != "" {
		return m.Commit
	}
	return m.Version
}

// byName returns c with its keys naming revisions by workspace alone
// (Revision 0), as Porch's names do and as backends record them.
func byName(c *revision.Creation) *revision.Creation {
	c = c.Clone()
	if c == nil {
		return nil
	}
	for _, k := range []*revision.Key{c.Source, c.OldUpstream, c.NewUpstream, c.Local} {
		if k != nil {
			k.Revision = 0
		}
	}
	return c
}

// fullKey returns k, a key of a revision in repository repo unless it
// names another, with its workspace: a revision's record of where it came
// from (revision.Creation) names revisions as Porch does, by workspace. A
// key without a workspace is looked up; when that fails k is returned as
// it is.
func (e *Engine) fullKey(ctx context.Context, repo string, k revision.Key) *revision.Key {
	if k.Repository == "" {
		k.Repository = repo
	}
	if k.Workspace == "" {
		if r, err := e.opts.Repositories.Repository(ctx, k.Repository); err == nil {
			if pr, err := r.Get(ctx, k); err == nil {
				k.Package, k.Workspace, k.Revision = pr.Meta().Key.Package, pr.Meta().Key.Workspace, pr.Meta().Key.Revision
			}
		}
	}
	return &k
}
