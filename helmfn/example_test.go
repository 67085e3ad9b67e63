package helmfn_test

import (
	"context"
	"fmt"

	"github.com/configasdata/cad/fnruntime"
	"github.com/configasdata/cad/helmfn"
	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/revision"
)

// Render a package whose Kptfile runs render-helm-chart on a chart kept
// in the package (charts/hello), with a values file from the package and
// inline values; .krmignore keeps the chart's templates and the values
// file, which are not KRM, out of the render. The function reads the
// package's own files: one registration serves every package.
func ExampleRegister() {
	files := revision.MustFiles(map[string]string{
		"Kptfile": `apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: app
pipeline:
  mutators:
  - image: ghcr.io/kptdev/krm-functions-catalog/render-helm-chart:v0.2
    configPath: render.yaml
`,
		"render.yaml": `apiVersion: fn.kpt.dev/v1alpha1
kind: RenderHelmChart
metadata:
  name: render
  annotations:
    config.kubernetes.io/local-config: "true"
helmGlobals:
  chartHome: charts
helmCharts:
- chartArgs:
    name: hello
  templateOptions:
    releaseName: web
    namespace: prod
    values:
      valuesFiles: [helm/values-prod.yaml]
      valuesInline:
        greeting: hello from inline
`,
		// Chart sources and values files are not KRM: kpt's .krmignore
		// keeps them out of the render's resources.
		".krmignore":               "charts/\nhelm/\n",
		"helm/values-prod.yaml":    "replicas: 3\n",
		"charts/hello/Chart.yaml":  "apiVersion: v2\nname: hello\nversion: 1.0.0\n",
		"charts/hello/values.yaml": "replicas: 1\ngreeting: hi\n",
		"charts/hello/templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
  namespace: {{ .Release.Namespace }}
data:
  greeting: {{ .Values.greeting | quote }}
  replicas: {{ .Values.replicas | quote }}
`,
	})
	reg := fnruntime.NewRegistry(nil)
	// No Options.Files: in a render the function reads the files of the
	// package it runs for, so one registration serves every package.
	if err := helmfn.Register(reg, nil); err != nil {
		fmt.Println(err)
		return
	}
	out, err := pipeline.NewKptfile(reg, nil).Render(context.Background(), files)
	if err != nil {
		fmt.Println(err)
		return
	}
	cm, _ := out.Files.Get("prod/configmap_web-config.yaml")
	fmt.Print(string(cm))
	// Output:
	// # Source: hello/templates/cm.yaml
	// apiVersion: v1
	// kind: ConfigMap
	// metadata:
	//   name: web-config
	//   namespace: prod
	// data:
	//   greeting: "hello from inline"
	//   replicas: "3"
}
