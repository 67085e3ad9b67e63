package pipeline

import (
	"context"
	"io/fs"
)

type packageFilesKey struct{}

// PackageFiles returns, to a function running in a render, the files of
// the package whose pipeline runs it: the package's directory as the
// render got it, subpackages included, paths relative to it. They are the
// files before the pipeline ran (what a function changes is in its
// ResourceList, not here), which is what functions that read non-KRM
// files of the package need: charts, values files, templates. It returns
// false outside a render.
func PackageFiles(ctx context.Context) (fs.FS, bool) {
	f, ok := ctx.Value(packageFilesKey{}).(fs.FS)
	return f, ok
}

// withPackageFiles returns ctx carrying the files PackageFiles returns.
func withPackageFiles(ctx context.Context, f fs.FS) context.Context {
	return context.WithValue(ctx, packageFilesKey{}, f)
}
