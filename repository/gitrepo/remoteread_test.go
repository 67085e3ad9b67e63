package gitrepo_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// gate is an HTTP proxy to a git server that, once armed, holds the next
// request for the remote's refs until released: a reader stuck on the
// network.
type gate struct {
	mu       sync.Mutex
	armed    bool
	held     chan struct{} // closed when a request is held
	released chan struct{}
}

func newGate(t *testing.T, target string) (*gate, string) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	g := &gate{held: make(chan struct{}), released: make(chan struct{})}
	proxy := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/info/refs") && r.URL.Query().Get("service") == "git-upload-pack" {
			g.mu.Lock()
			hold := g.armed
			g.armed = false
			g.mu.Unlock()
			if hold {
				close(g.held)
				<-g.released
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return g, srv.URL
}

func (g *gate) arm() {
	g.mu.Lock()
	g.armed = true
	g.mu.Unlock()
}

// A read of a remote waiting on the network holds no lock: other reads
// and a write of the same Repository go on meanwhile, and the waiting
// read completes once the network answers.
func TestRemoteReadsDoNotWaitOnEachOther(t *testing.T) {
	ctx := context.Background()
	dir := newBare(t)
	srv := gitServer(t, filepath.Dir(dir), "", "")
	g, proxied := newGate(t, srv.URL)
	r := mustOpen(t, gitSpec(proxied+"/"+filepath.Base(dir)), nil)
	defer r.Close()
	propose(t, r, "p", "ws")

	g.arm()
	slow := make(chan error, 1)
	go func() {
		_, err := r.List(ctx, repository.ListOptions{})
		slow <- err
	}()
	select {
	case <-g.held:
	case <-time.After(time.Minute):
		t.Fatal("the first read never asked for the remote's refs")
	}
	done := make(chan error, 1)
	go func() {
		if _, err := r.Get(ctx, revision.Key{Package: "p", Workspace: "ws"}); err != nil {
			done <- err
			return
		}
		done <- writeDraft(ctx, r, revision.Key{Package: "q", Workspace: "ws"}, "q", true)
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("a read and a write beside the waiting read: %v", err)
		}
	case <-time.After(time.Minute):
		close(g.released)
		t.Fatal("a read and a write waited for a read stuck on the network")
	}
	close(g.released)
	if err := <-slow; err != nil {
		t.Fatalf("the waiting read: %v", err)
	}
}
