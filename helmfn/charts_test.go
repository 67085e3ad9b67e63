package helmfn_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v4/pkg/registry"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/helmfn"
	"github.com/configasdata/cad/internal/testregistry"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/memrepo"
	"github.com/configasdata/cad/revision"
)

// webChart is chart "web" at version: a Deployment and a ConfigMap from
// values, and a test hook. 2.0.0 adds a Service and a version label;
// 3.0.0 moves the container port.
func webChart(version string) map[string]string {
	port := "8080"
	if version >= "3.0.0" {
		port = "9090"
	}
	label := ""
	if version >= "2.0.0" {
		label = "\n    app.kubernetes.io/version: {{ .Chart.Version | quote }}"
	}
	files := map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: web\nversion: " + version + "\n",
		"values.yaml": "replicas: 1\nmessage: hi\n",
		"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-web
  namespace: {{ .Release.Namespace }}
  labels:
    app: web` + label + `
spec:
  replicas: {{ .Values.replicas }}
  template:
    spec:
      containers:
      - name: web
        image: web:{{ .Chart.Version }}
        ports:
        - containerPort: ` + port + `
`,
		"templates/config.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-web
  namespace: {{ .Release.Namespace }}
data:
  message: {{ required "message is required" .Values.message | quote }}
`,
		"templates/test.yaml": `apiVersion: v1
kind: Pod
metadata:
  name: {{ .Release.Name }}-test
  annotations:
    helm.sh/hook: test
spec:
  containers:
  - name: t
    image: busybox
`,
	}
	if version >= "2.0.0" {
		files["templates/service.yaml"] = `apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}-web
  namespace: {{ .Release.Namespace }}
spec:
  ports:
  - port: 80
`
	}
	return files
}

// webRepo is a chart repository served on loopback: web 1.0.0, 2.0.0 and
// 3.0.0 with their digests in index.yaml, and "broken" 0.1.0, whose
// template fails. versions limits the web versions listed (all when
// nil); the digests of the archives are returned by version.
type webRepo struct {
	srv      *httptest.Server
	digests  map[string]string
	versions []string
}

