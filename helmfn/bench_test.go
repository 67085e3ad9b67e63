package helmfn_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/helmfn"
	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/revision"
)

// One chart pulled from the loopback repository and rendered, per run:
// index.yaml, the archive, Helm's template engine, parsing the output.
func BenchmarkRenderFromRepository(b *testing.B) {
	srv := chartRepo(b)
	fn := helmfn.New(nil)
	config := yaml.MustParse(`apiVersion: fn.kpt.dev/v1alpha1
kind: RenderHelmChart
metadata:
  name: demo
helmCharts:
- chartArgs:
    name: hello
    version: 0.1.0
    repo: ` + srv.URL + `
  templateOptions:
    releaseName: bench
`)
	b.ReportAllocs()
	for b.Loop() {
		rl := &pipeline.ResourceList{FunctionConfig: config}
		if err := fn.Run(context.Background(), rl); err != nil {
			b.Fatal(err)
		}
		if len(rl.Items) != 2 {
			b.Fatalf("%d items", len(rl.Items))
		}
	}
}

// Charts.Render of one chart version from the loopback repository, per
// run: index.yaml, the archive, Helm's template engine, the files.
func BenchmarkChartsRender(b *testing.B) {
	wr := startWebRepo(b, "", "")
	charts := helmfn.NewCharts(nil)
	up := engine.HelmUpstream{Repo: wr.srv.URL, Chart: "web", Version: "2.0.0", Values: map[string]any{"replicas": 2}}
	b.ReportAllocs()
	for b.Loop() {
		files, _, _, err := charts.Render(context.Background(), up)
		if err != nil {
			b.Fatal(err)
		}
		if files.Len() != 3 {
			b.Fatalf("%d files", files.Len())
		}
	}
}

// One Engine.Upgrade of a package cloned from a chart (1.0.0 to 2.0.0, a
// local edit kept), per run: two renders, the three-way merge, the write
// to a memory repository.
func BenchmarkHelmUpgrade(b *testing.B) {
	ctx := context.Background()
	wr := startWebRepo(b, "", "")
	charts := helmfn.NewCharts(nil)
	e, _ := newTestEngine(b)
	key := revision.Key{Package: "shop", Workspace: "v1"}
	pr, err := e.Clone(ctx, deployments, key, engine.CloneSource{Helm: &engine.HelmUpstream{Repo: wr.srv.URL, Chart: "web", Version: "1.0.0",
		Values: map[string]any{"message": "hello"}}}, engine.CloneOptions{Charts: charts})
	if err != nil {
		b.Fatal(err)
	}
	f := setFile(b, filesOf(b, pr), "default/deployment_release-name-web.yaml", func(s string) string {
		return strings.Replace(s, "    app: web\n", "    app: web\n    team: blue\n", 1)
	})
	if _, err := e.Update(ctx, deployments, key, f, engine.UpdateOptions{}); err != nil {
		b.Fatal(err)
	}
	v1 := publishDraft(b, e, key)
	to := engine.Ref{Helm: &engine.HelmUpstream{Version: "2.0.0"}}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if _, err := e.Upgrade(ctx, deployments, v1.Meta().Key, engine.Ref{}, to, fmt.Sprintf("up%d", i), engine.UpgradeOptions{Charts: charts}); err != nil {
			b.Fatal(err)
		}
	}
}
