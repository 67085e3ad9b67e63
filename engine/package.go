package engine

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// InitOptions configure Init.
type InitOptions struct {
	// Description, Keywords and Site go into the Kptfile's info. An empty
	// Description means kpt's "sample description".
	Description string
	Keywords    []string
	Site        string
	// NoKptfile creates a package without a Kptfile: only README.md. Every
	// backend keeps such a package through its whole lifecycle; gitrepo
	// registers it by the kpt: line of its commits (see
	// repository/gitrepo/DESIGN.md, "Layout"), so Porch, which lists only packages with a
	// Kptfile, does not see it.
	NoKptfile bool
	// Metadata becomes the new draft's labels and annotations, written
	// with it (see [Engine.SetMetadata]).
	Metadata revision.Metadata
	// Mutate, when set, edits the new package's content before it is
	// rendered and committed (see [Mutation]): readiness gates or other
	// Kptfile fields that must be there from the first write.
	Mutate Mutation
}

// Init creates a new package as a draft in repository repo, with the
// package path and workspace of key, as kpt pkg init and Porch's init task
// write it: a Kptfile (kpt.dev/v1, metadata.name the last element of the
// package path, the local-config annotation, info from opts), README.md
// and package-context.yaml; with opts.NoKptfile only README.md. The content
// is rendered when the Engine has a Pipeline, then committed with the
// message [MessageInit].
//
// Errors match repository.ErrInvalidInput for a bad key or a package path
// nested in or around an existing package ("packages cannot be nested"),
// repository.ErrAlreadyExists when the package already exists in repo (a
// *PackageExistsError: use Copy for a new revision) or the workspace is
// taken, repository.ErrNotFound
// for an unknown repository; a failed render returns the
// *pipeline.RenderError (errors.As) and saves nothing.
//
// The existence check and the creation are two steps: of concurrent Inits
// of one package with the same workspace exactly one succeeds, but with
// different workspaces more than one may.
func (e *Engine) Init(ctx context.Context, repo string, key revision.Key, opts InitOptions) (revision.PackageRevision, error) {
	const op = "init"
	key.Repository = repo
	if err := key.ValidateNew(); err != nil {
		return nil, wrap(op, key, err)
	}
	r, err := e.repo(ctx, op, key)
	if err != nil {
		return nil, err
	}
	if err := checkNewPackage(ctx, op, r, key); err != nil {
		return nil, err
	}
	files, err := initFiles(key.Package, opts)
	if err != nil {
		return nil, wrap(op, key, err)
	}
	if files, err = e.finish(ctx, op, key, files, opts.Mutate); err != nil {
		return nil, err
	}
	return e.create(ctx, op, r, key, files, MessageInit, opts.Metadata,
		&revision.Creation{Op: revision.CreatedByInit, Description: opts.Description, Keywords: opts.Keywords, Site: opts.Site})
}

// checkNewPackage checks that key's package does not exist in r and does
// not nest in, or around, an existing package, as Porch does for init. It
// lists only the package's path, what is under it and each of its
// ancestors, so its cost does not grow with the size of the repository.
func checkNewPackage(ctx context.Context, op string, r repository.Repository, key revision.Key) error {
	revs, err := r.List(ctx, repository.ListOptions{PackagePrefix: key.Package})
	if err != nil {
		return wrap(op, key, err)
	}
	for _, pr := range revs {
		if p := pr.Meta().Key.Package; p == key.Package {
			return &repository.Error{Op: op, Repository: key.Repository, Key: key,
				Err: &PackageExistsError{Op: op, Repository: key.Repository, Package: key.Package}}
		}
	}
	if len(revs) > 0 { // a package under key's path
		return repository.Errorf(op, key.Repository, key, repository.ErrInvalidInput,
			"packages cannot be nested: %q and existing package %q", key.Package, revs[0].Meta().Key.Package)
	}
	for p := path.Dir(key.Package); p != "." && p != "/" && p != ""; p = path.Dir(p) {
		revs, err := r.List(ctx, repository.ListOptions{Package: p})
		if err != nil {
			return wrap(op, key, err)
		}
		if len(revs) > 0 {
			return repository.Errorf(op, key.Repository, key, repository.ErrInvalidInput,
				"packages cannot be nested: %q and existing package %q", key.Package, p)
		}
	}
	return nil
}

