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
