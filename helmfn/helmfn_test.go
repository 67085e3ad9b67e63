package helmfn_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/configasdata/cad/fnruntime"
	"github.com/configasdata/cad/helmfn"
	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/revision"
)

// helloChart is a tiny chart: a ConfigMap from values, a test hook Pod.
func helloChart(version string) map[string]string {
	return map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: hello\nversion: " + version + "\n",
		"values.yaml": "replicas: 1\nmessage: hi\nextra:\n  a: one\n  b: two\n",
		"templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-hello
  namespace: {{ .Release.Namespace }}
data:
  message: {{ required "message is required" .Values.message | quote }}
  replicas: {{ .Values.replicas | quote }}
  version: {{ .Chart.Version | quote }}
  extra: {{ toJson .Values.extra | quote }}
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
}

// tgz packs a chart as helm package does: files under name/.
func tgz(t testing.TB, name string, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: name + "/" + p, Mode: 0o644, Size: int64(len(files[p])), Typeflag: tar.TypeReg}))
		_, err := tw.Write([]byte(files[p]))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

// chartRepo serves a chart repository on loopback: index.yaml and the
// archives of hello 0.1.0 and 0.2.0.
func chartRepo(t testing.TB) *httptest.Server {
	t.Helper()
	return chartRepoWithAuth(t, "", "")
}