// create commits files as a new draft of key, recording how it was
// created.
func (e *Engine) create(ctx context.Context, op string, r repository.Repository, key revision.Key, files revision.Files, msg string, md revision.Metadata, created *revision.Creation) (revision.PackageRevision, error) {
	if err := md.Validate(); err != nil {
		return nil, wrap(op, key, err)
	}
	// The new revision's readiness is recorded in its Kptfile too.
	files, err := revision.ProjectReadiness(files, md)
	if err != nil {
		return nil, wrap(op, key, err)
	}
	d, err := r.CreateDraft(ctx, key, repository.CreateDraftOptions{Files: files})
	if err != nil {
		return nil, wrap(op, key, err)
	}
	co := e.commitOptions(msg)
	co.Creation = byName(created)
	if !md.IsZero() {
		co = withMetadata(co, md)
	}
	pr, err := d.Commit(ctx, co)
	if err != nil {
		return nil, wrap(op, key, err)
	}
	e.opts.Logger.DebugContext(ctx, "created draft", "op", op, "key", pr.Meta().Key.String(), "version", pr.Meta().Version)
	return pr, nil
}

const readmeTemplate = "# {{.Name}}\n\n## Description\n{{.Description}}\n\n## Usage\n\n### Fetch the package\n" +
	"`kpt pkg get REPO_URI[.git]/PKG_PATH[@VERSION] {{.Name}}`\nDetails: https://kpt.dev/reference/cli/pkg/get/\n\n" +
	"### View package content\n`kpt pkg tree {{.Name}}`\nDetails: https://kpt.dev/reference/cli/pkg/tree/\n\n" +
	"### Apply the package\n```\nkpt live init {{.Name}}\nkpt live apply {{.Name}} --reconcile-timeout=2m --output=table\n```\n" +
	"Details: https://kpt.dev/reference/cli/live/\n"

// packageContext is the package-context.yaml kpt pkg init writes.
const packageContext = `apiVersion: v1
kind: ConfigMap
metadata:
  name: kptfile.kpt.dev
  annotations:
    config.kubernetes.io/local-config: "true"
data:
  name: example
`

// initFiles returns the content of a new package at pkgPath.
func initFiles(pkgPath string, opts InitOptions) (revision.Files, error) {
	name := path.Base(pkgPath)
	desc := opts.Description
	if desc == "" {
		desc = "sample description"
	}
	readme := strings.NewReplacer("{{.Name}}", name, "{{.Description}}", desc).Replace(readmeTemplate)
	m := map[string][]byte{"README.md": []byte(readme)}
	if !opts.NoKptfile {
		kf := revision.NewKptfile(name)
		kf.Metadata.Annotations = map[string]string{"config.kubernetes.io/local-config": "true"}
		kf.Info = &revision.PackageInfo{Description: desc, Keywords: opts.Keywords, Site: opts.Site}
		data, err := kf.Encode()
		if err != nil {
			return revision.Files{}, err
		}
		m[revision.KptfileName] = data
		m["package-context.yaml"] = []byte(packageContext)
	}
	return revision.NewFiles(m)
}

