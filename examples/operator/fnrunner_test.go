package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	porchv1alpha2 "github.com/configasdata/cad/api/porch/v1alpha2"
	"github.com/configasdata/cad/fnrunner"
	"github.com/configasdata/cad/fnrunner/fnrunnertest"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
)

// The operator, on a real kube-apiserver, renders a package whose
// pipeline uses a function that is not built in through a function
// runner (Porch's protocol) on loopback: the clone's render runs it there.
func TestRenderThroughFunctionRunner(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "annotate")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/configasdata/cad/fnrunner/internal/testfn/annotate").CombinedOutput()
	require.NoError(t, err, "%s", out)
	const image = "example.com/fns/annotate:v1"
	runner := fnrunnertest.Start(t, map[string]string{image: bin})
	rc, err := fnrunner.New(runner.URL, nil)
	require.NoError(t, err)
	defer rc.Close()

	e := newEnv(t)
	publish(t, e.gitDir, "blueprints", "base", map[string]string{
		"Kptfile": `apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: base
  annotations:
    config.kubernetes.io/local-config: "true"
pipeline:
  mutators:
  - image: ` + image + `
    configMap:
      key: rendered-by
      value: function-runner
`,
		"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  a: b\n",
	})
	e.run(Options{FunctionRunner: rc})
	e.wait("blueprints.base.v1", "discovered", readyAt(porchv1alpha2.LifecyclePublished))
	e.create("blueprints.edge.ws1", "edge", "ws1", &porchv1alpha2.PackageSource{CloneFrom: &porchv1alpha2.UpstreamPackage{UpstreamRef: ref("blueprints.base.v1")}})
	e.wait("blueprints.edge.ws1", "a ready draft", readyAt(porchv1alpha2.LifecycleDraft))
	require.Positive(t, runner.Calls(), "the runner evaluated nothing")

	ctx := context.Background()
	r, err := gitrepo.Open(ctx, repository.Spec{Name: "blueprints", Type: repository.TypeGit,
		Git: &repository.GitSpec{Repo: e.gitDir, Branch: "main"}}, nil)
	require.NoError(t, err)
	defer r.Close()
	rev, err := r.Get(ctx, revision.Key{Package: "edge", Workspace: "ws1"})
	require.NoError(t, err)
	files, err := rev.Files(ctx)
	require.NoError(t, err)
	cm := files.Strings()["cm.yaml"]
	require.True(t, strings.Contains(cm, "rendered-by: function-runner") || strings.Contains(cm, "rendered-by: 'function-runner'"), "the clone was not rendered through the runner:\n%s", cm)
}
