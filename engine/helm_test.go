package engine_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/memrepo"
	"github.com/configasdata/cad/revision"
)

// fakeCharts is a ChartRenderer and ChartLister over one chart, "web" in
// repository "https://charts.test", whose versions render a Deployment
// (image web:<version>, replicas from the values) and, from 2.0.0 on, a
// Service. It records the calls it gets.
type fakeCharts struct {
	versions []string
	err      error  // returned by Render when set
	suffix   string // appended to every digest

	mu      sync.Mutex
	renders []engine.HelmUpstream
	lists   int
}

const chartsRepo = "https://charts.test"

func (f *fakeCharts) Render(_ context.Context, up engine.HelmUpstream) (revision.Files, string, string, error) {
	f.mu.Lock()
	f.renders = append(f.renders, up)
	f.mu.Unlock()
	if f.err != nil {
		return revision.Files{}, "", "", f.err
	}
	if up.Repo != chartsRepo || up.Chart != "web" {
		return revision.Files{}, "", "", fmt.Errorf("chart %s in %s: %w", up.Chart, up.Repo, repository.ErrNotFound)
	}
	version := up.Version
	if version == "" {
		version = f.versions[len(f.versions)-1]
	}
	if !slices.Contains(f.versions, version) {
		return revision.Files{}, "", "", fmt.Errorf("chart web version %q: %w", up.Version, repository.ErrNotFound)
	}
	rel, ns := up.ReleaseName, up.Namespace
	if rel == "" {
		rel = "release-name"
	}
	if ns == "" {
		ns = "default"
	}
	replicas := 1
	if n, ok := up.Values["replicas"].(int); ok {
		replicas = n
	}
	m := map[string]string{
		ns + "/deployment_" + rel + "-web.yaml": fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %s-web
  namespace: %s
spec:
  replicas: %d
  template:
    spec:
      containers:
      - name: web
        image: web:%s
`, rel, ns, replicas, version),
	}
	if version >= "2.0.0" {
		m[ns+"/service_"+rel+"-web.yaml"] = fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata:\n  name: %s-web\n  namespace: %s\nspec:\n  ports:\n  - port: 80\n", rel, ns)
	}
	files, err := revision.NewFiles(toBytes(m))
	return files, version, "digest-" + version + f.suffix, err
}

func (f *fakeCharts) Versions(_ context.Context, up engine.HelmUpstream) ([]string, error) {
	f.mu.Lock()
	f.lists++
	f.mu.Unlock()
	if up.Repo != chartsRepo || up.Chart != "web" {
		return nil, fmt.Errorf("chart %s: %w", up.Chart, repository.ErrNotFound)
	}
	return slices.Clone(f.versions), nil
}

func (f *fakeCharts) calls() []engine.HelmUpstream {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.renders)
}

func toBytes(m map[string]string) map[string][]byte {
	out := make(map[string][]byte, len(m))
	for k, v := range m {
		out[k] = []byte(v)
	}
	return out
}

func fileText(t *testing.T, f revision.Files, p string) string {
	t.Helper()
	b, ok := f.Get(p)
	require.True(t, ok, "no %s in %v", p, f.Paths())
	return string(b)
}

func info(t *testing.T, f revision.Files) revision.Info {
	t.Helper()
	i, err := revision.InfoFromFiles(f)
	require.NoError(t, err)
	return i
}

// Clone from a chart records the chart, the version asked for, the
// release, namespace and values as the upstream (type helm) and the
// resolved version and digest as the lock: in cad's package file, or in a
// Kptfile with CloneOptions.Kptfile. The rendered resources get kpt's
// merge keys.
func TestHelmCloneRecords(t *testing.T) {
	ctx := context.Background()
	charts := &fakeCharts{versions: []string{"1.0.0", "2.0.0"}}
	e := newEngine(t, memrepo.New(repoName, nil), nil)
	vals := map[string]any{"replicas": 2, "extra": map[string]any{"a": "b"}}
	src := engine.CloneSource{Helm: &engine.HelmUpstream{Repo: chartsRepo, Chart: "web", Version: "1.0.0", ReleaseName: "shop", Namespace: "prod",
		Values: vals, Auth: &repository.Credentials{BearerToken: "secret-token"}}}
	pr, err := e.Clone(ctx, repoName, revision.Key{Package: "shop", Workspace: "ws"}, src, engine.CloneOptions{Charts: charts})
	require.NoError(t, err)
	vals["replicas"] = 9 // the clone holds its own copy
	f := files(t, pr)
	assert.False(t, f.Has(revision.KptfileName))
	assert.ElementsMatch(t, []string{revision.PackageFileName, "prod/deployment_shop-web.yaml"}, f.Paths())
	dep := fileText(t, f, "prod/deployment_shop-web.yaml")
	assert.Contains(t, dep, "# kpt-merge: prod/shop-web")
	assert.Contains(t, dep, "internal.kpt.dev/upstream-identifier: 'apps|Deployment|prod|shop-web'")
	assert.Contains(t, dep, "replicas: 2")
	i := info(t, f)
	assert.Equal(t, &revision.Upstream{Type: revision.HelmOrigin, Helm: &revision.Helm{
		Repo: chartsRepo, Chart: "web", Version: "1.0.0", ReleaseName: "shop", Namespace: "prod",
		Values: map[string]any{"replicas": 2, "extra": map[string]any{"a": "b"}}}}, i.Upstream)
	assert.Equal(t, &revision.UpstreamLock{Type: revision.HelmOrigin, Helm: &revision.HelmLock{Repo: chartsRepo, Chart: "web", Version: "1.0.0", Digest: "digest-1.0.0"}}, i.UpstreamLock)
	assert.NotContains(t, fileText(t, f, revision.PackageFileName), "secret-token")
	require.Len(t, charts.calls(), 1)
	assert.Equal(t, "secret-token", charts.calls()[0].Auth.BearerToken)

	// No version: the newest, recorded as the version rendered; a Kptfile
	// when asked for.
	pr, err = e.Clone(ctx, repoName, revision.Key{Package: "latest", Workspace: "ws"},
		engine.CloneSource{Helm: &engine.HelmUpstream{Repo: chartsRepo, Chart: "web"}}, engine.CloneOptions{Charts: charts, Kptfile: true})
	require.NoError(t, err)
	f = files(t, pr)
	kf, err := revision.ParseKptfile([]byte(fileText(t, f, revision.KptfileName)))
	require.NoError(t, err)
	assert.Equal(t, "latest", kf.Metadata.Name)
	assert.Equal(t, "2.0.0", kf.Upstream.Helm.Version)
	assert.Equal(t, "2.0.0", kf.UpstreamLock.Helm.Version)
	assert.Equal(t, revision.HelmOrigin, kf.UpstreamLock.Type)
	assert.True(t, f.Has("default/service_release-name-web.yaml"))
}

// Bad Helm input is refused with a typed error and writes nothing.
func TestHelmCloneErrors(t *testing.T) {
	ctx := context.Background()
	r := memrepo.New(repoName, nil)
	e := newEngine(t, r, nil)
	charts := &fakeCharts{versions: []string{"1.0.0"}}
	key := revision.Key{Package: "shop", Workspace: "ws"}
	web := &engine.HelmUpstream{Repo: chartsRepo, Chart: "web", Version: "1.0.0"}
	for _, tc := range []struct {
		name string
		src  engine.CloneSource
		opts engine.CloneOptions
		want error
	}{
		{"no renderer", engine.CloneSource{Helm: web}, engine.CloneOptions{}, repository.ErrInvalidInput},
		{"no chart", engine.CloneSource{Helm: &engine.HelmUpstream{Repo: chartsRepo}}, engine.CloneOptions{Charts: charts}, repository.ErrInvalidInput},
		{"no repo", engine.CloneSource{Helm: &engine.HelmUpstream{Chart: "web"}}, engine.CloneOptions{Charts: charts}, repository.ErrInvalidInput},
		{"two sources", engine.CloneSource{Helm: web, Git: &engine.GitUpstream{Repo: "x", Ref: "v1"}}, engine.CloneOptions{Charts: charts}, repository.ErrInvalidInput},
		{"unknown chart", engine.CloneSource{Helm: &engine.HelmUpstream{Repo: chartsRepo, Chart: "nope"}}, engine.CloneOptions{Charts: charts}, repository.ErrNotFound},
		{"unknown version", engine.CloneSource{Helm: &engine.HelmUpstream{Repo: chartsRepo, Chart: "web", Version: "7.0.0"}}, engine.CloneOptions{Charts: charts}, repository.ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.Clone(ctx, repoName, key, tc.src, tc.opts)
			require.ErrorIs(t, err, tc.want)
		})
	}
	boom := errors.New("template: web/templates/x.yaml: boom")
	_, err := e.Clone(ctx, repoName, key, engine.CloneSource{Helm: web}, engine.CloneOptions{Charts: &fakeCharts{versions: []string{"1.0.0"}, err: boom}})
	require.ErrorIs(t, err, boom)
	all, err := r.List(ctx, repository.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, all, "a failed clone wrote something")
}

// cloneEditPublish clones web 1.0.0 with values replicas: 2, labels the
// Deployment locally and publishes it.
func cloneEditPublish(t *testing.T, e *engine.Engine, charts *fakeCharts, pkg string) revision.PackageRevision {
	t.Helper()
	ctx := context.Background()
	key := revision.Key{Package: pkg, Workspace: "v1"}
	pr, err := e.Clone(ctx, repoName, key, engine.CloneSource{Helm: &engine.HelmUpstream{Repo: chartsRepo, Chart: "web", Version: "1.0.0",
		ReleaseName: "shop", Values: map[string]any{"replicas": 2}}}, engine.CloneOptions{Charts: charts})
	require.NoError(t, err)
	f := files(t, pr)
	p := "default/deployment_shop-web.yaml"
	edited := strings.Replace(fileText(t, f, p), "  namespace: default\n", "  namespace: default\n  labels:\n    team: blue\n", 1)
	f, err = f.With(p, []byte(edited))
	require.NoError(t, err)
	_, err = e.Update(ctx, repoName, key, f, engine.UpdateOptions{})
	require.NoError(t, err)
	return publish(t, e, key)
}

// Upgrade to a newer chart version renders the locked version with the
// recorded values as the original and the new version as the updated
// upstream; the local edit survives, the chart's change is applied and the
// lock moves. Another upgrade changes only the values.
func TestHelmUpgrade(t *testing.T) {
	ctx := context.Background()
	charts := &fakeCharts{versions: []string{"1.0.0", "2.0.0"}}
	e := newEngine(t, memrepo.New(repoName, nil), nil)
	v1 := cloneEditPublish(t, e, charts, "shop")
	before := len(charts.calls())

	pr, err := e.Upgrade(ctx, repoName, v1.Meta().Key, engine.Ref{}, engine.Ref{Helm: &engine.HelmUpstream{Version: "2.0.0", Auth: &repository.Credentials{BearerToken: "tok"}}}, "v2",
		engine.UpgradeOptions{Charts: charts})
	require.NoError(t, err)
	calls := charts.calls()[before:]
	require.Len(t, calls, 2)
	want := engine.HelmUpstream{Repo: chartsRepo, Chart: "web", Version: "1.0.0", ReleaseName: "shop", Values: map[string]any{"replicas": 2}, Auth: &repository.Credentials{BearerToken: "tok"}}
	assert.Equal(t, want, calls[0], "original")
	want.Version = "2.0.0"
	assert.Equal(t, want, calls[1], "updated")
	f := files(t, pr)
	dep := fileText(t, f, "default/deployment_shop-web.yaml")
	assert.Contains(t, dep, "team: blue")
	assert.Contains(t, dep, "image: web:2.0.0")
	assert.Contains(t, dep, "replicas: 2")
	assert.True(t, f.Has("default/service_shop-web.yaml"))
	i := info(t, f)
	assert.Equal(t, &revision.HelmLock{Repo: chartsRepo, Chart: "web", Version: "2.0.0", Digest: "digest-2.0.0"}, i.UpstreamLock.Helm)
	assert.Equal(t, "2.0.0", i.Upstream.Helm.Version)
	assert.Equal(t, map[string]any{"replicas": 2}, i.Upstream.Helm.Values)
	v2 := publish(t, e, pr.Meta().Key)

	// New values at the locked version.
	before = len(charts.calls())
	pr, err = e.Upgrade(ctx, repoName, v2.Meta().Key, engine.Ref{}, engine.Ref{Helm: &engine.HelmUpstream{Values: map[string]any{"replicas": 5}}}, "v3",
		engine.UpgradeOptions{Charts: charts})
	require.NoError(t, err)
	calls = charts.calls()[before:]
	require.Len(t, calls, 2)
	assert.Equal(t, "2.0.0", calls[0].Version)
	assert.Equal(t, map[string]any{"replicas": 2}, calls[0].Values)
	assert.Equal(t, "2.0.0", calls[1].Version)
	assert.Equal(t, map[string]any{"replicas": 5}, calls[1].Values)
	f = files(t, pr)
	dep = fileText(t, f, "default/deployment_shop-web.yaml")
	assert.Contains(t, dep, "replicas: 5")
	assert.Contains(t, dep, "team: blue")
	assert.Equal(t, map[string]any{"replicas": 5}, info(t, f).Upstream.Helm.Values)
}

// Upgrade errors for Helm upstreams are typed and write nothing.
func TestHelmUpgradeErrors(t *testing.T) {
	ctx := context.Background()
	r := memrepo.New(repoName, nil)
	e := newEngine(t, r, nil)
	charts := &fakeCharts{versions: []string{"1.0.0", "2.0.0"}}
	v1 := cloneEditPublish(t, e, charts, "shop")

	// A package without a Helm lock.
	plain := revision.Key{Package: "plain", Workspace: "ws"}
	_, err := e.Init(ctx, repoName, plain, engine.InitOptions{})
	require.NoError(t, err)
	plainPR := publish(t, e, plain)

	count := func() int {
		all, err := r.List(ctx, repository.ListOptions{})
		require.NoError(t, err)
		return len(all)
	}
	n := count()
	to2 := engine.Ref{Helm: &engine.HelmUpstream{Version: "2.0.0"}}
	for _, tc := range []struct {
		name     string
		local    revision.Key
		old, new engine.Ref
		opts     engine.UpgradeOptions
		want     error
	}{
		{"no renderer", v1.Meta().Key, engine.Ref{}, to2, engine.UpgradeOptions{}, repository.ErrInvalidInput},
		{"unknown version", v1.Meta().Key, engine.Ref{}, engine.Ref{Helm: &engine.HelmUpstream{Version: "9.0.0"}}, engine.UpgradeOptions{Charts: charts}, repository.ErrNotFound},
		{"no lock", plainPR.Meta().Key, engine.Ref{}, to2, engine.UpgradeOptions{Charts: charts}, repository.ErrInvalidInput},
		{"no lock, no repo", plainPR.Meta().Key, engine.Ref{Helm: &engine.HelmUpstream{Version: "1.0.0"}}, to2, engine.UpgradeOptions{Charts: charts}, repository.ErrInvalidInput},
		{"git and helm", v1.Meta().Key, engine.Ref{}, engine.Ref{Helm: to2.Helm, Git: &engine.GitUpstream{Repo: "x", Ref: "v1"}}, engine.UpgradeOptions{Charts: charts}, repository.ErrInvalidInput},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.Upgrade(ctx, repoName, tc.local, tc.old, tc.new, "up", tc.opts)
			require.ErrorIs(t, err, tc.want)
			assert.Equal(t, n, count(), "a failed upgrade wrote something")
		})
	}
}

// DiscoverHelmUpgrades reports, for the latest revision of each package
// locked to a chart, the newer versions oldest first (no prereleases for a
// release lock), lists each chart once, ignores other packages, and
// reports nothing newer once up to date.
func TestDiscoverHelmUpgrades(t *testing.T) {
	ctx := context.Background()
	charts := &fakeCharts{versions: []string{"1.0.0", "2.0.0"}}
	e := newEngine(t, memrepo.New(repoName, nil), nil)
	_, err := e.DiscoverHelmUpgrades(ctx, nil, nil)
	require.ErrorIs(t, err, repository.ErrInvalidInput)
	_, err = e.DiscoverHelmUpgrades(ctx, []string{"nope"}, charts)
	require.ErrorIs(t, err, repository.ErrNotFound)

	cloneEditPublish(t, e, charts, "a")
	cloneEditPublish(t, e, charts, "b")
	_, err = e.Init(ctx, repoName, revision.Key{Package: "plain", Workspace: "ws"}, engine.InitOptions{})
	require.NoError(t, err)
	publish(t, e, revision.Key{Package: "plain", Workspace: "ws"})

	charts.versions = []string{"1.0.0", "2.0.0", "not-semver", "1.5.0", "3.0.0-rc.1", "0.9.0", "3.0.0"}
	cands, err := e.DiscoverHelmUpgrades(ctx, nil, charts)
	require.NoError(t, err)
	require.Len(t, cands, 2)
	assert.Equal(t, 1, charts.lists, "one listing per chart")
	assert.Equal(t, "a", cands[0].Downstream.Package)
	assert.Equal(t, "b", cands[1].Downstream.Package)
	assert.Equal(t, []string{"1.5.0", "2.0.0", "3.0.0"}, cands[0].Newer)
	assert.Equal(t, engine.HelmUpstream{Repo: chartsRepo, Chart: "web", Version: "1.0.0", ReleaseName: "shop", Values: map[string]any{"replicas": 2}}, cands[0].Upstream)
	assert.Equal(t, "digest-1.0.0", cands[0].Digest)

	// Upgrade a to the newest; it is then up to date.
	newest := cands[0].Newer[len(cands[0].Newer)-1]
	pr, err := e.Upgrade(ctx, repoName, cands[0].Downstream, engine.Ref{}, engine.Ref{Helm: &engine.HelmUpstream{Version: newest}}, "up", engine.UpgradeOptions{Charts: charts})
	require.NoError(t, err)
	publish(t, e, pr.Meta().Key)
	cands, err = e.DiscoverHelmUpgrades(ctx, []string{repoName}, charts)
	require.NoError(t, err)
	require.Len(t, cands, 2)
	assert.Equal(t, "3.0.0", cands[0].Upstream.Version)
	assert.Empty(t, cands[0].Newer)
	assert.Len(t, cands[1].Newer, 3)

	// The lister's error is returned.
	failing := &failingLister{err: errors.New("index.yaml: 503")}
	_, err = e.DiscoverHelmUpgrades(ctx, nil, failing)
	require.ErrorIs(t, err, failing.err)
}

type failingLister struct{ err error }

func (f *failingLister) Versions(context.Context, engine.HelmUpstream) ([]string, error) {
	return nil, f.err
}

// A prerelease lock counts newer prereleases; a lock that is not a
// semantic version has nothing newer.
func TestDiscoverHelmPrereleases(t *testing.T) {
	ctx := context.Background()
	charts := &fakeCharts{versions: []string{"2.0.0-rc.1"}}
	e := newEngine(t, memrepo.New(repoName, nil), nil)
	pr, err := e.Clone(ctx, repoName, revision.Key{Package: "pre", Workspace: "ws"},
		engine.CloneSource{Helm: &engine.HelmUpstream{Repo: chartsRepo, Chart: "web", Version: "2.0.0-rc.1"}}, engine.CloneOptions{Charts: charts})
	require.NoError(t, err)
	publish(t, e, pr.Meta().Key)
	charts.versions = []string{"2.0.0-rc.1", "2.0.0-rc.2", "1.9.0", "2.0.0", "2.1.0-beta.1", "2.0.0-rc.10"}
	cands, err := e.DiscoverHelmUpgrades(ctx, nil, charts)
	require.NoError(t, err)
	require.Len(t, cands, 1)
	assert.Equal(t, []string{"2.0.0-rc.2", "2.0.0-rc.10", "2.0.0", "2.1.0-beta.1"}, cands[0].Newer)
}

// A chart republished under the locked version is still upgraded from,
// with a warning in the Engine's log.
func TestHelmUpgradeRepublishedChart(t *testing.T) {
	ctx := context.Background()
	var log strings.Builder
	e, err := engine.New(&engine.Options{Repositories: engine.Repos{repoName: memrepo.New(repoName, nil)},
		Logger: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	require.NoError(t, err)
	charts := &fakeCharts{versions: []string{"1.0.0", "2.0.0"}}
	v1 := cloneEditPublish(t, e, charts, "shop")
	_, err = e.Upgrade(ctx, repoName, v1.Meta().Key, engine.Ref{}, engine.Ref{Helm: &engine.HelmUpstream{Version: "2.0.0"}}, "v2", engine.UpgradeOptions{Charts: charts})
	require.NoError(t, err)
	assert.Empty(t, log.String())
	charts.suffix = "-republished"
	_, err = e.Upgrade(ctx, repoName, v1.Meta().Key, engine.Ref{}, engine.Ref{Helm: &engine.HelmUpstream{Version: "2.0.0"}}, "v2b", engine.UpgradeOptions{Charts: charts})
	require.NoError(t, err)
	assert.Contains(t, log.String(), "level=WARN")
	assert.Contains(t, log.String(), "lockedDigest=digest-1.0.0 digest=digest-1.0.0-republished")
}

// UpgradeDraft moves a draft cloned from a chart (with a Kptfile) to
// another chart version in place, keeping its edits; the Kptfile's
// records follow.
func TestHelmUpgradeDraftWithKptfile(t *testing.T) {
	ctx := context.Background()
	charts := &fakeCharts{versions: []string{"1.0.0", "2.0.0"}}
	e := newEngine(t, memrepo.New(repoName, nil), nil)
	key := revision.Key{Package: "shop", Workspace: "ws"}
	pr, err := e.Clone(ctx, repoName, key, engine.CloneSource{Helm: &engine.HelmUpstream{Repo: chartsRepo, Chart: "web", Version: "1.0.0",
		Values: map[string]any{"replicas": 3}}}, engine.CloneOptions{Charts: charts, Kptfile: true, Strategy: revision.ResourceMerge})
	require.NoError(t, err)
	p := "default/deployment_release-name-web.yaml"
	f, err := files(t, pr).With(p, []byte(strings.Replace(fileText(t, files(t, pr), p), "  namespace: default\n", "  namespace: default\n  labels:\n    team: red\n", 1)))
	require.NoError(t, err)
	_, err = e.Update(ctx, repoName, key, f, engine.UpdateOptions{})
	require.NoError(t, err)

	pr, err = e.UpgradeDraft(ctx, repoName, key, engine.Ref{}, engine.Ref{Helm: &engine.HelmUpstream{Version: "2.0.0"}}, engine.UpgradeOptions{Charts: charts})
	require.NoError(t, err)
	f = files(t, pr)
	assert.False(t, f.Has(revision.PackageFileName))
	dep := fileText(t, f, p)
	assert.Contains(t, dep, "team: red")
	assert.Contains(t, dep, "image: web:2.0.0")
	assert.Contains(t, dep, "replicas: 3")
	kf, err := revision.ParseKptfile([]byte(fileText(t, f, revision.KptfileName)))
	require.NoError(t, err)
	assert.Equal(t, "shop", kf.Metadata.Name)
	assert.Equal(t, "2.0.0", kf.UpstreamLock.Helm.Version)
	assert.Equal(t, map[string]any{"replicas": 3}, kf.Upstream.Helm.Values)
	assert.Equal(t, revision.ResourceMerge, kf.Upstream.UpdateStrategy)
}