// Copy creates a new draft of source's package with the given workspace,
// whose content is that of the published revision source, verbatim
// (Kptfile upstream and upstreamLock included), rendered when the Engine
// has a Pipeline, and committed with the message [MessageCopy].
//
// Errors: a *PlaceholderError (matching repository.ErrInvalidInput) when
// source is the placeholder revision; repository.ErrInvalidInput when
// source is not Published or DeletionProposed, or workspace is not a valid
// name; repository.ErrNotFound when source does not exist;
// repository.ErrAlreadyExists when the workspace is taken; a
// *pipeline.RenderError (errors.As) when the render fails, with nothing
// saved.
func (e *Engine) Copy(ctx context.Context, repo string, source revision.Key, workspace string, opts CopyOptions) (revision.PackageRevision, error) {
	const op = "copy"
	source.Repository = repo
	if source.IsPlaceholder() {
		return nil, &PlaceholderError{Op: op, Key: source}
	}
	r, err := e.repo(ctx, op, source)
	if err != nil {
		return nil, err
	}
	src, err := r.Get(ctx, source)
	if err != nil {
		return nil, wrap(op, source, err)
	}
	sm := src.Meta()
	if sm.Key.IsPlaceholder() {
		return nil, &PlaceholderError{Op: op, Key: sm.Key}
	}
	if !sm.Lifecycle.IsPublished() {
		return nil, invalid(op, sm.Key, "source is %s; copy needs a published revision", sm.Lifecycle)
	}
	files, err := src.Files(ctx)
	if err != nil {
		return nil, wrap(op, sm.Key, err)
	}
	key := revision.Key{Repository: repo, Package: sm.Key.Package, Workspace: workspace}
	if files, err = e.finish(ctx, op, key, files, opts.Mutate); err != nil {
		return nil, err
	}
	copied := sm.Key
	copied.Repository = repo
	return e.create(ctx, op, r, key, files, MessageCopy, opts.Metadata, &revision.Creation{Op: revision.CreatedByCopy, Source: &copied})
}

// CopyOptions configure Copy. The zero value copies verbatim.
type CopyOptions struct {
	// Metadata becomes the new draft's labels and annotations, written
	// with it (see [Engine.SetMetadata]).
	Metadata revision.Metadata
	// Mutate, when set, edits the content before it is rendered and
	// committed (see [Mutation]).
	Mutate Mutation
}

// Mutation edits the content of a revision an operation is about to
// create, before the render and the single commit: a caller's
// specialisation (PackageVariant's context, functions and injection) that
// must never be seen half done. An error aborts the operation with nothing
// written; it is returned wrapped.
type Mutation func(ctx context.Context, files revision.Files) (revision.Files, error)

// withMetadata returns co writing a copy of md (validated by the caller)
// with the content.
func withMetadata(co revision.CommitOptions, md revision.Metadata) revision.CommitOptions {
	c := md.Clone()
	co.Metadata = &c
	return co
}

// finish applies mutate (when set) and then the Engine's render to the
// content of a revision about to be created.
func (e *Engine) finish(ctx context.Context, op string, key revision.Key, files revision.Files, mutate Mutation) (revision.Files, error) {
	if mutate != nil {
		out, err := mutate(ctx, files)
		if err != nil {
			return revision.Files{}, wrap(op, key, fmt.Errorf("mutation: %w", err))
		}
		files = out
	}
	files, err := e.render(ctx, files)
	if err != nil {
		return revision.Files{}, wrap(op, key, err)
	}
	return files, nil
}

// UpdateOptions configure Update.
type UpdateOptions struct {
	// SaveOnRenderFailure saves the package even when the render fails
	// (Porch's push-on-render-failure): what the pipeline left, or the
	// input when it left nothing. Update then returns the saved revision
	// together with the render error.
	SaveOnRenderFailure bool
	// Metadata, when not nil, replaces the draft's labels and annotations
	// in the same write as the content (see [Engine.SetMetadata]); when
	// only the metadata changes, only it is written. Its readiness gates
	// and conditions are ignored: the draft keeps its own (see
	// [Engine.UpdateReadiness]).
	Metadata *revision.Metadata
	// Version, when set, is the draft's Meta.Version the caller last read
	// (a Kubernetes resourceVersion): Update fails with an error matching
	// repository.ErrConflict, writing nothing, when the draft changed
	// since. The check and the commit are one compare-and-swap.
	Version string
}