// chartRepoWithAuth is chartRepo requiring basic auth when user is set.
func chartRepoWithAuth(t testing.TB, user, pass string) *httptest.Server {
	t.Helper()
	blobs := map[string][]byte{
		"/hello-0.1.0.tgz": tgz(t, "hello", helloChart("0.1.0")),
		"/hello-0.2.0.tgz": tgz(t, "hello", helloChart("0.2.0")),
		"/index.yaml": []byte(`apiVersion: v1
entries:
  hello:
  - apiVersion: v2
    name: hello
    version: 0.1.0
    urls: [hello-0.1.0.tgz]
  - apiVersion: v2
    name: hello
    version: 0.2.0
    urls: [hello-0.2.0.tgz]
`),
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, _ := r.BasicAuth(); user != "" && (u != user || p != pass) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		b, ok := blobs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return srv
}

const existing = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: keep\n"

// run runs the function with config on a list holding one resource.
func run(t *testing.T, opts *helmfn.Options, config string) (*pipeline.ResourceList, error) {
	t.Helper()
	rl := &pipeline.ResourceList{Items: []*yaml.RNode{yaml.MustParse(existing)}, FunctionConfig: yaml.MustParse(config)}
	return rl, helmfn.New(opts).Run(context.Background(), rl)
}

// find returns the item of kind and name.
func find(t *testing.T, rl *pipeline.ResourceList, kind, name string) *yaml.RNode {
	t.Helper()
	for _, it := range rl.Items {
		if it.GetKind() == kind && it.GetName() == name {
			return it
		}
	}
	t.Fatalf("no %s %s in %d items", kind, name, len(rl.Items))
	return nil
}

func data(t *testing.T, n *yaml.RNode) map[string]string {
	t.Helper()
	return n.GetDataMap()
}

func TestRenderFromRepositoryWithInlineValues(t *testing.T) {
	srv := chartRepo(t)
	rl, err := run(t, nil, `apiVersion: fn.kpt.dev/v1alpha1
kind: RenderHelmChart
metadata:
  name: demo
helmCharts:
- chartArgs:
    name: hello
    version: 0.1.0
    repo: `+srv.URL+`
  templateOptions:
    releaseName: r1
    namespace: ns1
    values:
      valuesInline:
        message: from inline
        extra:
          b: inline
`)
	require.NoError(t, err)
	assert.False(t, rl.Results.HasErrors())
	require.Len(t, rl.Items, 3) // the Namespace, the ConfigMap, the test Pod
	assert.Equal(t, "keep", rl.Items[0].GetName())
	cm := find(t, rl, "ConfigMap", "r1-hello")
	assert.Equal(t, "ns1", cm.GetNamespace())
	assert.Equal(t, map[string]string{"message": "from inline", "replicas": "1", "version": "0.1.0", "extra": `{"a":"one","b":"inline"}`}, data(t, cm))
	anns := cm.GetAnnotations()
	assert.Equal(t, "ns1/configmap_r1-hello.yaml", anns[pipeline.PathAnnotation])
	assert.Equal(t, anns[pipeline.PathAnnotation], anns[pipeline.LegacyPathAnnotation])
	find(t, rl, "Pod", "r1-test")
}

func TestRenderNewestVersionSkipTestsAndCRDs(t *testing.T) {
	srv := chartRepo(t)
	rl, err := run(t, nil, `apiVersion: fn.kpt.dev/v1alpha1
kind: RenderHelmChart
metadata:
  name: demo
helmCharts:
- chartArgs:
    name: hello
    repo: `+srv.URL+`/
  templateOptions:
    skipTests: true
- chartArgs:
    name: hello
    version: "~0.1"
    repo: `+srv.URL+`
  templateOptions:
    releaseName: old
`)
	require.NoError(t, err)
	require.Len(t, rl.Items, 4) // the Namespace; hello 0.2.0 without its test; hello 0.1.0 and its test
	assert.Equal(t, "0.2.0", data(t, find(t, rl, "ConfigMap", "release-name-hello"))["version"])
	assert.Equal(t, "default", find(t, rl, "ConfigMap", "release-name-hello").GetNamespace())
	assert.Equal(t, "0.1.0", data(t, find(t, rl, "ConfigMap", "old-hello"))["version"])
	for _, it := range rl.Items {
		assert.NotEqual(t, "release-name-test", it.GetName(), "skipTests leaves out the test hook")
	}
}

func TestValuesFilesFromThePackage(t *testing.T) {
	srv := chartRepo(t)
	files := revision.MustFiles(map[string]string{
		"values/base.yaml": "replicas: 2\nmessage: from base\nextra:\n  a: base\n",
		"values/prod.yaml": "replicas: 3\n",
	})
	cfg := func(merge string) string {
		return `apiVersion: fn.kpt.dev/v1alpha1
kind: RenderHelmChart
metadata:
  name: demo
helmCharts:
- chartArgs:
    name: hello
    version: 0.1.0
    repo: ` + srv.URL + `
  templateOptions:
    releaseName: r
    values:
      valuesFiles: [values/base.yaml, ./values/prod.yaml]
      valuesInline:
        replicas: 9
        extra:
          b: inline
      valuesMerge: ` + merge + `
`
	}
	for _, tc := range []struct {
		merge string
		want  map[string]string
	}{
		// Files merged in order, inline wins; chart defaults fill the rest.
		{"override", map[string]string{"replicas": "9", "message": "from base", "extra": `{"a":"base","b":"inline"}`}},
		// The files win over inline.
		{"merge", map[string]string{"replicas": "3", "message": "from base", "extra": `{"a":"base","b":"inline"}`}},
		// Inline only (with the chart's defaults under it).
		{"replace", map[string]string{"replicas": "9", "message": "hi", "extra": `{"a":"one","b":"inline"}`}},
	} {
		t.Run(tc.merge, func(t *testing.T) {
			rl, err := run(t, &helmfn.Options{Files: files}, cfg(tc.merge))
			require.NoError(t, err)
			got := data(t, find(t, rl, "ConfigMap", "r-hello"))
			delete(got, "version")
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestConfigMapFormAndRemoteValuesFile(t *testing.T) {
	srv := chartRepo(t)
	vals := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("message: remote\n"))
	}))
	t.Cleanup(vals.Close)
	rl, err := run(t, nil, `apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
data:
  name: hello
  version: 0.2.0
  repo: `+srv.URL+`
  releaseName: cm
  namespace: apps
  skipTests: "true"
  valuesFile: `+vals.URL+`/values.yaml
`)
	require.NoError(t, err)
	require.Len(t, rl.Items, 2)
	cm := find(t, rl, "ConfigMap", "cm-hello")
	assert.Equal(t, "remote", data(t, cm)["message"])
	assert.Equal(t, "apps", cm.GetNamespace())
}

func TestLocalChartInThePackage(t *testing.T) {
	m := map[string]string{"Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\n"}
	for p, c := range helloChart("0.3.0") {
		m["charts/hello/"+p] = c
	}
	// .helmignore leaves out a template that would not render.
	m["charts/hello/.helmignore"] = "# scratch files\nscratch/\n*.bak\n"
	m["charts/hello/templates/broken.yaml.bak"] = "{{ fail \"ignored\" }}\n"
	m["charts/hello/templates/scratch/x.yaml"] = "{{ fail \"ignored\" }}\n"
	files := revision.MustFiles(m)
	rl, err := run(t, &helmfn.Options{Files: files}, `apiVersion: fn.kpt.dev/v1alpha1
kind: RenderHelmChart
metadata:
  name: demo
helmGlobals:
  chartHome: charts
helmCharts:
- chartArgs:
    name: hello
  templateOptions:
    releaseName: loc
`)
	require.NoError(t, err)
	assert.Equal(t, "0.3.0", data(t, find(t, rl, "ConfigMap", "loc-hello"))["version"])

	// A version the local chart does not have, and no repository: an error.
	rl, err = run(t, &helmfn.Options{Files: files}, `apiVersion: fn.kpt.dev/v1alpha1
kind: RenderHelmChart
metadata:
  name: demo
helmGlobals:
  chartHome: charts
helmCharts:
- chartArgs:
    name: hello
    version: 1.0.0
`)
	assertFailed(t, rl, err, "local chart charts/hello has version 0.3.0, not 1.0.0")
}

// assertFailed checks a failed run: a FunctionError matching ErrRender,
// one error result with want in it, the items untouched.
func assertFailed(t *testing.T, rl *pipeline.ResourceList, err error, want string) {
	t.Helper()
	var fe *pipeline.FunctionError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, 1, fe.ExitCode)
	assert.ErrorIs(t, err, helmfn.ErrRender)
	require.Len(t, rl.Results, 1)
	assert.Equal(t, pipeline.SeverityError, rl.Results[0].Severity)
	assert.Contains(t, rl.Results[0].Message, want)
	require.Len(t, rl.Items, 1, "nothing half-written")
	assert.Equal(t, existing, rl.Items[0].MustString())
}

