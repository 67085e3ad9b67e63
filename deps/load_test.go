package deps_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/configasdata/cad/deps"
	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/memrepo"
	"github.com/configasdata/cad/repository/repotest"
	"github.com/configasdata/cad/revision"
)

func TestLatest(t *testing.T) {
	ctx := context.Background()
	repo := memrepo.New("deploy", nil)
	t.Cleanup(func() { repo.Close() })
	e, err := engine.New(&engine.Options{Repositories: engine.Repos{"deploy": repo}})
	require.NoError(t, err)
	publish := func(pkg, ws, packageFile string) {
		t.Helper()
		key := revision.Key{Package: pkg, Workspace: ws}
		mut := func(_ context.Context, f revision.Files) (revision.Files, error) {
			if packageFile == "" {
				return f, nil
			}
			return f.With(revision.PackageFileName, []byte("apiVersion: cad.configasdata.dev/v1alpha1\nkind: Package\nspec:\n"+packageFile))
		}
		if ws == "v1" {
			_, err = e.Init(ctx, "deploy", key, engine.InitOptions{Mutate: mut})
		} else {
			_, err = e.Copy(ctx, "deploy", revision.Key{Package: pkg, Revision: 1}, ws, engine.CopyOptions{Mutate: mut})
		}
		require.NoError(t, err)
		_, err = e.Propose(ctx, "deploy", key)
		require.NoError(t, err)
		_, err = e.Approve(ctx, "deploy", key)
		require.NoError(t, err)
	}
	publish("a", "v1", "  provides: [{capability: old}]\n")
	publish("a", "v2", "  provides: [{capability: new}]\n")
	publish("bad", "v1", "")
	// A draft with an invalid declaration does not count; neither does the
	// invalid file of a published revision make Latest fail.
	_, err = e.Init(ctx, "deploy", revision.Key{Package: "draft", Workspace: "v1"}, engine.InitOptions{})
	require.NoError(t, err)
	badKey := revision.Key{Package: "bad", Workspace: "v2"}
	_, err = e.Copy(ctx, "deploy", revision.Key{Package: "bad", Revision: 1}, "v2", engine.CopyOptions{Mutate: func(_ context.Context, f revision.Files) (revision.Files, error) {
		return f.With(revision.PackageFileName, []byte("apiVersion: cad.configasdata.dev/v1alpha1\nkind: Package\nspec:\n  requires: [{}]\n"))
	}})
	require.NoError(t, err)
	_, err = e.Propose(ctx, "deploy", badKey)
	require.NoError(t, err)
	_, err = e.Approve(ctx, "deploy", badKey)
	require.NoError(t, err)

	ps, err := deps.Latest(ctx, repo)
	require.NoError(t, err)
	require.Len(t, ps, 2)
	assert.Equal(t, "a", ps[0].Key.Package)
	assert.Equal(t, 2, ps[0].Key.Revision)
	assert.Equal(t, []revision.Dependency{{Capability: "new"}}, ps[0].Dependencies.Provides)
	assert.Equal(t, "bad", ps[1].Key.Package)
	assert.ErrorIs(t, ps[1].Err, repository.ErrInvalidInput)

	// A failing List is Latest's error.
	broken := repotest.Intercept(repo, repotest.Funcs{List: func(context.Context, repository.Repository, repository.ListOptions) ([]revision.PackageRevision, error) {
		return nil, repository.ErrClosed
	}})
	_, err = deps.Latest(ctx, broken)
	assert.ErrorIs(t, err, repository.ErrClosed)
}
