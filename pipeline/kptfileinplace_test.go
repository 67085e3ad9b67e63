package pipeline_test

import (
	"context"
	"strings"
	"testing"

	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/revision"
)

// The root Kptfile is edited in place on render: a step's configMap keeps
// its key order and quoting, an empty configMap stays, comments stay, and
// only the status block is rewritten (a second render replaces it).
func TestRenderEditsKptfileInPlace(t *testing.T) {
	const head = `apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: app # the app
  annotations:
    owner: "team-a"
info:
  description: 'demo'
pipeline:
  mutators:
    # first
    - image: noop-a
      configMap:
        zeta: "1"
        alpha: 'yes'
        mid: plain
    - image: noop-b
      configMap: {}
`
	const status = `status:
  conditions:
    - type: Rendered
      status: "True"
      reason: RenderSuccess
  renderStatus:
    mutationSteps:
      - image: ghcr.io/kptdev/krm-functions-catalog/noop-a:latest
        exitCode: 0
      - image: ghcr.io/kptdev/krm-functions-catalog/noop-b:latest
        exitCode: 0
`
	noop := pipeline.ResolverFunc(func(context.Context, pipeline.Step) (pipeline.Function, error) {
		return pipeline.FunctionFunc(func(context.Context, *pipeline.ResourceList) error { return nil }), nil
	})
	oldStatus := "status:\n  conditions:\n    - type: Rendered\n      status: \"False\"\n      reason: RenderFailed\n      message: old\n"
	files := revision.MustFiles(map[string]string{
		"Kptfile": head + oldStatus,
		"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n",
	})
	for round := 0; round < 2; round++ {
		out, err := pipeline.NewKptfile(noop, nil).Render(context.Background(), files)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := out.Files.Get("Kptfile")
		if string(got) != head+status {
			t.Fatalf("round %d: Kptfile:\n%s\nwant:\n%s", round, got, head+status)
		}
		files = out.Files
	}

	// kpt's own rewrite, on request.
	out, err := pipeline.NewKptfile(noop, &pipeline.Options{KptStyleKptfile: true}).Render(context.Background(), files)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := out.Files.Get("Kptfile")
	for _, gone := range []string{"# the app", "configMap: {}", "zeta: \"1\"\n        alpha"} {
		if strings.Contains(string(got), gone) {
			t.Errorf("kpt-style Kptfile still has %q:\n%s", gone, got)
		}
	}
}
