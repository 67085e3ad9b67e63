package helmfn_test

import (
	"io"
	"log"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v4/pkg/registry"

	"github.com/configasdata/cad/helmfn"
	"github.com/configasdata/cad/internal/testregistry"
)

// A chart pushed with Helm's client to an OCI registry on loopback renders
// from oci://, at a version, at the newest tag, and an unknown version is
// an error result: on the real CNCF distribution registry (docker-registry,
// as the OCI backend's tests run it) and on go-containerregistry's
// in-process one.
func TestRenderFromOCIRegistry(t *testing.T) {
	t.Run("distribution", func(t *testing.T) {
		testRenderFromOCI(t, testregistry.Start(t).Host)
	})
	t.Run("in-process", func(t *testing.T) {
		srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
		t.Cleanup(srv.Close)
		testRenderFromOCI(t, strings.TrimPrefix(srv.URL, "http://"))
	})
}

func testRenderFromOCI(t *testing.T, host string) {
	c, err := registry.NewClient(registry.ClientOptPlainHTTP(), registry.ClientOptCredentialsFile(filepath.Join(t.TempDir(), "config.json")))
	require.NoError(t, err)
	for _, v := range []string{"0.1.0", "0.2.0"} {
		_, err := c.Push(tgz(t, "hello", helloChart(v)), host+"/charts/hello:"+v)
		require.NoError(t, err)
	}
	opts := &helmfn.Options{PlainHTTP: true}
	config := func(version string) string {
		return `apiVersion: fn.kpt.dev/v1alpha1
kind: RenderHelmChart
metadata:
  name: demo
helmCharts:
- chartArgs:
    name: hello
    version: "` + version + `"
    repo: oci://` + host + `/charts
  templateOptions:
    releaseName: oci
    skipTests: true
`
	}
	for version, want := range map[string]string{"0.1.0": "0.1.0", "": "0.2.0", "<0.2": "0.1.0"} {
		rl, err := run(t, opts, config(version))
		require.NoError(t, err, version)
		require.Len(t, rl.Items, 2)
		assert.Equal(t, want, data(t, find(t, rl, "ConfigMap", "oci-hello"))["version"], version)
	}
	rl, err := run(t, opts, config("9.9.9"))
	assertFailed(t, rl, err, "chart "+host+"/charts/hello:9.9.9")
}
