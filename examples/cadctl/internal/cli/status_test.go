package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/configasdata/cad/examples/cadctl/internal/cli"
	"github.com/configasdata/cad/examples/internal/kubetest"
	"github.com/configasdata/cad/live"
)

// TestRpkgStatus publishes a package with cadctl in direct mode, applies
// its resources to a real kube-apiserver and follows them with cadctl
// rpkg status.
func TestRpkgStatus(t *testing.T) {
	c := kubetest.Start(t)
	work := newWorkDir(t)
	global := []string{"--config", filepath.Join(work, "cadctl.json")}
	run := func(args ...string) (string, string, int) {
		var stdout, stderr bytes.Buffer
		code := cli.Invocation{Args: append(append([]string{}, global...), args...), Stdout: &stdout, Stderr: &stderr, Dir: work}.Run(context.Background())
		return stdout.String(), stderr.String(), code
	}
	must := func(args ...string) string {
		t.Helper()
		out, errOut, code := run(args...)
		require.Equal(t, 0, code, "cadctl %s: %s", strings.Join(args, " "), errOut)
		return out
	}

	must("repo", "reg", filepath.Join(work, "deploy.git"), "--name=deploy", "--create-branch")
	must("rpkg", "init", "--repository=deploy", "--workspace=v1", "app")
	must("rpkg", "pull", "deploy.app.v1", "pkg")
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-config\ndata:\n  a: b\n"
	deploy := `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  replicas: 1
  selector:
    matchLabels: {app: app}
  template:
    metadata:
      labels: {app: app}
    spec:
      containers:
      - name: app
        image: registry.example/app:1
`
	require.NoError(t, os.WriteFile(filepath.Join(work, "pkg", "cm.yaml"), []byte(cm), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(work, "pkg", "deploy.yaml"), []byte(deploy), 0o644))
	must("rpkg", "push", "deploy.app.v1", "pkg")
	must("rpkg", "propose", "deploy.app.v1")
	must("rpkg", "approve", "deploy.app.v1")
	target := "--target-kubeconfig=" + c.Kubeconfig

	// Not deployed: every resource NotFound. package-context.yaml, which
	// init writes, is local-config and not listed.
	out := must("rpkg", "status", "deploy.app.v1", target)
	assert.Regexp(t, `ConfigMap\s+default\s+app-config\s+NotFound`, out)
	assert.Regexp(t, `Deployment\.apps\s+default\s+app\s+NotFound`, out)
	assert.Contains(t, out, "deploy.app.v1: NotFound (2 resources)\n")

	// Applied: InProgress, in JSON.
	dyn, err := dynamic.NewForConfig(c.Config)
	require.NoError(t, err)
	ctx := context.Background()
	create := func(gvr schema.GroupVersionResource, y string) {
		t.Helper()
		u := &unstructured.Unstructured{}
		j, err := yaml.YAMLToJSON([]byte(y))
		require.NoError(t, err)
		require.NoError(t, u.UnmarshalJSON(j))
		_, err = dyn.Resource(gvr).Namespace("default").Create(ctx, u, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	deployments := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	create(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, cm)
	create(deployments, deploy)
	var ps live.PackageStatus
	require.NoError(t, json.Unmarshal([]byte(must("rpkg", "status", "deploy.app.v1", target, "-o", "json")), &ps))
	assert.Equal(t, "deploy.app.v1", ps.Revision)
	assert.Equal(t, live.InProgress, ps.Summary)
	require.Len(t, ps.Resources, 2)
	assert.Equal(t, live.Current, ps.Resources[0].Status)
	assert.Equal(t, "cm.yaml", ps.Resources[0].File)

	// --watch gives up after --timeout while nothing rolls the Deployment out.
	out, errOut, code := run("rpkg", "status", "deploy.app.v1", target, "--watch", "--interval=50ms", "--timeout=300ms")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "deploy.app.v1: InProgress (2 resources)\n")
	assert.Equal(t, 1, strings.Count(out, "deploy.app.v1:"), "an unchanged status is printed once")
	assert.Contains(t, errOut, "deploy.app.v1 is not Current after 300ms")

	// Rolled out (the status a controller would write): Current.
	d, err := dyn.Resource(deployments).Namespace("default").Get(ctx, "app", metav1.GetOptions{})
	require.NoError(t, err)
	now := time.Now().UTC().Format(time.RFC3339)
	d.Object["status"] = map[string]any{
		"observedGeneration": d.GetGeneration(), "replicas": int64(1), "updatedReplicas": int64(1),
		"readyReplicas": int64(1), "availableReplicas": int64(1),
		"conditions": []any{
			map[string]any{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "lastTransitionTime": now, "lastUpdateTime": now},
			// The API server defaults progressDeadlineSeconds, so kstatus
			// waits for the controller's Progressing condition too.
			map[string]any{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable", "lastTransitionTime": now, "lastUpdateTime": now},
		},
	}
	_, err = dyn.Resource(deployments).Namespace("default").UpdateStatus(ctx, d, metav1.UpdateOptions{})
	require.NoError(t, err)
	out = must("rpkg", "status", "deploy.app.v1", target, "--watch", "--interval=50ms", "--timeout=30s")
	assert.Contains(t, out, "deploy.app.v1: Current (2 resources)\n")
	t.Logf("cadctl rpkg status:\n%s", out)
	out = must("rpkg", "status", "deploy.app.v1", target, "-o", "yaml")
	assert.Contains(t, out, "summary: Current\n")

	// Server mode: the server started with --target-kubeconfig computes
	// the status in its cluster.
	url := startServer(t, serverBinary(t), filepath.Join(work, ".server"), "--target-kubeconfig", c.Kubeconfig)
	serverRun := func(args ...string) (string, string, int) {
		var stdout, stderr bytes.Buffer
		code := cli.Invocation{Args: append([]string{"--server", url}, args...), Stdout: &stdout, Stderr: &stderr, Dir: work}.Run(context.Background())
		return stdout.String(), stderr.String(), code
	}
	_, errOut, code = serverRun("repo", "reg", filepath.Join(work, "deploy.git"), "--name=deploy")
	require.Equal(t, 0, code, errOut)
	out, errOut, code = serverRun("rpkg", "status", "deploy.app.v1")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "deploy.app.v1: Current (2 resources)\n")

	// The ConfigMap deleted: NotFound, in both modes.
	require.NoError(t, dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("default").Delete(ctx, "app-config", metav1.DeleteOptions{}))
	out, errOut, code = serverRun("rpkg", "status", "deploy.app.v1", "-o", "json")
	require.Equal(t, 0, code, errOut)
	ps = live.PackageStatus{}
	require.NoError(t, json.Unmarshal([]byte(out), &ps))
	assert.Equal(t, live.NotFound, ps.Summary)
	assert.Equal(t, live.NotFound, ps.Resources[0].Status)
	assert.Equal(t, live.Current, ps.Resources[1].Status)
	out = must("rpkg", "status", "deploy.app.v1", target)
	assert.Regexp(t, `ConfigMap\s+default\s+app-config\s+NotFound`, out)
	assert.Contains(t, out, "deploy.app.v1: NotFound (2 resources)\n")
	_, errOut, code = serverRun("rpkg", "status", "deploy.app.nope")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "not found")

	// Bad input.
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"rpkg", "status", "deploy.app.nope", target}, "not found"},
		{[]string{"rpkg", "status", "deploy.app.v1"}, "--target-kubeconfig is required"},
		{[]string{"rpkg", "status", target}, "exactly one PACKAGE_REVISION_NAME"},
		{[]string{"rpkg", "status", "deploy.app.v1", target, "-o", "wide"}, "unsupported output format"},
		{[]string{"rpkg", "status", "deploy.app.v1", "--target-kubeconfig", filepath.Join(work, "missing")}, "--target-kubeconfig"},
		{[]string{"rpkg", "status", "deploy.app.v1", target, "--default-namespace", "Bad_NS"}, "default namespace"},
	} {
		out, errOut, code := run(tc.args...)
		assert.Equal(t, 1, code, "%v", tc.args)
		assert.Empty(t, out, "%v", tc.args)
		assert.Contains(t, errOut, tc.err, "%v", tc.args)
	}
}