func TestErrors(t *testing.T) {
	srv := chartRepo(t)
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL
	down.Close()
	chart := func(args, opts string) string {
		return `apiVersion: fn.kpt.dev/v1alpha1
kind: RenderHelmChart
metadata:
  name: demo
helmCharts:
- chartArgs:
    name: hello
    repo: ` + srv.URL + `
  templateOptions:
    releaseName: ok
- chartArgs:
` + args + `
  templateOptions:
` + opts
	}
	for _, tc := range []struct {
		name, config, want string
	}{
		{"unknown chart", chart("    name: nope\n    repo: "+srv.URL, "    releaseName: x"), "helmCharts[1] (chart nope): chart nope not found in repository " + srv.URL},
		{"unknown version", chart("    name: hello\n    version: 9.9.9\n    repo: "+srv.URL, "    releaseName: x"), "chart hello version 9.9.9 not found in repository"},
		{"unreachable repository", chart("    name: hello\n    repo: "+downURL, "    releaseName: x"), "chart repository " + downURL},
		{"template error", chart("    name: hello\n    repo: "+srv.URL, "    values:\n      valuesInline:\n        message: \"\""), "message is required"},
		{"missing values file", chart("    name: hello\n    repo: "+srv.URL, "    values:\n      valuesFiles: [nope.yaml]"), "nope.yaml: no local files"},
		{"bad valuesMerge", chart("    name: hello\n    repo: "+srv.URL, "    values:\n      valuesMerge: sideways"), "valuesMerge must be one of merge, override, replace"},
		{"no name", chart("    repo: "+srv.URL, "    releaseName: x"), "helmCharts[1]: chartArgs.name is required"},
		{"no repo", chart("    name: hello", "    releaseName: x"), "chart not found in tmp/charts/hello and no chartArgs.repo"},
		{"bad repo scheme", chart("    name: hello\n    repo: ftp://x", "    releaseName: x"), "not an http(s):// or oci:// URL"},
		{"auth", chart("    name: hello\n    repo: "+srv.URL+"\n    auth:\n      kind: Secret\n      name: s", "    releaseName: x"), "chartArgs.auth: Secret default/s not found in the input resources"},
		{"auth not a Secret", chart("    name: hello\n    repo: "+srv.URL+"\n    auth:\n      kind: ConfigMap\n      name: s", "    releaseName: x"), "chartArgs.auth must name a Secret"},
		{"wrong kind", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n", "must be a `ConfigMap` or `RenderHelmChart`"},
		{"bad bool", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  name: hello\n  includeCRDs: maybe\n", "data.includeCRDs must be true or false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rl, err := run(t, nil, tc.config)
			assertFailed(t, rl, err, tc.want)
		})
	}
}

