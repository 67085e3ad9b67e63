package ocirepo

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/stretchr/testify/require"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

func TestOpenRefusesBadSpecs(t *testing.T) {
	ctx := context.Background()
	for name, spec := range map[string]repository.Spec{
		"git type":      {Name: "x", Type: repository.TypeGit, Git: &repository.GitSpec{Repo: "/tmp/x"}},
		"no registry":   {Name: "x", Type: repository.TypeOCI, OCI: &repository.OCISpec{}},
		"bad registry":  {Name: "x", Type: repository.TypeOCI, OCI: &repository.OCISpec{Registry: "bad host/x"}},
		"upper prefix":  {Name: "x", Type: repository.TypeOCI, OCI: &repository.OCISpec{Registry: "localhost:5000/UPPER"}},
		"bad repo name": {Name: "Bad_Name", Type: repository.TypeOCI, OCI: &repository.OCISpec{Registry: "localhost:5000"}},
	} {
		if _, err := Open(ctx, spec, nil); !errors.Is(err, repository.ErrInvalidInput) {
			t.Errorf("%s: Open = %v, want ErrInvalidInput", name, err)
		}
	}
}

func TestUnreachableRegistry(t *testing.T) {
	r := mustOpen(t, ociSpec("127.0.0.1:1/x"), nil)
	_, err := r.List(context.Background(), repository.ListOptions{})
	if !errors.Is(err, repository.ErrUnavailable) {
		t.Fatalf("List on a closed port = %v, want ErrUnavailable", err)
	}
}

// TestWatchEvents sees a draft added, modified by a commit and a proposal,
// and deleted, from another handle's writes.
func TestWatchEvents(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	host := inProcessRegistry(t)
	r := mustOpen(t, ociSpec(host+"/w"), &Options{PollInterval: 20 * time.Millisecond})
	writer := mustOpen(t, ociSpec(host+"/w"), nil)
	events := make(chan repository.Event, 64)
	done := make(chan error, 1)
	go func() {
		done <- r.Watch(ctx, repository.ListOptions{}, func(ev repository.Event) error { events <- ev; return nil })
	}()
	time.Sleep(100 * time.Millisecond)
	next := func(want repository.EventType, lc revision.Lifecycle) {
		t.Helper()
		select {
		case ev := <-events:
			if ev.Type != want || ev.Revision.Meta().Lifecycle != lc {
				t.Fatalf("event %s %s, want %s %s", ev.Type, ev.Revision.Meta().Lifecycle, want, lc)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no %s event", want)
		}
	}
	k := revision.Key{Package: "p", Workspace: "ws"}
	d, err := writer.CreateDraft(ctx, k, repository.CreateDraftOptions{Files: revision.MustFiles(map[string]string{"Kptfile": "k"})})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Commit(ctx, revision.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	next(repository.Added, revision.LifecycleDraft)
	if _, err := writer.UpdateLifecycle(ctx, k, revision.LifecycleProposed, repository.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	next(repository.Modified, revision.LifecycleProposed)
	if err := writer.Delete(ctx, k, repository.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	next(repository.Deleted, revision.LifecycleProposed)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Watch returned %v after cancel", err)
	}
}

// TestPusherRecycled: what the Repository remembers of its uploads (the
// remote.Pusher's record of every digest it uploaded to each image
// repository) is bounded: the Pusher is replaced every uploadsPerPusher
// uploads (4 here; each write uploads three blobs), after which a
// package's lock config, remembered until then, is checked with the
// registry again; until then it is not. Writes and reads work throughout.
func TestPusherRecycled(t *testing.T) {
	ctx := context.Background()
	cfg := descriptor(emptyConfig, types.OCIConfigJSON).Digest.String()
	var configRequests atomic.Int64
	reg := paginate(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.Contains(req.URL.Path, cfg) || strings.Contains(req.URL.RawQuery, cfg) {
			configRequests.Add(1)
		}
		reg.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r := mustOpen(t, ociSpec(strings.TrimPrefix(srv.URL, "http://")+"/b"), nil)
	r.uploadsPerPusher = 4
	first := r.pusher()

	k := revision.Key{Package: "p", Workspace: "ws"}
	d, err := r.CreateDraft(ctx, k, repository.CreateDraftOptions{Files: revision.MustFiles(map[string]string{"Kptfile": "k"})})
	require.NoError(t, err)
	_, err = d.Commit(ctx, revision.CommitOptions{})
	require.NoError(t, err)
	require.Positive(t, configRequests.Load(), "the first write uploads the lock config")
	require.Same(t, first, r.pusher(), "three uploads: the Pusher is kept")

	before := configRequests.Load()
	_, err = r.UpdateLifecycle(ctx, k, revision.LifecycleProposed, repository.UpdateOptions{})
	require.NoError(t, err)
	require.Equal(t, before, configRequests.Load(), "the lock config is remembered")
	require.NotSame(t, first, r.pusher(), "the fourth upload replaced the Pusher")

	_, err = r.UpdateLifecycle(ctx, k, revision.LifecycleDraft, repository.UpdateOptions{})
	require.NoError(t, err)
	require.Positive(t, configRequests.Load()-before, "the new Pusher checks the lock config again")
	pr, err := r.Get(ctx, k)
	require.NoError(t, err)
	require.Equal(t, revision.LifecycleDraft, pr.Meta().Lifecycle)
}
