package ocirepo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

func TestConcurrencyInProcess(t *testing.T) { testConcurrency(t, inProcessRegistry(t), 24) }
func TestConcurrencyDistribution(t *testing.T) {
	testConcurrency(t, startDistribution(t).host, 12)
}

// testConcurrency races n goroutines over 4 independent handles (as 4
// processes would be): creates of one workspace (exactly one wins), then
// approvals of n proposals with retry on conflict (numbers 1..n, each
// once), and checks with the witness that no lock and nothing
// half-written is left.
func testConcurrency(t *testing.T, host string, n int) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	prefix := uniquePrefix()
	handles := make([]*Repository, 4)
	for i := range handles {
		handles[i] = mustOpen(t, ociSpec(host+"/"+prefix), nil)
	}
	files := func(i int) revision.Files {
		return revision.MustFiles(map[string]string{"Kptfile": "k", "i.yaml": fmt.Sprintf("i: %d\n", i)})
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := handles[i%len(handles)]
			<-start
			d, err := r.CreateDraft(ctx, revision.Key{Package: "race", Workspace: "same"}, repository.CreateDraftOptions{Files: files(i)})
			if err == nil {
				_, err = d.Commit(ctx, revision.CommitOptions{})
			}
			errs[i] = err
		}()
	}
	close(start)
	wg.Wait()
	winners := 0
	for _, err := range errs {
		switch {
		case err == nil:
			winners++
		case !errors.Is(err, repository.ErrAlreadyExists) && !errors.Is(err, repository.ErrConflict):
			t.Fatalf("losing create: %v", err)
		}
	}
	if winners != 1 {
		t.Fatalf("%d creates of one workspace won, want exactly 1", winners)
	}

	for i := range n {
		r := handles[0]
		d, err := r.CreateDraft(ctx, revision.Key{Package: "race", Workspace: fmt.Sprintf("ws%d", i)}, repository.CreateDraftOptions{Files: files(i)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.Commit(ctx, revision.CommitOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := r.UpdateLifecycle(ctx, revision.Key{Package: "race", Workspace: fmt.Sprintf("ws%d", i)}, revision.LifecycleProposed, repository.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	nums := make([]int, n)
	errs = make([]error, n)
	start = make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := handles[i%len(handles)]
			<-start
			k := revision.Key{Package: "race", Workspace: fmt.Sprintf("ws%d", i)}
			for attempt := 0; ; attempt++ {
				pr, err := r.UpdateLifecycle(ctx, k, revision.LifecyclePublished, repository.UpdateOptions{})
				if err == nil {
					nums[i] = pr.Meta().Key.Revision
					return
				}
				if !errors.Is(err, repository.ErrConflict) || attempt > 20 {
					errs[i] = err
					return
				}
			}
		}()
	}
	// Meanwhile a reader lists: it never sees a workspace twice.
	stop := make(chan struct{})
	var readerErr error
	var rwg sync.WaitGroup
	rwg.Add(1)
	go func() {
		defer rwg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			revs, err := handles[1].List(ctx, repository.ListOptions{Package: "race"})
			if err != nil {
				readerErr = err
				return
			}
			seen := map[string]bool{}
			for _, pr := range revs {
				ws := pr.Meta().Key.Workspace
				if seen[ws] {
					readerErr = fmt.Errorf("workspace %s listed twice", ws)
					return
				}
				seen[ws] = true
			}
		}
	}()
	close(start)
	wg.Wait()
	close(stop)
	rwg.Wait()
	if readerErr != nil {
		t.Fatal(readerErr)
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("approval %d: %v", i, err)
		}
	}
	slices.Sort(nums)
	for i, got := range nums {
		if got != i+1 {
			t.Fatalf("concurrent approvals got %v, want 1..%d each once", nums, n)
		}
	}
	w := witness{t: t, base: "http://" + host + "/v2/"}
	tags := w.tags(prefix + "/race")
	var vtags int
	for _, tag := range tags {
		if strings.HasPrefix(tag, lockTagPrefix) {
			t.Fatalf("lock tag %s left behind", tag)
		}
		if kind, _, _ := parseTag(tag); kind == tagPublished {
			vtags++
		}
	}
	if vtags != n {
		t.Fatalf("%d v<N> tags, want %d: %v", vtags, n, tags)
	}
	for i := 1; i <= n; i++ {
		m := w.manifest(prefix+"/race", fmt.Sprintf("v%d", i))
		alias := w.manifest(prefix+"/race", "ws."+m.Annotations[AnnotationWorkspace])
		if alias.Annotations[AnnotationRevision] != fmt.Sprint(i) || alias.Layers[0].Digest != m.Layers[0].Digest {
			t.Fatalf("workspace alias of v%d is %+v", i, alias.Annotations)
		}
	}
}

