package kubetest_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/configasdata/cad/examples/internal/kubetest"
)

// TestCluster starts a real etcd and kube-apiserver, installs a CRD, and
// checks that the API server validates custom resources against its
// schema, through client-go and through kubectl with the kubeconfig the
// harness writes.
func TestCluster(t *testing.T) {
	c := kubetest.Start(t)
	c.ApplyCRDs(t, filepath.Join("testdata", "widgets.yaml"))
	// Applying again updates in place.
	c.ApplyCRDs(t, filepath.Join("testdata", "widgets.yaml"))

	dc, err := dynamic.NewForConfig(c.Config)
	require.NoError(t, err)
	gvr := schema.GroupVersionResource{Group: "test.cad.configasdata.dev", Version: "v1", Resource: "widgets"}
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test.cad.configasdata.dev/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w1", "namespace": "default"},
		"spec":     map[string]any{"size": int64(3)},
	}}
	_, err = dc.Resource(gvr).Namespace("default").Create(context.Background(), w, metav1.CreateOptions{})
	require.NoError(t, err)

	bad := w.DeepCopy()
	bad.SetName("w2")
	bad.Object["spec"] = map[string]any{"size": int64(0)}
	_, err = dc.Resource(gvr).Namespace("default").Create(context.Background(), bad, metav1.CreateOptions{})
	require.ErrorContains(t, err, "spec.size")

	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Log("kubectl not found; the kubectl half is not run")
		return
	}
	out, err := exec.Command(kubectl, "--kubeconfig", c.Kubeconfig, "get", "widgets", "-n", "default", "-o", "name").CombinedOutput()
	require.NoError(t, err, string(out))
	require.Equal(t, "widget.test.cad.configasdata.dev/w1", strings.TrimSpace(string(out)))
}

func TestMissingBinaries(t *testing.T) {
	t.Setenv("CAD_KUBE_BIN", t.TempDir())
	_, err := kubetest.New(context.Background(), t.TempDir())
	require.ErrorIs(t, err, kubetest.ErrNoBinaries)
}
