package main

import (
	"path/filepath"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/configasdata/cad/examples/internal/kubetest"
)

// startCluster starts kube-apiserver and etcd (kubetest) with the CRDs of
// api/crds installed, and returns a config and a kubeconfig file for them.
func startCluster(t testing.TB) (*rest.Config, string) {
	t.Helper()
	c := kubetest.Start(t)
	crds, err := filepath.Glob(filepath.Join("..", "..", "api", "crds", "*.yaml"))
	if err != nil || len(crds) == 0 {
		t.Fatalf("no CRDs under api/crds: %v", err)
	}
	c.ApplyCRDs(t, crds...)
	return c.Config, c.Kubeconfig
}
