package engine

import (
	"context"
	"errors"
	"path"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// Adopt registers an existing directory of repository repo as a package
// revision without rewriting its files: the directory key.Package of the
// commit, tag or branch opts.Ref names (see repository.AdoptOptions for
// what a ref is in each backend), Published with number key.Revision (0
// for the next one) or, with opts.Lifecycle Draft, a draft of workspace
// key.Workspace to edit, propose and approve like any other. The directory
// needs no Kptfile: its upstream, pipeline and readiness come from a
// Kptfile, else from cad's package file (revision.PackageFileName), else
// from the API ([Engine.Upgrade] records an upstream in a package file,
// for instance). The author is opts' when set, else the Engine's.
//
// A package path that nests in, or around, another package of repo is
// refused, as for Init; adopting a further revision of an existing package
// is allowed.
//
// Errors: repository.ErrNotSupported when the repository does not
// implement repository.Adopter; repository.ErrInvalidInput for a bad key,
// lifecycle or nested path; repository.ErrNotFound for an unknown
// repository, ref or directory; repository.ErrAlreadyExists when the
// revision number or workspace is taken. On any error nothing is written.
func (e *Engine) Adopt(ctx context.Context, repo string, key revision.Key, opts repository.AdoptOptions) (revision.PackageRevision, error) {
	const op = "adopt"
	key.Repository = repo
	r, err := e.repo(ctx, op, key)
	if err != nil {
		return nil, err
	}
	if _, ok := r.(repository.Adopter); !ok {
		_, err := repository.Adopt(ctx, r, key, opts)
		return nil, wrap(op, key, err)
	}
	if err := revision.ValidatePackagePath(key.Package); err != nil {
		return nil, wrap(op, key, err)
	}
	if err := checkNewPackage(ctx, op, r, key); err != nil && !errors.Is(err, repository.ErrAlreadyExists) {
		return nil, err
	}
	if opts.AuthorName == "" && opts.AuthorEmail == "" {
		opts.AuthorName, opts.AuthorEmail = e.opts.AuthorName, e.opts.AuthorEmail
	}
	pr, err := repository.Adopt(ctx, r, key, opts)
	if err != nil {
		return nil, wrap(op, key, err)
	}
	e.opts.Logger.DebugContext(ctx, "adopted", "key", pr.Meta().Key.String(), "ref", opts.Ref, "dir", path.Clean(key.Package))
	return pr, nil
}
