package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// startCluster starts kube-apiserver and etcd with the CRDs of api/crds
// installed, and returns a config and a kubeconfig file for them.
func startCluster(t *testing.T) (*rest.Config, string) {
	t.Helper()
	home, _ := os.UserHomeDir()
	bin := filepath.Join(home, ".cache", "cad", "kube-v1.37.2", "bin")
	if _, err := os.Stat(filepath.Join(bin, "kube-apiserver")); err != nil {
		t.Skip("no kube-apiserver in " + bin)
	}
	te := &envtest.Environment{BinaryAssetsDirectory: bin, CRDDirectoryPaths: []string{filepath.Join("..", "..", "api", "crds")},
		ErrorIfCRDPathMissing: true}
	cfg, err := te.Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = te.Stop() })
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kc, te.KubeConfig, 0o600))
	return cfg, kc
}