// TestAbandonedLock: a lock left by a crashed writer blocks writes only
// until its lease ends.
func TestAbandonedLock(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	host := inProcessRegistry(t)
	crashed := mustOpen(t, ociSpec(host+"/p"), &Options{Clock: clock, LockTTL: time.Minute})
	repo, _ := crashed.repoOf("pkg")
	// Take a lock and never release it, as a crashed process would.
	if _, err := crashed.claim(ctx, "test", revision.Key{Package: "pkg"}, repo); err != nil {
		t.Fatal(err)
	}
	r := mustOpen(t, ociSpec(host+"/p"), &Options{Clock: clock, LockTimeout: 200 * time.Millisecond})
	d, err := r.CreateDraft(ctx, revision.Key{Package: "pkg", Workspace: "ws"}, repository.CreateDraftOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The fake clock stands still, so the wait never ends: conflict.
	done := make(chan error, 1)
	go func() { _, err := d.Commit(ctx, revision.CommitOptions{}); done <- err }()
	time.Sleep(100 * time.Millisecond)
	mu.Lock()
	now = now.Add(30 * time.Second) // past LockTimeout, not past the lease
	mu.Unlock()
	if err := <-done; !errors.Is(err, repository.ErrConflict) {
		t.Fatalf("commit while another writer holds the lock = %v, want ErrConflict", err)
	}
	mu.Lock()
	now = now.Add(2 * time.Minute) // past the lease
	mu.Unlock()
	if _, err := d.Commit(ctx, revision.CommitOptions{}); err != nil {
		t.Fatalf("commit after the abandoned lock expired: %v", err)
	}
	for _, tag := range (witness{t: t, base: "http://" + host + "/v2/"}).tags("p/pkg") {
		if strings.HasPrefix(tag, lockTagPrefix) {
			t.Fatalf("the expired lock %s was not removed", tag)
		}
	}
}

// TestClaimAfterARelease: a writer that writes and releases the lock
// while another claimer is reading the tag list must not leave that
// claimer holding the lock with a list that misses the write; with one
// page (the list predates the write and the released lock is gone when it
// is looked at) and with several (the write lands in a page already read
// and the lock is gone from a page not yet read).
func TestClaimAfterARelease(t *testing.T) {
	for _, tc := range []struct {
		name     string
		pageSize int
		written  string
	}{
		{"one page", 0, "v7"},
		{"pages", 2, "a0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			var hook atomic.Pointer[func()]
			inner := paginate(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				if !strings.HasSuffix(req.URL.Path, "/tags/list") || req.URL.Query().Get("last") != "" {
					inner.ServeHTTP(w, req)
					return
				}
				rec := httptest.NewRecorder()
				inner.ServeHTTP(rec, req)
				if f := hook.Swap(nil); f != nil {
					(*f)() // after the page is read, before it is answered
				}
				for k, v := range rec.Header() {
					w.Header()[k] = v
				}
				w.WriteHeader(rec.Code)
				_, _ = w.Write(rec.Body.Bytes())
			}))
			t.Cleanup(srv.Close)
			host := strings.TrimPrefix(srv.URL, "http://")
			holder := mustOpen(t, ociSpec(host+"/p"), nil)
			var remoteOpts []remote.Option
			if tc.pageSize > 0 {
				remoteOpts = append(remoteOpts, remote.WithPageSize(tc.pageSize))
			}
			claimer := mustOpen(t, ociSpec(host+"/p"), &Options{RemoteOptions: remoteOpts})
			key := revision.Key{Package: "pkg"}
			repo, _ := holder.repoOf("pkg")
			if err := holder.ensureBlob(ctx, repo, emptyConfig, types.OCIConfigJSON); err != nil {
				t.Fatal(err)
			}
			for _, tag := range []string{"a1", "a2"} { // the first page, when paged
				if err := holder.pusher().Put(ctx, repo.Tag(tag), rawManifest(lockManifestForTest(t, tag))); err != nil {
					t.Fatal(err)
				}
			}
			held, err := holder.claim(ctx, "test", key, repo)
			if err != nil {
				t.Fatal(err)
			}
			f := func() {
				if err := holder.pusher().Put(ctx, repo.Tag(tc.written), rawManifest(lockManifestForTest(t, tc.written))); err != nil {
					t.Error(err)
				}
				held.release(ctx)
			}
			hook.Store(&f)
			got, err := claimer.claim(ctx, "test", key, repo)
			if err != nil {
				t.Fatal(err)
			}
			defer got.release(ctx)
			if hook.Load() != nil {
				t.Fatal("the hook never ran")
			}
			if !slices.Contains(got.tags, tc.written) {
				t.Fatalf("the lock was won with tags %v, which miss %s written by the writer that released it", got.tags, tc.written)
			}
		})
	}
}

// lockManifestForTest is a small manifest of its own for tag.
func lockManifestForTest(t *testing.T, tag string) []byte {
	t.Helper()
	b, err := json.Marshal(v1.Manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		Config:        descriptor(emptyConfig, types.OCIConfigJSON),
		Layers:        []v1.Descriptor{},
		Annotations:   map[string]string{AnnotationTag: tag},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}