func startWebRepo(t testing.TB, user, pass string) *webRepo {
	t.Helper()
	wr := &webRepo{digests: map[string]string{}, versions: []string{"1.0.0", "2.0.0", "3.0.0"}}
	blobs := map[string][]byte{}
	for _, v := range wr.versions {
		b := tgz(t, "web", webChart(v))
		sum := sha256.Sum256(b)
		wr.digests[v] = hex.EncodeToString(sum[:])
		blobs["/charts/web-"+v+".tgz"] = b
	}
	blobs["/charts/broken-0.1.0.tgz"] = tgz(t, "broken", map[string]string{
		"Chart.yaml":       "apiVersion: v2\nname: broken\nversion: 0.1.0\n",
		"templates/x.yaml": "{{ fail \"broken on purpose\" }}\n",
	})
	wr.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, _ := r.BasicAuth(); user != "" && (u != user || p != pass) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if r.URL.Path == "/index.yaml" {
			var b strings.Builder
			b.WriteString("apiVersion: v1\nentries:\n  web:\n")
			for _, v := range wr.versions {
				// The digest is given for all but 1.0.0, whose is computed.
				d := ""
				if v != "1.0.0" {
					d = "\n    digest: " + wr.digests[v]
				}
				fmt.Fprintf(&b, "  - apiVersion: v2\n    name: web\n    version: %s\n    urls: [charts/web-%s.tgz]%s\n", v, v, d)
			}
			b.WriteString("  broken:\n  - apiVersion: v2\n    name: broken\n    version: 0.1.0\n    urls: [charts/broken-0.1.0.tgz]\n")
			_, _ = w.Write([]byte(b.String()))
			return
		}
		if blob, ok := blobs[r.URL.Path]; ok {
			_, _ = w.Write(blob)
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(wr.srv.Close)
	return wr
}

const deployments = "deployments"

func newTestEngine(t testing.TB) (*engine.Engine, *memrepo.Repository) {
	t.Helper()
	r := memrepo.New(deployments, nil)
	e, err := engine.New(&engine.Options{Repositories: engine.Repos{deployments: r}})
	require.NoError(t, err)
	return e, r
}

func publishDraft(t testing.TB, e *engine.Engine, key revision.Key) revision.PackageRevision {
	t.Helper()
	ctx := context.Background()
	_, err := e.Propose(ctx, deployments, key)
	require.NoError(t, err)
	pr, err := e.Approve(ctx, deployments, key)
	require.NoError(t, err)
	return pr
}

func filesOf(t testing.TB, pr revision.PackageRevision) revision.Files {
	t.Helper()
	f, err := pr.Files(context.Background())
	require.NoError(t, err)
	return f
}

func text(t testing.TB, f revision.Files, p string) string {
	t.Helper()
	b, ok := f.Get(p)
	require.True(t, ok, "no %s in %v", p, f.Paths())
	return string(b)
}

func infoOf(t testing.TB, f revision.Files) revision.Info {
	t.Helper()
	i, err := revision.InfoFromFiles(f)
	require.NoError(t, err)
	return i
}

// setFile returns f with p replaced by edit(p's text).
func setFile(t testing.TB, f revision.Files, p string, edit func(string) string) revision.Files {
	t.Helper()
	out, err := f.With(p, []byte(edit(text(t, f, p))))
	require.NoError(t, err)
	return out
}

// The whole life of a package cloned from a chart in a chart repository
// served on loopback: clone web 1.0.0 with values, edit a rendered
// resource locally, publish; discovery lists 2.0.0 and 3.0.0; upgrade to
// 2.0.0 keeps the edit and applies the chart's changes; an upgrade of the
// values alone; an upgrade to a constraint; then nothing newer.
func TestChartsCloneUpgradeDiscover(t *testing.T) {
	ctx := context.Background()
	wr := startWebRepo(t, "", "")
	charts := helmfn.NewCharts(nil)
	e, _ := newTestEngine(t)

	key := revision.Key{Package: "shop", Workspace: "v1"}
	pr, err := e.Clone(ctx, deployments, key, engine.CloneSource{Helm: &engine.HelmUpstream{Repo: wr.srv.URL, Chart: "web", Version: "1.0.0",
		ReleaseName: "shop", Namespace: "prod", Values: map[string]any{"replicas": 2, "message": "hello"}}}, engine.CloneOptions{Charts: charts})
	require.NoError(t, err)
	f := filesOf(t, pr)
	assert.ElementsMatch(t, []string{revision.PackageFileName, "prod/deployment_shop-web.yaml", "prod/configmap_shop-web.yaml"}, f.Paths(),
		"one file per resource at kpt's default path, no test hook")
	dep := text(t, f, "prod/deployment_shop-web.yaml")
	assert.True(t, strings.HasPrefix(dep, "# Source: web/templates/deployment.yaml\n"), dep)
	assert.Contains(t, dep, "replicas: 2")
	assert.Contains(t, dep, "image: web:1.0.0")
	assert.Contains(t, dep, "# kpt-merge: prod/shop-web")
	assert.NotContains(t, dep, "config.kubernetes.io/path")
	assert.NotContains(t, dep, "annotations: {}")
	assert.Contains(t, text(t, f, "prod/configmap_shop-web.yaml"), `message: "hello"`)
	i := infoOf(t, f)
	assert.Equal(t, &revision.Helm{Repo: wr.srv.URL, Chart: "web", Version: "1.0.0", ReleaseName: "shop", Namespace: "prod",
		Values: map[string]any{"replicas": 2, "message": "hello"}}, i.Upstream.Helm)
	assert.Equal(t, &revision.HelmLock{Repo: wr.srv.URL, Chart: "web", Version: "1.0.0", Digest: wr.digests["1.0.0"]}, i.UpstreamLock.Helm,
		"the archive's digest, computed as the index has none")

	// A local edit of a rendered resource.
	f = setFile(t, f, "prod/deployment_shop-web.yaml", func(s string) string {
		return strings.Replace(s, "    app: web\n", "    app: web\n    team: blue\n", 1)
	})
	_, err = e.Update(ctx, deployments, key, f, engine.UpdateOptions{})
	require.NoError(t, err)
	v1 := publishDraft(t, e, key)

	cands, err := e.DiscoverHelmUpgrades(ctx, nil, charts)
	require.NoError(t, err)
	require.Len(t, cands, 1)
	assert.Equal(t, v1.Meta().Key, cands[0].Downstream)
	assert.Equal(t, []string{"2.0.0", "3.0.0"}, cands[0].Newer)
	assert.Equal(t, "1.0.0", cands[0].Upstream.Version)

	// Upgrade to 2.0.0: the edit stays, the chart's changes come in.
	pr, err = e.Upgrade(ctx, deployments, v1.Meta().Key, engine.Ref{}, engine.Ref{Helm: &engine.HelmUpstream{Version: cands[0].Newer[0]}}, "v2",
		engine.UpgradeOptions{Charts: charts})
	require.NoError(t, err)
	f = filesOf(t, pr)
	dep = text(t, f, "prod/deployment_shop-web.yaml")
	assert.Contains(t, dep, "team: blue", "the local edit survives")
	assert.Contains(t, dep, "image: web:2.0.0")
	assert.Contains(t, dep, `app.kubernetes.io/version: "2.0.0"`)
	assert.Contains(t, dep, "replicas: 2")
	assert.True(t, f.Has("prod/service_shop-web.yaml"), "the new resource is added")
	i = infoOf(t, f)
	assert.Equal(t, &revision.HelmLock{Repo: wr.srv.URL, Chart: "web", Version: "2.0.0", Digest: wr.digests["2.0.0"]}, i.UpstreamLock.Helm)
	assert.Equal(t, map[string]any{"replicas": 2, "message": "hello"}, i.Upstream.Helm.Values)
	v2 := publishDraft(t, e, pr.Meta().Key)

	// New values, same version.
	pr, err = e.Upgrade(ctx, deployments, v2.Meta().Key, engine.Ref{}, engine.Ref{Helm: &engine.HelmUpstream{Values: map[string]any{"replicas": 4, "message": "hello"}}}, "v3",
		engine.UpgradeOptions{Charts: charts})
	require.NoError(t, err)
	f = filesOf(t, pr)
	dep = text(t, f, "prod/deployment_shop-web.yaml")
	assert.Contains(t, dep, "replicas: 4")
	assert.Contains(t, dep, "team: blue")
	assert.Contains(t, dep, "image: web:2.0.0")
	assert.Equal(t, "2.0.0", infoOf(t, f).UpstreamLock.Helm.Version)
	v3 := publishDraft(t, e, pr.Meta().Key)

	// A constraint: the newest 3.x.
	pr, err = e.Upgrade(ctx, deployments, v3.Meta().Key, engine.Ref{}, engine.Ref{Helm: &engine.HelmUpstream{Version: "^3"}}, "v4",
		engine.UpgradeOptions{Charts: charts})
	require.NoError(t, err)
	f = filesOf(t, pr)
	dep = text(t, f, "prod/deployment_shop-web.yaml")
	assert.Contains(t, dep, "containerPort: 9090")
	assert.Contains(t, dep, "replicas: 4")
	assert.Contains(t, dep, "team: blue")
	i = infoOf(t, f)
	assert.Equal(t, "^3", i.Upstream.Helm.Version)
	assert.Equal(t, "3.0.0", i.UpstreamLock.Helm.Version)
	publishDraft(t, e, pr.Meta().Key)

	cands, err = e.DiscoverHelmUpgrades(ctx, nil, charts)
	require.NoError(t, err)
	require.Len(t, cands, 1)
	assert.Empty(t, cands[0].Newer, "up to date")
}

// Bad input through Engine.Clone: every failure is typed and nothing is
// written.
func TestChartsCloneErrors(t *testing.T) {
	ctx := context.Background()
	wr := startWebRepo(t, "", "")
	private := startWebRepo(t, "user", "s3cret")
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	charts := helmfn.NewCharts(nil)
	e, r := newTestEngine(t)
	for _, tc := range []struct {
		name    string
		up      engine.HelmUpstream
		charts  engine.ChartRenderer
		want    error
		message string
	}{
		{"unknown chart", engine.HelmUpstream{Repo: wr.srv.URL, Chart: "nope"}, charts, repository.ErrNotFound, "chart nope not found"},
		{"unknown version", engine.HelmUpstream{Repo: wr.srv.URL, Chart: "web", Version: "9.9.9"}, charts, repository.ErrNotFound, "web version 9.9.9 not found"},
		{"no version fits", engine.HelmUpstream{Repo: wr.srv.URL, Chart: "web", Version: ">=4"}, charts, repository.ErrNotFound, "not found"},
		{"not a chart repository", engine.HelmUpstream{Repo: wr.srv.URL + "/nothing", Chart: "web"}, charts, repository.ErrNotFound, "404"},
		{"unreachable repository", engine.HelmUpstream{Repo: gone.URL, Chart: "web"}, charts, repository.ErrUnavailable, "connection refused"},
		{"refused credentials", engine.HelmUpstream{Repo: private.srv.URL, Chart: "web", Auth: &repository.Credentials{Username: "user", Password: "wrong"}}, charts, repository.ErrUnavailable, "401"},
		{"template error", engine.HelmUpstream{Repo: wr.srv.URL, Chart: "broken"}, charts, repository.ErrInvalidInput, "broken on purpose"},
		{"required value", engine.HelmUpstream{Repo: wr.srv.URL, Chart: "web", Values: map[string]any{"message": nil}}, charts, repository.ErrInvalidInput, "message is required"},
		{"auth of another type", engine.HelmUpstream{Repo: wr.srv.URL, Chart: "web", Auth: &repository.Credentials{BearerToken: "t0ken"}}, charts, repository.ErrInvalidInput, "user name and password"},
		{"not a URL", engine.HelmUpstream{Repo: "charts.example.com", Chart: "web"}, charts, repository.ErrInvalidInput, "not an http(s):// or oci:// URL"},
		{"no renderer", engine.HelmUpstream{Repo: wr.srv.URL, Chart: "web"}, nil, repository.ErrInvalidInput, "ChartRenderer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := tc.up
			_, err := e.Clone(ctx, deployments, revision.Key{Package: "app", Workspace: "ws"}, engine.CloneSource{Helm: &up}, engine.CloneOptions{Charts: tc.charts})
			require.ErrorIs(t, err, tc.want)
			assert.Contains(t, err.Error(), tc.message)
			assert.NotContains(t, err.Error(), "s3cret")
			if tc.charts != nil {
				var ce *helmfn.ChartError
				require.ErrorAs(t, err, &ce)
				assert.Equal(t, up.Chart, ce.Chart)
			}
			all, err := r.List(ctx, repository.ListOptions{})
			require.NoError(t, err)
			assert.Empty(t, all, "a failed clone wrote something")
		})
	}

	// The right credentials work, and Versions uses them too.
	pr, err := e.Clone(ctx, deployments, revision.Key{Package: "app", Workspace: "ws"}, engine.CloneSource{Helm: &engine.HelmUpstream{
		Repo: private.srv.URL, Chart: "web", Version: "~1", Auth: &repository.Credentials{Username: "user", Password: "s3cret"}}}, engine.CloneOptions{Charts: charts})
	require.NoError(t, err)
	assert.NotContains(t, text(t, filesOf(t, pr), revision.PackageFileName), "s3cret")
	vs, err := charts.Versions(ctx, engine.HelmUpstream{Repo: private.srv.URL, Chart: "web", Auth: &repository.Credentials{Username: "user", Password: "s3cret"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"3.0.0", "2.0.0", "1.0.0"}, vs)
	_, err = charts.Versions(ctx, engine.HelmUpstream{Repo: wr.srv.URL, Chart: "nope"})
	require.ErrorIs(t, err, repository.ErrNotFound)
	_, err = charts.Versions(ctx, engine.HelmUpstream{Repo: private.srv.URL, Chart: "web"})
	require.ErrorIs(t, err, repository.ErrUnavailable)

	// A cancelled context is the context's error.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, _, _, err = charts.Render(cctx, engine.HelmUpstream{Repo: wr.srv.URL, Chart: "web"})
	require.True(t, errors.Is(err, context.Canceled), "%v", err)
}

// The same clone, upgrade and discovery from oci:// on the real CNCF
// distribution registry, charts pushed with Helm's client; the lock's
// digest is the manifest digest the push reported.
func TestChartsFromOCIRegistry(t *testing.T) {
	ctx := context.Background()
	host := testregistry.Start(t).Host
	c, err := registry.NewClient(registry.ClientOptPlainHTTP(), registry.ClientOptCredentialsFile(filepath.Join(t.TempDir(), "config.json")))
	require.NoError(t, err)
	digests := map[string]string{}
	for _, v := range []string{"1.0.0", "2.0.0"} {
		res, err := c.Push(tgz(t, "web", webChart(v)), host+"/charts/web:"+v)
		require.NoError(t, err)
		digests[v] = res.Manifest.Digest
	}
	repo := "oci://" + host + "/charts"
	charts := helmfn.NewCharts(&helmfn.Options{PlainHTTP: true})
	e, r := newTestEngine(t)

	key := revision.Key{Package: "shop", Workspace: "v1"}
	pr, err := e.Clone(ctx, deployments, key, engine.CloneSource{Helm: &engine.HelmUpstream{Repo: repo, Chart: "web", Version: "1.0.0",
		ReleaseName: "shop", Values: map[string]any{"replicas": 3}}}, engine.CloneOptions{Charts: charts})
	require.NoError(t, err)
	f := filesOf(t, pr)
	assert.Contains(t, text(t, f, "default/deployment_shop-web.yaml"), "replicas: 3")
	lock := infoOf(t, f).UpstreamLock.Helm
	assert.Equal(t, &revision.HelmLock{Repo: repo, Chart: "web", Version: "1.0.0", Digest: digests["1.0.0"]}, lock)
	assert.True(t, strings.HasPrefix(lock.Digest, "sha256:"))
	f = setFile(t, f, "default/deployment_shop-web.yaml", func(s string) string {
		return strings.Replace(s, "    app: web\n", "    app: web\n    team: blue\n", 1)
	})
	_, err = e.Update(ctx, deployments, key, f, engine.UpdateOptions{})
	require.NoError(t, err)
	v1 := publishDraft(t, e, key)

	cands, err := e.DiscoverHelmUpgrades(ctx, nil, charts)
	require.NoError(t, err)
	require.Len(t, cands, 1)
	assert.Equal(t, []string{"2.0.0"}, cands[0].Newer)

	pr, err = e.Upgrade(ctx, deployments, v1.Meta().Key, engine.Ref{}, engine.Ref{Helm: &engine.HelmUpstream{Version: "2.0.0"}}, "v2", engine.UpgradeOptions{Charts: charts})
	require.NoError(t, err)
	f = filesOf(t, pr)
	dep := text(t, f, "default/deployment_shop-web.yaml")
	assert.Contains(t, dep, "team: blue")
	assert.Contains(t, dep, "image: web:2.0.0")
	assert.True(t, f.Has("default/service_shop-web.yaml"))
	assert.Equal(t, digests["2.0.0"], infoOf(t, f).UpstreamLock.Helm.Digest)

	// Unknown version and chart in the registry.
	n, err := r.List(ctx, repository.ListOptions{})
	require.NoError(t, err)
	_, err = e.Clone(ctx, deployments, revision.Key{Package: "other", Workspace: "ws"}, engine.CloneSource{Helm: &engine.HelmUpstream{Repo: repo, Chart: "web", Version: "9.9.9"}},
		engine.CloneOptions{Charts: charts})
	require.ErrorIs(t, err, repository.ErrNotFound)
	_, err = e.Clone(ctx, deployments, revision.Key{Package: "other", Workspace: "ws"}, engine.CloneSource{Helm: &engine.HelmUpstream{Repo: repo, Chart: "nope"}},
		engine.CloneOptions{Charts: charts})
	require.ErrorIs(t, err, repository.ErrNotFound)
	_, err = charts.Versions(ctx, engine.HelmUpstream{Repo: repo, Chart: "nope"})
	require.ErrorIs(t, err, repository.ErrNotFound)
	m, err := r.List(ctx, repository.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, m, len(n), "a failed clone wrote something")
}
