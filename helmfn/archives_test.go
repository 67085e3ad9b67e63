package helmfn_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/helmfn"
	"github.com/configasdata/cad/repository"
)

// countingRepo serves web 2.0.0 with its true digest and web 3.0.0 with a
// wrong one, and counts the GETs of each path.
func countingRepo(t *testing.T) (*httptest.Server, func(path string) int) {
	t.Helper()
	good, bad := tgz(t, "web", webChart("2.0.0")), tgz(t, "web", webChart("3.0.0"))
	sum := sha256.Sum256(good)
	index := fmt.Sprintf("apiVersion: v1\nentries:\n  web:\n"+
		"  - {apiVersion: v2, name: web, version: 2.0.0, urls: [charts/web-2.0.0.tgz], digest: %s}\n"+
		"  - {apiVersion: v2, name: web, version: 3.0.0, urls: [charts/web-3.0.0.tgz], digest: %s}\n",
		hex.EncodeToString(sum[:]), strings.Repeat("0", 64))
	var mu sync.Mutex
	gets := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		gets[r.URL.Path]++
		mu.Unlock()
		switch r.URL.Path {
		case "/index.yaml":
			_, _ = w.Write([]byte(index))
		case "/charts/web-2.0.0.tgz":
			_, _ = w.Write(good)
		case "/charts/web-3.0.0.tgz":
			_, _ = w.Write(bad)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, func(p string) int { mu.Lock(); defer mu.Unlock(); return gets[p] }
}

// TestArchiveCache: an archive whose content has the digest index.yaml
// gives is downloaded once per set of credentials; index.yaml is read on
// every render; an archive that does not match its digest, or any archive
// with the cache off, is downloaded every time.
func TestArchiveCache(t *testing.T) {
	ctx := context.Background()
	srv, gets := countingRepo(t)
	render := func(c *helmfn.Charts, version string, auth *repository.Credentials) {
		t.Helper()
		files, got, _, err := c.Render(ctx, engine.HelmUpstream{Repo: srv.URL, Chart: "web", Version: version, Auth: auth})
		require.NoError(t, err)
		assert.Equal(t, version, got)
		assert.NotEmpty(t, files.Paths())
	}
	c := helmfn.NewCharts(nil)
	render(c, "2.0.0", nil)
	render(c, "2.0.0", nil)
	assert.Equal(t, 2, gets("/index.yaml"))
	assert.Equal(t, 1, gets("/charts/web-2.0.0.tgz"), "the second render downloaded the archive again")

	render(c, "2.0.0", &repository.Credentials{Username: "u", Password: "p"})
	render(c, "2.0.0", &repository.Credentials{Username: "u", Password: "p"})
	assert.Equal(t, 2, gets("/charts/web-2.0.0.tgz"), "an archive read without credentials served a caller with them, or the other way round")

	render(c, "3.0.0", nil)
	render(c, "3.0.0", nil)
	assert.Equal(t, 2, gets("/charts/web-3.0.0.tgz"), "an archive that does not match its digest was kept")

	off := helmfn.NewCharts(&helmfn.Options{ArchiveCacheBytes: -1})
	render(off, "2.0.0", nil)
	render(off, "2.0.0", nil)
	assert.Equal(t, 4, gets("/charts/web-2.0.0.tgz"), "the cache was used while off")
}

// TestArchiveCacheBound: a cache too small for an archive keeps none.
func TestArchiveCacheBound(t *testing.T) {
	ctx := context.Background()
	srv, gets := countingRepo(t)
	c := helmfn.NewCharts(&helmfn.Options{ArchiveCacheBytes: 64})
	for range 2 {
		_, _, _, err := c.Render(ctx, engine.HelmUpstream{Repo: srv.URL, Chart: "web", Version: "2.0.0"})
		require.NoError(t, err)
	}
	assert.Equal(t, 2, gets("/charts/web-2.0.0.tgz"))
}