func TestCancelled(t *testing.T) {
	srv := chartRepo(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rl := &pipeline.ResourceList{FunctionConfig: yaml.MustParse("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  name: hello\n  repo: " + srv.URL + "\n")}
	err := helmfn.New(nil).Run(ctx, rl)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Empty(t, rl.Items)
}

// Through a registry and a kpt render: the catalog image resolves to the
// function, the rendered resources become files of the package.
func TestRegisteredInAKptfileRender(t *testing.T) {
	srv := chartRepo(t)
	reg := fnruntime.NewRegistry(nil)
	require.NoError(t, helmfn.Register(reg, nil))
	files := revision.MustFiles(map[string]string{"Kptfile": `apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: app
pipeline:
  mutators:
  - image: ghcr.io/kptdev/krm-functions-catalog/render-helm-chart:v0.2.2
    configPath: chart.yaml
`, "chart.yaml": `apiVersion: fn.kpt.dev/v1alpha1
kind: RenderHelmChart
metadata:
  name: demo
  annotations:
    config.kubernetes.io/local-config: "true"
helmCharts:
- chartArgs:
    name: hello
    version: 0.1.0
    repo: ` + srv.URL + `
  templateOptions:
    releaseName: app
    namespace: prod
    skipTests: true
`})
	out, err := pipeline.NewKptfile(reg, nil).Render(context.Background(), files)
	require.NoError(t, err)
	got, ok := out.Files.Get("prod/configmap_app-hello.yaml")
	require.True(t, ok, "files: %v", out.Files.Paths())
	assert.Contains(t, string(got), "message: \"hi\"")

	// A release of another line is refused, not run with v0.2's behaviour.
	_, err = reg.Resolve(context.Background(), pipeline.Step{Image: "gcr.io/kpt-fn/render-helm-chart:v0.1.0"})
	var ve *fnruntime.VersionError
	assert.True(t, errors.As(err, &ve), "%v", err)
	_, err = reg.Resolve(context.Background(), pipeline.Step{Image: "gcr.io/kpt-fn/render-helm-chart:v0.2.0"})
	require.NoError(t, err)
}

// chartArgs.auth: the credentials of a Secret among the input resources
// go to the repository; without them the repository refuses.
func TestAuthFromASecret(t *testing.T) {
	srv := chartRepoWithAuth(t, "robot", "s3cret")
	config := `apiVersion: fn.kpt.dev/v1alpha1
kind: RenderHelmChart
metadata:
  name: demo
helmCharts:
- chartArgs:
    name: hello
    version: 0.1.0
    repo: ` + srv.URL + `
    auth:
      kind: Secret
      name: repo-creds
  templateOptions:
    releaseName: priv
    skipTests: true
`
	secret := `apiVersion: v1
kind: Secret
metadata:
  name: repo-creds
data:
  username: cm9ib3Q=
  password: czNjcmV0
`
	rl := &pipeline.ResourceList{Items: []*yaml.RNode{yaml.MustParse(secret)}, FunctionConfig: yaml.MustParse(config)}
	require.NoError(t, helmfn.New(nil).Run(context.Background(), rl))
	require.Len(t, rl.Items, 2)
	assert.Equal(t, "0.1.0", data(t, find(t, rl, "ConfigMap", "priv-hello"))["version"])

	rl, err := run(t, nil, strings.Replace(config, "    auth:\n      kind: Secret\n      name: repo-creds\n", "", 1))
	assertFailed(t, rl, err, "401 Unauthorized")

	wrong := &pipeline.ResourceList{Items: []*yaml.RNode{yaml.MustParse(strings.Replace(secret, "czNjcmV0", "d3Jvbmc=", 1))}, FunctionConfig: yaml.MustParse(config)}
	err = helmfn.New(nil).Run(context.Background(), wrong)
	require.ErrorIs(t, err, helmfn.ErrRender)
	assert.Contains(t, wrong.Results[0].Message, "401 Unauthorized")
	assert.Len(t, wrong.Items, 1)
}
