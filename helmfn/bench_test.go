package helmfn_test

import (
	"context"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/configasdata/cad/helmfn"
	"github.com/configasdata/cad/pipeline"
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
