package cli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/configasdata/cad/examples/cadctl/internal/cli"
)

// TestFnRenderHelmChartInProcess: cadctl fn render runs render-helm-chart
// in-process (helmfn), with a local chart from the package, and no
// container engine on PATH: before it was registered, the step fell back
// to a container and, without an engine, failed as not available.
func TestFnRenderHelmChartInProcess(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no docker or podman
	dir := t.TempDir()
	files := map[string]string{
		"Kptfile": `apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: app
pipeline:
  mutators:
  - image: render-helm-chart:v0.2.2
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
`,
		".krmignore":               "charts/\n",
		"charts/hello/Chart.yaml":  "apiVersion: v2\nname: hello\nversion: 1.0.0\n",
		"charts/hello/values.yaml": "greeting: hi\n",
		"charts/hello/templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
  namespace: {{ .Release.Namespace }}
data:
  greeting: {{ .Values.greeting | quote }}
`,
	}
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var stdout, stderr bytes.Buffer
	code := cli.Invocation{Args: []string{"fn", "render", dir, "-o", "unwrap"}, Stdout: &stdout, Stderr: &stderr, Dir: dir, Env: []string{}}.Run(context.Background())
	if code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, stderr.String())
	}
	for _, want := range []string{"name: web-config", "namespace: prod", `greeting: "hi"`} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, stdout.String())
		}
	}
}

// TestFnEvalMountMapsIntoInProcessFunction runs the catalog's
// render-helm-chart-local example as its README gives it: the package,
// holding a chart and a values file, mounted at /tmp/charts (the
// function's default chartHome is tmp/charts) and the values file named
// by its path under the mount. An in-process function sees each mount at
// its target, as a container would; before, any target but /tmp was
// refused. --as-current-user is accepted, as kpt accepts it.
func TestFnEvalMountMapsIntoInProcessFunction(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no docker or podman: in-process only
	dir := t.TempDir()
	files := map[string]string{
		".krmignore":                          "helloworld-chart\nhelloworld-values\n",
		"helloworld-chart/Chart.yaml":         "apiVersion: v2\nname: helloworld-chart\nversion: 0.1.0\n",
		"helloworld-chart/values.yaml":        "replicaCount: 1\n",
		"helloworld-values/values.yaml":       "replicaCount: 5\n",
		"helloworld-chart/templates/dep.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}-helloworld-chart\nspec:\n  replicas: {{ .Values.replicaCount }}\n",
	}
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := cli.Invocation{Args: args, Stdout: &stdout, Stderr: &stderr, Dir: dir, Env: []string{}}.Run(context.Background())
		return code, stdout.String(), stderr.String()
	}
	code, out, errOut := run("fn", "eval", dir, "--image", "render-helm-chart:v0.2.2",
		"--mount", "type=bind,src="+dir+",dst=/tmp/charts", "--as-current-user", "-o", "unwrap", "--",
		"name=helloworld-chart", "releaseName=test", "valuesFile=/tmp/charts/helloworld-values/values.yaml", "skipTests=true")
	if code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, errOut)
	}
	for _, want := range []string{"name: test-helloworld-chart", "replicas: 5"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// A relative src and a file mount, as the catalog's kustomize example
	// mounts values files one by one.
	code, out, errOut = run("fn", "eval", dir, "--image", "render-helm-chart:v0.2.2",
		"--mount", "type=bind,src=helloworld-chart,dst=/tmp/charts/helloworld-chart",
		"--mount", "type=bind,src=./helloworld-values/values.yaml,dst=/tmp/file1.yaml", "-o", "unwrap", "--",
		"name=helloworld-chart", "releaseName=rel", "valuesFile=tmp/file1.yaml")
	if code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, errOut)
	}
	if !strings.Contains(out, "name: rel-helloworld-chart") || !strings.Contains(out, "replicas: 5") {
		t.Errorf("file mount: output:\n%s", out)
	}
	// A mount that is not a bind, or whose source is missing, is refused.
	if code, _, errOut := run("fn", "eval", dir, "--image", "render-helm-chart:v0.2.2",
		"--mount", "type=bind,src=missing,dst=/tmp/charts", "--", "name=helloworld-chart"); code == 0 || !strings.Contains(errOut, "missing") {
		t.Errorf("a missing mount source: exit %d, stderr %s", code, errOut)
	}
	// --as-current-user with an exec function is refused, as kpt refuses it.
	if code, _, errOut := run("fn", "eval", dir, "--exec", "true", "--as-current-user"); code == 0 || !strings.Contains(errOut, "--as-current-user") {
		t.Errorf("--as-current-user with --exec: exit %d, stderr %s", code, errOut)
	}
}
