package main

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/configasdata/cad/examples/internal/kubetest"
)

// cluster is the package's one kube-apiserver and etcd (kubetest), started
// by the first test that needs it and stopped by TestMain; each test works
// in a namespace of its own.
var cluster struct {
	once sync.Once
	c    *kubetest.Cluster
	dir  string
	err  error
}

// startCluster returns a config and a kubeconfig file for the package's
// cluster, with the CRDs of api/crds installed. It skips t without the
// binaries (fails it under CI).
func startCluster(t testing.TB) (*rest.Config, string) {
	t.Helper()
	cluster.once.Do(func() {
		cluster.dir, cluster.err = os.MkdirTemp("", "kubetest-operator-")
		if cluster.err != nil {
			return
		}
		cluster.c, cluster.err = kubetest.New(context.Background(), cluster.dir)
		if cluster.err != nil {
			return
		}
		crds, err := filepath.Glob(filepath.Join("..", "..", "api", "crds", "*.yaml"))
		if err != nil || len(crds) == 0 {
			cluster.err = errors.New("no CRDs under api/crds")
			return
		}
		cluster.c.ApplyCRDs(t, crds...)
	})
	switch {
	case errors.Is(cluster.err, kubetest.ErrNoBinaries):
		if os.Getenv("CI") != "" {
			t.Fatalf("%v; CI must install them", cluster.err)
		}
		t.Skip(cluster.err)
	case cluster.err != nil:
		t.Fatal(cluster.err)
	}
	return cluster.c.Config, cluster.c.Kubeconfig
}

// stopCluster stops the package's cluster, if one was started, and
// removes its data, or keeps it (and says where) when a test failed.
func stopCluster(failed bool) {
	if cluster.c != nil {
		cluster.c.Stop()
	}
	switch {
	case cluster.dir == "":
	case failed:
		fmt.Fprintf(os.Stderr, "kubetest: cluster data and logs kept in %s\n", cluster.dir)
	default:
		os.RemoveAll(cluster.dir)
	}
}

// namespaceFor returns a namespace name for t: its name, lower-cased, and
// a hash, within the 63 characters of a DNS label.
func namespaceFor(t testing.TB) string {
	sum := sha1.Sum([]byte(t.Name()))
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return '-'
	}, t.Name())
	if len(name) > 40 {
		name = name[:40]
	}
	return strings.Trim(name, "-") + "-" + hex.EncodeToString(sum[:4])
}
