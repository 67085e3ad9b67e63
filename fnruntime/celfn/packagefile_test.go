package celfn_test

import (
	"context"
	"strings"
	"testing"

	"github.com/configasdata/cad/fnruntime"
	"github.com/configasdata/cad/fnruntime/celfn"
	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/revision"
)

// A package without a Kptfile takes its pipeline from cad's package file,
// CEL conditions and computed inputs included, through the renderer kpt
// packages use.
func TestPackageFilePipelineWithCEL(t *testing.T) {
	e, err := celfn.New()
	if err != nil {
		t.Fatal(err)
	}
	pf := `apiVersion: cad.configasdata.dev/v1alpha1
kind: Package
metadata:
  name: app
  annotations:
    config.kubernetes.io/local-config: "true"
spec:
  pipeline:
    mutators:
    - name: set-namespace
      image: set-namespace:v0.4.1
      configMapExprs:
        namespace: resources.filter(r, r.kind == "ConfigMap" && r.metadata.name == "env")[0].data.namespace
    - name: never
      image: set-labels:v0.2.0
      configMap:
        skipped: "yes"
      condition: resources.exists(r, r.kind == "Secret")
`
	files := revision.MustFiles(map[string]string{
		revision.PackageFileName: pf,
		"env.yaml":               "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: env\ndata:\n  namespace: team-a\n",
		"deploy.yaml":            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n",
	})
	r := pipeline.NewKptfile(fnruntime.NewRegistry(nil), &pipeline.Options{Conditions: e, Inputs: e})
	out, err := r.Render(context.Background(), files)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := out.Files.Get("deploy.yaml")
	if !strings.Contains(string(d), "namespace: team-a") || strings.Contains(string(d), "skipped") {
		t.Fatalf("deploy.yaml after the render:\n%s", d)
	}
	if out.Files.Has(revision.KptfileName) {
		t.Fatal("the render added a Kptfile")
	}
	if len(out.Steps) != 2 || !out.Steps[1].Skipped {
		t.Fatalf("steps %+v", out.Steps)
	}
}
