package gitrepo_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
)

// badPush is a transport whose pushes misbehave: receive returns what
// ReceivePack does in place of the real push.
type badPush struct {
	transport.Transport
	receive func(ctx context.Context, req *packp.ReferenceUpdateRequest) (*packp.ReportStatus, error)
	adv     func() *packp.AdvRefs // when set, the refs the remote advertises
}

func (b badPush) NewReceivePackSession(ep *transport.Endpoint, auth transport.AuthMethod) (transport.ReceivePackSession, error) {
	s, err := b.Transport.NewReceivePackSession(ep, auth)
	if err != nil {
		return nil, err
	}
	return badSession{s, b.receive, b.adv}, nil
}

type badSession struct {
	transport.ReceivePackSession
	receive func(ctx context.Context, req *packp.ReferenceUpdateRequest) (*packp.ReportStatus, error)
	adv     func() *packp.AdvRefs
}

func (s badSession) AdvertisedReferencesContext(ctx context.Context) (*packp.AdvRefs, error) {
	if s.adv != nil {
		return s.adv(), nil
	}
	return s.ReceivePackSession.AdvertisedReferencesContext(ctx)
}

func (s badSession) ReceivePack(ctx context.Context, req *packp.ReferenceUpdateRequest) (*packp.ReportStatus, error) {
	return s.receive(ctx, req)
}

// A push whose transport returns without reading the pack, or stalls
// until its context ends, ends (the first with ErrUnavailable, the second
// with its context), and the repository's reads and writes go on.
func TestPushNeverHangs(t *testing.T) {
	ctx := context.Background()
	release := make(chan struct{})
	defer close(release)
	for _, tc := range []struct {
		name    string
		receive func(ctx context.Context, req *packp.ReferenceUpdateRequest) (*packp.ReportStatus, error)
		want    error
	}{
		{"returns without reading the pack", func(context.Context, *packp.ReferenceUpdateRequest) (*packp.ReportStatus, error) {
			return nil, nil
		}, repository.ErrUnavailable},
		{"stalls", func(ctx context.Context, _ *packp.ReferenceUpdateRequest) (*packp.ReportStatus, error) {
			select {
			case <-release:
				return nil, errors.New("released")
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}, context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := newBare(t)
			srv := gitServer(t, filepath.Dir(dir), "", "")
			r := mustOpen(t, gitSpec(srv.URL+"/"+filepath.Base(dir)), nil)
			defer r.Close()
			propose(t, r, "p", "ws")
			restore := gitrepo.SetTransport(r, func(ep *transport.Endpoint) (transport.Transport, error) {
				tr, err := client.NewClient(ep)
				return badPush{Transport: tr, receive: tc.receive}, err
			})
			defer restore()
			wctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			defer cancel()
			ended := make(chan error, 1)
			go func() {
				_, err := r.UpdateLifecycle(wctx, revision.Key{Package: "p", Workspace: "ws"}, revision.LifecyclePublished, repository.UpdateOptions{})
				ended <- err
			}()
			select {
			case err := <-ended:
				if !errors.Is(err, tc.want) {
					t.Fatalf("approve: %v, want %v", err, tc.want)
				}
			case <-time.After(time.Minute):
				t.Fatal("the push hangs")
			}
			restore()
			// The lock is free: reads and writes go on.
			if pr, err := r.Get(ctx, revision.Key{Package: "p", Workspace: "ws"}); err != nil || pr.Meta().Lifecycle != revision.LifecycleProposed {
				t.Fatalf("get after the failed push: %v", err)
			}
			pr, err := r.UpdateLifecycle(ctx, revision.Key{Package: "p", Workspace: "ws"}, revision.LifecyclePublished, repository.UpdateOptions{})
			if err != nil || pr.Meta().Key.Revision != 1 {
				t.Fatalf("approve after the failed push: %v", err)
			}
		})
	}
}

// A remote advertising refs that cannot be read (HEAD names no ref) fails
// a push with ErrUnavailable, and nothing is pushed.
func TestPushBadAdvertisement(t *testing.T) {
	ctx := context.Background()
	dir := newBare(t)
	srv := gitServer(t, filepath.Dir(dir), "", "")
	r := mustOpen(t, gitSpec(srv.URL+"/"+filepath.Base(dir)), nil)
	defer r.Close()
	propose(t, r, "p", "ws")
	before := git(t, dir, "for-each-ref")
	restore := gitrepo.SetTransport(r, func(ep *transport.Endpoint) (transport.Transport, error) {
		tr, err := client.NewClient(ep)
		return badPush{Transport: tr, adv: func() *packp.AdvRefs {
			ar := packp.NewAdvRefs()
			h := plumbing.NewHash(strings.Repeat("1", 40))
			ar.Head = &h
			return ar
		}}, err
	})
	defer restore()
	_, err := r.UpdateLifecycle(ctx, revision.Key{Package: "p", Workspace: "ws"}, revision.LifecyclePublished, repository.UpdateOptions{})
	if !errors.Is(err, repository.ErrUnavailable) {
		t.Fatalf("approve: %v, want ErrUnavailable", err)
	}
	if after := git(t, dir, "for-each-ref"); after != before {
		t.Fatalf("the remote's refs changed:\n%s\nwas\n%s", after, before)
	}
}

// A push answered with no report of its commands (an empty reply where
// the remote was asked for one) has an unknown outcome: the write returns
// ErrUnavailable, never success. Here the remote took nothing.
func TestPushWithoutReport(t *testing.T) {
	ctx := context.Background()
	dir := newBare(t)
	srv := gitServer(t, filepath.Dir(dir), "", "")
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	var drop atomic.Bool
	proxy := httputil.NewSingleHostReverseProxy(u)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if drop.Load() && r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-receive-pack") {
			w.Header().Set("Content-Type", "application/x-git-receive-pack-result")
			w.WriteHeader(http.StatusOK)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()
	r := mustOpen(t, gitSpec(front.URL+"/"+filepath.Base(dir)), nil)
	defer r.Close()
	propose(t, r, "p", "ws")
	before := git(t, dir, "for-each-ref")
	drop.Store(true)
	_, err = r.UpdateLifecycle(ctx, revision.Key{Package: "p", Workspace: "ws"}, revision.LifecyclePublished, repository.UpdateOptions{})
	if !errors.Is(err, repository.ErrUnavailable) {
		t.Fatalf("approve answered with no report: %v, want ErrUnavailable", err)
	}
	if after := git(t, dir, "for-each-ref"); after != before {
		t.Fatalf("the remote's refs changed:\n%s\nwas\n%s", after, before)
	}
}
