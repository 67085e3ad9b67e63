package variant_test

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/repository/memrepo"
	"github.com/configasdata/cad/revision"
	"github.com/configasdata/cad/variant"
	"github.com/stretchr/testify/require"
)

// backend opens an empty repository called name.
type backend struct {
	name string
	open func(t testing.TB, name string) repository.Repository
}

var backends = []backend{
	{"memrepo", func(t testing.TB, name string) repository.Repository { return memrepo.New(name, nil) }},
	{"gitrepo", func(t testing.TB, name string) repository.Repository {
		r, err := gitrepo.Open(context.Background(), repository.Spec{
			Name: name, Type: repository.TypeGit,
			Git: &repository.GitSpec{Repo: gitrepo.MemoryURL, CreateBranch: true},
		}, nil)
		require.NoError(t, err)
		t.Cleanup(func() { r.Close() })
		return r
	}},
}

// forEachBackend runs f as a subtest on every backend.
func forEachBackend(t *testing.T, f func(t *testing.T, b backend)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { f(t, b) })
	}
}

// env is a test fixture: an engine over an upstream repository
// "blueprints" and a downstream repository "deployments".
type env struct {
	t     testing.TB
	ctx   context.Context
	repos engine.Repos
	e     *engine.Engine
	objs  *variant.Objects
	opts  *variant.Options
	ws    int
}

func newEnv(t testing.TB, b backend, repoNames ...string) *env {
	t.Helper()
	if len(repoNames) == 0 {
		repoNames = []string{"blueprints", "deployments"}
	}
	repos := engine.Repos{}
	for _, n := range repoNames {
		repos[n] = b.open(t, n)
	}
	e, err := engine.New(&engine.Options{Repositories: repos})
	require.NoError(t, err)
	objs := &variant.Objects{}
	return &env{t: t, ctx: context.Background(), repos: repos, e: e, objs: objs,
		opts: &variant.Options{Repositories: repos, Objects: objs}}
}

const baseKptfile = `apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: %s
  annotations:
    config.kubernetes.io/local-config: "true"
info:
  description: %s
`

// publish publishes a new revision of pkg in repo with files (a Kptfile is
// added when files has none) and returns its key.
func (v *env) publish(repo, pkg string, files map[string]string) revision.Key {
	v.t.Helper()
	v.ws++
	ws := fmt.Sprintf("ws%d", v.ws)
	key := revision.Key{Package: pkg, Workspace: ws}
	if _, err := v.e.Latest(v.ctx, repo, pkg); err == nil {
		latest, _ := v.e.Latest(v.ctx, repo, pkg)
		_, err := v.e.Copy(v.ctx, repo, latest.Meta().Key, ws, engine.CopyOptions{})
		require.NoError(v.t, err)
	} else {
		_, err := v.e.Init(v.ctx, repo, key, engine.InitOptions{})
		require.NoError(v.t, err)
	}
	m := maps.Clone(files)
	if _, ok := m[revision.KptfileName]; !ok {
		m[revision.KptfileName] = fmt.Sprintf(baseKptfile, pkg[strings.LastIndex(pkg, "/")+1:], ws)
	}
	_, err := v.e.Update(v.ctx, repo, key, revision.MustFiles(m), engine.UpdateOptions{})
	require.NoError(v.t, err)
	_, err = v.e.Propose(v.ctx, repo, key)
	require.NoError(v.t, err)
	pr, err := v.e.Approve(v.ctx, repo, key)
	require.NoError(v.t, err)
	return pr.Meta().Key
}

// approve proposes and approves the draft k.
func (v *env) approve(k revision.Key) revision.Key {
	v.t.Helper()
	_, err := v.e.Propose(v.ctx, k.Repository, k)
	require.NoError(v.t, err)
	pr, err := v.e.Approve(v.ctx, k.Repository, k)
	require.NoError(v.t, err)
	return pr.Meta().Key
}

// revisions lists the revisions of pkg in repo, without the placeholder.
func (v *env) revisions(repo, pkg string) []revision.PackageRevision {
	v.t.Helper()
	revs, err := v.repos[repo].List(v.ctx, repository.ListOptions{Package: pkg})
	require.NoError(v.t, err)
	var out []revision.PackageRevision
	for _, pr := range revs {
		if !pr.Meta().Key.IsPlaceholder() {
			out = append(out, pr)
		}
	}
	return out
}

// file returns the content of path in revision k.
func (v *env) file(k revision.Key, path string) string {
	v.t.Helper()
	pr, err := v.e.Get(v.ctx, k.Repository, k)
	require.NoError(v.t, err)
	files, err := pr.Files(v.ctx)
	require.NoError(v.t, err)
	b, ok := files.Get(path)
	require.True(v.t, ok, "%s has no %s; it has %v", k, path, files.Paths())
	return string(b)
}

// kptfile returns the Kptfile of revision k.
func (v *env) kptfile(k revision.Key) *revision.Kptfile {
	v.t.Helper()
	kf, err := revision.ParseKptfile([]byte(v.file(k, revision.KptfileName)))
	require.NoError(v.t, err)
	return kf
}

// version returns a token of the state of every repository.
func (v *env) version() string {
	v.t.Helper()
	var b strings.Builder
	for _, n := range []string{"blueprints", "deployments", "other"} {
		r, ok := v.repos[n]
		if !ok {
			continue
		}
		s, err := repository.Version(v.ctx, r)
		require.NoError(v.t, err)
		b.WriteString(s + ";")
	}
	return b.String()
}