// Update replaces the content of the Draft revision key selects with files
// (files left out are deleted), renders it when the Engine has a Pipeline,
// and commits it. Comments of the draft's resources are kept on the
// matching new resources (same apiVersion, kind, namespace and name) that
// have none, as Porch does; a file is re-serialized only when it regains a
// comment. The commit is a compare-and-swap against the draft as
// read, so a concurrent change makes it fail with
// repository.ErrConflict. When the result equals the current content,
// nothing is written and the current revision is returned.
//
// Errors: repository.ErrInvalidInput for an empty files (an update never
// wipes a package), and a *revision.YAMLLimitError (matching it) for a
// YAML file over a bound of Options.YAMLLimits; ctx.Err() when ctx ends
// while the files are read; repository.ErrNotFound when there is no such revision;
// repository.ErrImmutable when it is not a Draft; repository.ErrConflict
// when it changed meanwhile. When the render fails the error wraps the
// *pipeline.RenderError (errors.As) and nothing is saved, unless
// opts.SaveOnRenderFailure: then the content is saved and Update returns
// both the saved revision and the render error.
func (e *Engine) Update(ctx context.Context, repo string, key revision.Key, files revision.Files, opts UpdateOptions) (revision.PackageRevision, error) {
	const op = "update"
	key.Repository = repo
	if files.Len() == 0 {
		return nil, invalid(op, key, "empty file set; an update replaces the whole package and must not wipe it")
	}
	r, err := e.repo(ctx, op, key)
	if err != nil {
		return nil, err
	}
	d, err := r.OpenDraft(ctx, key)
	if err != nil {
		return nil, wrap(op, key, err)
	}
	if err := IfVersion(opts.Version)(d.Base()); err != nil {
		return nil, repository.Errorf(op, repo, d.Key(), repository.ErrConflict, "%v", err)
	}
	if opts.Metadata != nil {
		md := keepReadiness(*opts.Metadata, d.Base().Metadata)
		opts.Metadata = &md
	}
	if err := revision.CheckYAMLFiles(ctx, files, e.opts.YAMLLimits); err != nil {
		return nil, wrap(op, d.Key(), err)
	}
	return e.save(ctx, op, r, d, keepComments(d.Files(), files), opts)
}

// save renders files and commits them to d, a draft of r, as Update
// describes; opts.Metadata, when set, is the whole new Metadata. The
// revision's readiness gates and conditions are projected into the
// Kptfile before the render (see revision.ProjectReadiness).
func (e *Engine) save(ctx context.Context, op string, r repository.Repository, d revision.Draft, files revision.Files, opts UpdateOptions) (revision.PackageRevision, error) {
	key := d.Key()
	md := d.Base().Metadata
	if opts.Metadata != nil {
		if err := opts.Metadata.Validate(); err != nil {
			return nil, wrap(op, key, err)
		}
		md = *opts.Metadata
	}
	files, err := revision.ProjectReadiness(files, md)
	if err != nil {
		return nil, wrap(op, key, err)
	}
	rendered, renderErr := e.render(ctx, files)
	if renderErr != nil {
		renderErr = wrap(op, key, renderErr)
		if !opts.SaveOnRenderFailure {
			return nil, renderErr
		}
	}
	if rendered.Equal(d.Files()) {
		if opts.Metadata == nil || opts.Metadata.Equal(d.Base().Metadata) {
			return revision.NewWithFiles(d.Base(), d.Files()), renderErr
		}
		pr, err := repository.SetMetadata(ctx, r, key, opts.Metadata.Clone(), e.updateOptions(d.Base().Version))
		if err != nil {
			return nil, wrap(op, key, err)
		}
		return pr, renderErr
	}
	d.SetFiles(rendered)
	co := e.commitOptions(MessageRender)
	if opts.Metadata != nil {
		co = withMetadata(co, *opts.Metadata)
	}
	pr, err := d.Commit(ctx, co)
	if err != nil {
		return nil, wrap(op, key, err)
	}
	e.opts.Logger.DebugContext(ctx, "updated draft", "op", op, "key", pr.Meta().Key.String(), "version", pr.Meta().Version,
		"renderFailed", renderErr != nil)
	return pr, renderErr
}
