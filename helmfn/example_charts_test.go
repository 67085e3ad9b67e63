package helmfn_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/helmfn"
	"github.com/configasdata/cad/repository/memrepo"
	"github.com/configasdata/cad/revision"
)

// packChart packs a chart's files under name/ as helm package does.
func packChart(name string, files map[string]string) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		_ = tw.WriteHeader(&tar.Header{Name: name + "/" + p, Mode: 0o644, Size: int64(len(files[p])), Typeflag: tar.TypeReg})
		_, _ = tw.Write([]byte(files[p]))
	}
	_ = tw.Close()
	_ = zw.Close()
	return buf.Bytes()
}

// greeter returns chart "greeter" at version: a ConfigMap from values;
// 2.0.0 adds a label.
func greeter(version string) map[string]string {
	label := ""
	if version == "2.0.0" {
		label = "\n  labels:\n    greeter/version: \"2\""
	}
	return map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: greeter\nversion: " + version + "\n",
		"values.yaml": "greeting: hello\n",
		"templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-greeter
  namespace: {{ .Release.Namespace }}` + label + `
data:
  greeting: {{ .Values.greeting | quote }}
`,
	}
}

// Clone a package from a chart in a chart repository (served here on
// loopback), edit it, upgrade it to the next chart version found by
// discovery: the local edit survives the three-way merge.
func ExampleCharts() {
	ctx := context.Background()
	blobs := map[string][]byte{
		"/index.yaml": []byte(`apiVersion: v1
entries:
  greeter:
  - {apiVersion: v2, name: greeter, version: 1.0.0, urls: [greeter-1.0.0.tgz]}
  - {apiVersion: v2, name: greeter, version: 2.0.0, urls: [greeter-2.0.0.tgz]}
`),
		"/greeter-1.0.0.tgz": packChart("greeter", greeter("1.0.0")),
		"/greeter-2.0.0.tgz": packChart("greeter", greeter("2.0.0")),
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if b, ok := blobs[r.URL.Path]; ok {
			_, _ = w.Write(b)
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()

	repo := memrepo.New("deployments", nil)
	e, err := engine.New(&engine.Options{Repositories: engine.Repos{"deployments": repo}})
	if err != nil {
		fmt.Println(err)
		return
	}
	charts := helmfn.NewCharts(nil)
	key := revision.Key{Package: "hello", Workspace: "v1"}
	pr, err := e.Clone(ctx, "deployments", key, engine.CloneSource{Helm: &engine.HelmUpstream{
		Repo: srv.URL, Chart: "greeter", Version: "1.0.0", ReleaseName: "hello", Namespace: "demo",
		Values: map[string]any{"greeting": "bonjour"},
	}}, engine.CloneOptions{Charts: charts})
	if err != nil {
		fmt.Println(err)
		return
	}
	files, _ := pr.Files(ctx)
	fmt.Println(files.Paths())

	// A local edit, then publish.
	const p = "demo/configmap_hello-greeter.yaml"
	cm, _ := files.Get(p)
	files, _ = files.With(p, []byte(strings.Replace(string(cm), "  greeting: \"bonjour\"\n", "  greeting: \"bonjour\"\n  owner: team-a\n", 1)))
	if _, err := e.Update(ctx, "deployments", key, files, engine.UpdateOptions{}); err != nil {
		fmt.Println(err)
		return
	}
	_, _ = e.Propose(ctx, "deployments", key)
	v1, err := e.Approve(ctx, "deployments", key)
	if err != nil {
		fmt.Println(err)
		return
	}

	cands, err := e.DiscoverHelmUpgrades(ctx, nil, charts)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s v%d: chart %s, newer %v\n", cands[0].Downstream.Package, cands[0].Downstream.Revision, cands[0].Upstream.Version, cands[0].Newer)

	pr, err = e.Upgrade(ctx, "deployments", v1.Meta().Key, engine.Ref{}, engine.Ref{Helm: &engine.HelmUpstream{Version: cands[0].Newer[0]}}, "v2",
		engine.UpgradeOptions{Charts: charts})
	if err != nil {
		fmt.Println(err)
		return
	}
	files, _ = pr.Files(ctx)
	cm, _ = files.Get(p)
	fmt.Print(string(cm))
	info, _ := revision.InfoFromFiles(files)
	fmt.Println("locked:", info.UpstreamLock.Helm.Chart, info.UpstreamLock.Helm.Version)
	// Output:
	// [cadpackage.yaml demo/configmap_hello-greeter.yaml]
	// hello v1: chart 1.0.0, newer [2.0.0]
	// # Source: greeter/templates/cm.yaml
	// apiVersion: v1
	// kind: ConfigMap
	// metadata: # kpt-merge: demo/hello-greeter
	//   name: hello-greeter
	//   namespace: demo
	//   annotations:
	//     internal.kpt.dev/upstream-identifier: '|ConfigMap|demo|hello-greeter'
	//   labels:
	//     greeter/version: "2"
	// data:
	//   greeting: "bonjour"
	//   owner: team-a
	// locked: greeter 2.0.0
}
