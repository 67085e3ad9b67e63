package deps

import (
	"context"
	"fmt"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// Read returns pr as a Package: its key and what its files declare
// ([revision.DependenciesFromFiles]). It returns the error of reading its
// files; an invalid declaration is not an error of Read but the Package's
// Err (it matches repository.ErrInvalidInput).
func Read(ctx context.Context, pr revision.PackageRevision) (Package, error) {
	files, err := pr.Files(ctx)
	if err != nil {
		return Package{}, fmt.Errorf("deps: read %s: %w", pr.Meta().Key, err)
	}
	d, err := revision.DependenciesFromFiles(files)
	return Package{Key: pr.Meta().Key, Dependencies: d, Err: err}, nil
}

// Latest returns the latest published revision (Published or
// DeletionProposed, the highest revision number; never the placeholder)
// of every package of r, as Packages in package order, ready to be the
// universe of [Resolve]. It reads the files of those revisions only. It
// returns r's List error, or the first error reading files.
func Latest(ctx context.Context, r repository.Repository) ([]Package, error) {
	revs, err := r.List(ctx, repository.ListOptions{Lifecycles: []revision.Lifecycle{revision.LifecyclePublished, revision.LifecycleDeletionProposed}})
	if err != nil {
		return nil, fmt.Errorf("deps: list %s: %w", r.Name(), err)
	}
	latest := map[string]revision.PackageRevision{}
	var order []string
	for _, pr := range revs {
		k := pr.Meta().Key
		if k.Revision < 1 {
			continue
		}
		cur, ok := latest[k.Package]
		if !ok {
			order = append(order, k.Package)
		}
		if !ok || k.Revision > cur.Meta().Key.Revision {
			latest[k.Package] = pr
		}
	}
	out := make([]Package, 0, len(order))
	for _, name := range order {
		p, err := Read(ctx, latest[name])
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}
