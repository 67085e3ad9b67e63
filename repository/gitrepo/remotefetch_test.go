package gitrepo_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
)

// packGate is an HTTP proxy to a git server that counts the requests for
// the remote's refs (GET info/refs) and for objects (POST
// git-upload-pack), and, once armed, holds the next request for objects
// until released: a fetch stalled on the network. With cut set, it
// sends only the first half of every object response and drops the
// connection: a fetch that fails midway.
type packGate struct {
	target   *url.URL
	refs     atomic.Int64
	packs    atomic.Int64
	mu       sync.Mutex
	armed    bool
	push     bool // armed for a push (POST git-receive-pack), not a fetch
	cut      bool
	held     chan struct{} // closed when a request is held
	released chan struct{} // closed to let it go
	maxHold  time.Duration // when set, a held request goes after this long
}

func newPackGate(t testing.TB, target string) (*packGate, string) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	g := &packGate{target: u, held: make(chan struct{}), released: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(g.serve))
	t.Cleanup(srv.Close)
	// Runs before srv.Close (cleanups run last first): a request still
	// held would keep Close waiting.
	t.Cleanup(g.release)
	return g, srv.URL
}

func (g *packGate) serve(w http.ResponseWriter, r *http.Request) {
	isPack := r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-upload-pack")
	if strings.HasSuffix(r.URL.Path, "/info/refs") && r.URL.Query().Get("service") == "git-upload-pack" {
		g.refs.Add(1)
	}
	isPush := r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-receive-pack")
	g.mu.Lock()
	hold := g.armed && (isPack && !g.push || isPush && g.push)
	if hold {
		g.armed = false
	}
	held, released, cut := g.held, g.released, g.cut && isPack
	g.mu.Unlock()
	if isPack {
		g.packs.Add(1)
	}
	reqBody := io.Reader(r.Body)
	if hold && isPush {
		// Read first: the server notices a client that gives up only once
		// the request is read, and a push cut short must then end here.
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		reqBody = bytes.NewReader(b)
	}
	if hold {
		close(held)
		var timeout <-chan time.Time
		if g.maxHold > 0 {
			timeout = time.After(g.maxHold)
		}
		select {
		case <-released:
		case <-timeout:
		case <-r.Context().Done():
			return
		}
	}
	u := *g.target
	u.Path = r.URL.Path
	u.RawQuery = r.URL.RawQuery
	req, err := http.NewRequestWithContext(r.Context(), r.Method, u.String(), reqBody)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	req.Header = r.Header.Clone()
	req.ContentLength = r.ContentLength
	res, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer res.Body.Close()
	for k, vs := range res.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(res.StatusCode)
	if !cut {
		_, _ = io.Copy(w, res.Body)
		return
	}
	body, _ := io.ReadAll(res.Body)
	_, _ = w.Write(body[:len(body)/2])
	w.(http.Flusher).Flush()
	panic(http.ErrAbortHandler)
}

// arm makes the gate hold the next request for objects.
func (g *packGate) arm() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.armed, g.push = true, false
	g.held = make(chan struct{})
	g.released = make(chan struct{})
}

// armPush makes the gate hold the next push (until released, or until
// the client gives up: then the push never reaches the server).
func (g *packGate) armPush() {
	g.arm()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.push = true
}

// release lets the held request go (once per arm).
func (g *packGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.released:
	default:
		close(g.released)
	}
}

func (g *packGate) waitHeld(t testing.TB) {
	t.Helper()
	g.mu.Lock()
	held := g.held
	g.mu.Unlock()
	select {
	case <-held:
	case <-time.After(time.Minute):
		t.Fatal("no fetch asked for objects")
	}
}

// promptly runs fn and fails the test when it has not returned within
// 20 seconds (letting the held request, a fetch or a push, go, so that
// nothing hangs).
func promptly(t *testing.T, g *packGate, what string, fn func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(20 * time.Second):
		g.release()
		t.Fatalf("%s: still waiting after 20s for a request held on the network", what)
	}
}

// mirrorOpts returns the options of two Repositories sharing one mirror,
// in memory (Options.Storage) or on disk (Options.CacheDir).
func mirrorOpts(t testing.TB, onDisk bool) (a, b gitrepo.Options) {
	if onDisk {
		cache := filepath.Join(t.TempDir(), "cache")
		a.CacheDir, b.CacheDir = cache, cache
		return a, b
	}
	s := memory.NewStorage()
	a.Storage, b.Storage = s, s
	return a, b
}

func listKeys(ctx context.Context, r repository.Repository) ([]string, error) {
	revs, err := r.List(ctx, repository.ListOptions{})
	if err != nil {
		return nil, err
	}
	var keys []string
	for _, pr := range revs {
		keys = append(keys, pr.Meta().Key.Package)
	}
	sort.Strings(keys)
	return keys, nil
}

// A read whose fetch is stalled on the network blocks nothing: a read of
// the same mirror (another Repository on it, whose mirror is fresh), a
// write through that Repository, a read whose context ends (it returns
// then) and Close all go on meanwhile; the stalled read completes once
// the network answers and sees the remote as it was asked for after the
// read began; Close ends a stalled read at once.
func TestRemoteStalledFetchBlocksNothing(t *testing.T) {
	for _, onDisk := range []bool{false, true} {
		t.Run(map[bool]string{false: "memory", true: "disk"}[onDisk], func(t *testing.T) {
			ctx := context.Background()
			dir := newBare(t)
			srv := gitServer(t, filepath.Dir(dir), "", "")
			direct := srv.URL + "/" + filepath.Base(dir)
			g, proxied := newPackGate(t, srv.URL)
			proxied += "/" + filepath.Base(dir)
			writer := mustOpen(t, gitSpec(direct), nil)
			defer writer.Close()
			propose(t, writer, "p", "ws")

			slowOpts, fastOpts := mirrorOpts(t, onDisk)
			fastOpts.RemoteReadMaxAge = time.Hour
			slow := mustOpen(t, gitSpec(proxied), &slowOpts)
			defer slow.Close()
			fast := mustOpen(t, gitSpec(direct), &fastOpts)
			defer fast.Close()

			// The remote moves (a new draft): slow's next read fetches,
			// and stalls.
			qKey := revision.Key{Package: "q", Workspace: "ws"}
			if err := writeDraft(ctx, writer, qKey, "q", true); err != nil {
				t.Fatal(err)
			}
			g.arm()
			stalled := make(chan error, 1)
			go func() {
				keys, err := listKeys(ctx, slow)
				if err == nil && strings.Join(keys, " ") != "p q" {
					err = fmt.Errorf("listed %v, want p q", keys)
				}
				stalled <- err
			}()
			g.waitHeld(t)

			promptly(t, g, "a read of a fresh mirror beside the stalled fetch", func() error {
				_, err := fast.Get(ctx, revision.Key{Package: "p", Workspace: "ws"})
				return err
			})
			promptly(t, g, "a read that needs the fetch, with a deadline", func() error {
				cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
				defer cancel()
				_, err := slow.List(cctx, repository.ListOptions{})
				if !errors.Is(err, context.DeadlineExceeded) {
					return fmt.Errorf("got %v, want the deadline's error", err)
				}
				return nil
			})
			// The write moves a ref the stalled fetch also sets (the
			// draft's, to what the remote had when asked): the mirror
			// keeps the newer state, in which q is proposed.
			promptly(t, g, "a write beside the stalled fetch", func() error {
				_, err := fast.UpdateLifecycle(ctx, qKey, revision.LifecycleProposed, repository.UpdateOptions{})
				return err
			})
			g.release()
			if err := <-stalled; err != nil {
				t.Fatalf("the stalled read: %v", err)
			}
			for name, r := range map[string]*gitrepo.Repository{"the fetching Repository": slow, "the writing one": fast} {
				revs, err := r.List(ctx, repository.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, pr := range revs {
					got = append(got, pr.Meta().Key.Package+":"+string(pr.Meta().Lifecycle))
				}
				sort.Strings(got)
				if strings.Join(got, " ") != "p:Proposed q:Proposed" {
					t.Fatalf("%s lists %v after the fetch, want p and q proposed: the mirror went back", name, got)
				}
			}
			// Close while a read's fetch is stalled.
			propose(t, writer, "s", "ws")
			g.arm()
			go func() {
				_, err := slow.List(ctx, repository.ListOptions{})
				stalled <- err
			}()
			g.waitHeld(t)
			promptly(t, g, "Close beside the stalled fetch", slow.Close)
			promptly(t, g, "the stalled read once closed", func() error {
				if err := <-stalled; !errors.Is(err, repository.ErrClosed) {
					return fmt.Errorf("got %v, want ErrClosed", err)
				}
				return nil
			})
			g.release()
			if keys, err := listKeys(ctx, fast); err != nil || strings.Join(keys, " ") != "p q" {
				t.Fatalf("the shared mirror after Close: %v, %v", keys, err)
			}
		})
	}
}

// Reads that find the mirror stale at the same time make one fetch: one
// request for objects, and one ask for the refs beside each read's own.
func TestRemoteStaleReadsJoinOneFetch(t *testing.T) {
	ctx := context.Background()
	dir := newBare(t)
	srv := gitServer(t, filepath.Dir(dir), "", "")
	g, proxied := newPackGate(t, srv.URL)
	writer := mustOpen(t, gitSpec(srv.URL+"/"+filepath.Base(dir)), nil)
	defer writer.Close()
	propose(t, writer, "p", "ws")
	r := mustOpen(t, gitSpec(proxied+"/"+filepath.Base(dir)), nil)
	defer r.Close()
	propose(t, writer, "q", "ws")

	const n = 8
	refs0, packs0 := g.refs.Load(), g.packs.Load()
	g.arm()
	errs := make(chan error, n)
	for range n {
		go func() {
			keys, err := listKeys(ctx, r)
			if err == nil && strings.Join(keys, " ") != "p q" {
				err = fmt.Errorf("listed %v, want p q", keys)
			}
			errs <- err
		}()
	}
	g.waitHeld(t)
	// Every read has asked for the refs (and one fetch besides).
	for deadline := time.Now().Add(time.Minute); g.refs.Load()-refs0 < n+1; {
		if time.Now().After(deadline) {
			t.Fatalf("%d asks for the refs, want %d", g.refs.Load()-refs0, n+1)
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	g.release()
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got := g.packs.Load() - packs0; got != 1 {
		t.Fatalf("%d requests for objects, want 1", got)
	}
	// The reads' own asks, the fetch's, and at most one of a read that
	// joined late.
	if got := g.refs.Load() - refs0 - n; got > 2 {
		t.Fatalf("%d asks for the refs beside the reads' own, want 1 (2 at most)", got)
	}
}

// A fetch cut short on the network changes nothing in the mirror: every
// ref stays where it was (none points at a missing object), on disk and
// in memory; the next read fetches in full.
func TestRemoteFetchCutShortChangesNothing(t *testing.T) {
	for _, onDisk := range []bool{false, true} {
		t.Run(map[bool]string{false: "memory", true: "disk"}[onDisk], func(t *testing.T) {
			ctx := context.Background()
			dir := newBare(t)
			srv := gitServer(t, filepath.Dir(dir), "", "")
			g, proxied := newPackGate(t, srv.URL)
			writer := mustOpen(t, gitSpec(srv.URL+"/"+filepath.Base(dir)), nil)
			defer writer.Close()
			propose(t, writer, "p", "ws")
			opts, _ := mirrorOpts(t, onDisk)
			r := mustOpen(t, gitSpec(proxied+"/"+filepath.Base(dir)), &opts)
			defer r.Close()
			// Several commits, so that half the pack is not a whole pack.
			for _, p := range []string{"q", "s", "u"} {
				d, err := writer.CreateDraft(ctx, revision.Key{Package: p, Workspace: "ws"}, repository.CreateDraftOptions{
					Files: kptPkg(p, map[string]string{"big.yaml": strings.Repeat("k: "+p+"\n", 5000)})})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := d.Commit(ctx, revision.CommitOptions{}); err != nil {
					t.Fatal(err)
				}
			}

			mirror := func() string {
				if onDisk {
					refs := git(t, opts.CacheDir, "for-each-ref", "--format=%(refname) %(objectname)")
					for _, line := range strings.Split(refs, "\n") {
						if _, h, ok := strings.Cut(line, " "); ok {
							git(t, opts.CacheDir, "cat-file", "-e", h)
						}
					}
					return refs
				}
				iter, err := opts.Storage.IterReferences()
				if err != nil {
					t.Fatal(err)
				}
				var b bytes.Buffer
				var lines []string
				_ = iter.ForEach(func(ref *plumbing.Reference) error {
					if ref.Type() == plumbing.HashReference {
						if _, err := opts.Storage.EncodedObject(plumbing.AnyObject, ref.Hash()); err != nil {
							t.Errorf("%s: %v", ref.Name(), err)
						}
						lines = append(lines, ref.String())
					}
					return nil
				})
				sort.Strings(lines)
				for _, l := range lines {
					b.WriteString(l + "\n")
				}
				return b.String()
			}
			before := mirror()
			g.mu.Lock()
			g.cut = true
			g.mu.Unlock()
			if _, err := r.List(ctx, repository.ListOptions{}); !errors.Is(err, repository.ErrUnavailable) {
				t.Fatalf("a read whose fetch is cut short: %v, want ErrUnavailable", err)
			}
			if after := mirror(); after != before {
				t.Fatalf("the mirror changed:\nbefore\n%s\nafter\n%s", before, after)
			}
			g.mu.Lock()
			g.cut = false
			g.mu.Unlock()
			if keys, err := listKeys(ctx, r); err != nil || strings.Join(keys, " ") != "p q s u" {
				t.Fatalf("after the network came back: %v, %v", keys, err)
			}
			if onDisk {
				// git finds the mirror whole, and no staging file is left.
				git(t, opts.CacheDir, "fsck", "--no-dangling")
				if left, _ := filepath.Glob(filepath.Join(opts.CacheDir, "objects", "pack", "tmp_*")); len(left) != 0 {
					t.Fatalf("staging files left: %v", left)
				}
				if got, want := git(t, opts.CacheDir, "rev-parse", "refs/heads/drafts/u/ws"), git(t, dir, "rev-parse", "refs/heads/drafts/u/ws"); got != want {
					t.Fatalf("the mirror's draft u is %s, the remote's %s", got, want)
				}
			}
		})
	}
}

// BenchmarkRemoteReadBesideStalledFetch measures a read of a fresh mirror
// (RemoteReadMaxAge) while another Repository's read of the same mirror
// is fetching and the remote takes a second to send the objects. With
// the fetch under the store's write lock the read waits out that second.
func BenchmarkRemoteReadBesideStalledFetch(b *testing.B) {
	for _, onDisk := range []bool{false, true} {
		b.Run(map[bool]string{false: "memory", true: "disk"}[onDisk], func(b *testing.B) {
			ctx := context.Background()
			dir := newBare(b)
			srv := gitServer(b, filepath.Dir(dir), "", "")
			direct := srv.URL + "/" + filepath.Base(dir)
			g, proxied := newPackGate(b, srv.URL)
			g.maxHold = time.Second
			proxied += "/" + filepath.Base(dir)
			writer := mustOpen(b, gitSpec(direct), nil)
			defer writer.Close()
			propose(b, writer, "p", "ws")
			slowOpts, fastOpts := mirrorOpts(b, onDisk)
			fastOpts.RemoteReadMaxAge = time.Hour
			slow := mustOpen(b, gitSpec(proxied), &slowOpts)
			defer slow.Close()
			fast := mustOpen(b, gitSpec(direct), &fastOpts)
			defer fast.Close()
			key := revision.Key{Package: "p", Workspace: "ws"}
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				propose(b, writer, fmt.Sprintf("q%d", i), "ws")
				g.arm()
				stalled := make(chan error, 1)
				go func() {
					_, err := slow.List(ctx, repository.ListOptions{})
					stalled <- err
				}()
				g.waitHeld(b)
				b.StartTimer()
				if _, err := fast.Get(ctx, key); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				g.release()
				if err := <-stalled; err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}

// deafFetch is a transport whose request for objects returns only when
// released or when its context ends.
type deafFetch struct {
	transport.Transport
	release chan struct{}
}

func (d deafFetch) NewUploadPackSession(ep *transport.Endpoint, auth transport.AuthMethod) (transport.UploadPackSession, error) {
	s, err := d.Transport.NewUploadPackSession(ep, auth)
	if err != nil {
		return nil, err
	}
	return deafSession{s, d.release}, nil
}

type deafSession struct {
	transport.UploadPackSession
	release chan struct{}
}

func (s deafSession) UploadPack(ctx context.Context, _ *packp.UploadPackRequest) (*packp.UploadPackResponse, error) {
	select {
	case <-s.release:
		return nil, errors.New("released")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// A fetch whose transport does not answer ends with
// the context of the read or write that needs it, and leaves no lock
// held: reads and writes go on once the transport is back.
func TestRemoteFetchEndsWithContext(t *testing.T) {
	ctx := context.Background()
	release := make(chan struct{})
	defer close(release)
	dir := newBare(t)
	srv := gitServer(t, filepath.Dir(dir), "", "")
	url := srv.URL + "/" + filepath.Base(dir)
	writer := mustOpen(t, gitSpec(url), nil)
	defer writer.Close()
	propose(t, writer, "p", "ws")
	r := mustOpen(t, gitSpec(url), nil)
	defer r.Close()
	// w's reads use its mirror as it is: its write's own fetch is deaf.
	w := mustOpen(t, gitSpec(url), &gitrepo.Options{RemoteReadMaxAge: time.Hour})
	defer w.Close()
	propose(t, writer, "q", "ws")

	deaf := func(ep *transport.Endpoint) (transport.Transport, error) {
		tr, err := client.NewClient(ep)
		return deafFetch{Transport: tr, release: release}, err
	}
	restoreR, restoreW := gitrepo.SetTransport(r, deaf), gitrepo.SetTransport(w, deaf)
	restore := func() { restoreR(); restoreW() }
	defer restore()
	for what, op := range map[string]func(context.Context) error{
		"a read": func(ctx context.Context) error {
			_, err := r.List(ctx, repository.ListOptions{})
			return err
		},
		"a write": func(ctx context.Context) error {
			return writeDraft(ctx, w, revision.Key{Package: "r", Workspace: "ws"}, "r", true)
		},
	} {
		wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		ended := make(chan error, 1)
		go func() { ended <- op(wctx) }()
		select {
		case err := <-ended:
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("%s beside a deaf fetch: %v, want the deadline's error", what, err)
			}
		case <-time.After(time.Minute):
			t.Fatalf("%s waits on a deaf fetch", what)
		}
		cancel()
	}
	restore()
	if keys, err := listKeys(ctx, r); err != nil || strings.Join(keys, " ") != "p q" {
		t.Fatalf("a read once the transport is back: %v, %v", keys, err)
	}
	if err := writeDraft(ctx, w, revision.Key{Package: "r", Workspace: "ws"}, "r", true); err != nil {
		t.Fatalf("a write once the transport is back: %v", err)
	}
	if keys, err := listKeys(ctx, w); err != nil || strings.Join(keys, " ") != "p q r" {
		t.Fatalf("after the write: %v, %v", keys, err)
	}
}

// BenchmarkRemoteStaleRead measures a read that finds the mirror one
// commit behind the remote (another writer's draft) and fetches it: the
// ask for the refs, the fetch of the new objects and the read.
func BenchmarkRemoteStaleRead(b *testing.B) {
	for _, onDisk := range []bool{false, true} {
		b.Run(map[bool]string{false: "memory", true: "disk"}[onDisk], func(b *testing.B) {
			ctx := context.Background()
			dir := newBare(b)
			srv := gitServer(b, filepath.Dir(dir), "", "")
			url := srv.URL + "/" + filepath.Base(dir)
			writer := mustOpen(b, gitSpec(url), nil)
			defer writer.Close()
			propose(b, writer, "p", "ws")
			opts, _ := mirrorOpts(b, onDisk)
			r := mustOpen(b, gitSpec(url), &opts)
			defer r.Close()
			key := revision.Key{Package: "p", Workspace: "ws"}
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				if err := writeDraft(ctx, writer, revision.Key{Package: fmt.Sprintf("q%d", i), Workspace: "ws"}, "q", true); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if _, err := r.Get(ctx, key); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// fetchChildEnv, when set ("cache dir\nurl"), makes
// TestHelperRemoteFetchProcess open the remote at url with its mirror in
// cache dir and list it: another process fetching into a shared mirror.
const fetchChildEnv = "CAD_REMOTE_FETCH_CHILD"

// TestHelperRemoteFetchProcess is not a test: it is the child process of
// TestRemoteStalledFetchOtherProcess, and returns at once otherwise.
func TestHelperRemoteFetchProcess(t *testing.T) {
	arg := os.Getenv(fetchChildEnv)
	if arg == "" {
		return
	}
	cache, url, _ := strings.Cut(arg, "\n")
	r := mustOpen(t, gitSpec(url), &gitrepo.Options{CacheDir: cache})
	defer r.Close()
	keys, err := listKeys(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("listed:", strings.Join(keys, " "))
}

// A process whose fetch into a mirror on disk (Options.CacheDir) is
// stalled on the network keeps no other process from reading the mirror:
// the fetch holds neither cad.lock nor the store's lock while the remote
// answers.
func TestRemoteStalledFetchOtherProcess(t *testing.T) {
	ctx := context.Background()
	dir := newBare(t)
	srv := gitServer(t, filepath.Dir(dir), "", "")
	direct := srv.URL + "/" + filepath.Base(dir)
	g, proxied := newPackGate(t, srv.URL)
	writer := mustOpen(t, gitSpec(direct), nil)
	defer writer.Close()
	propose(t, writer, "p", "ws")
	cache := filepath.Join(t.TempDir(), "cache")
	reader := mustOpen(t, gitSpec(direct), &gitrepo.Options{CacheDir: cache, RemoteReadMaxAge: time.Hour})
	defer reader.Close()
	propose(t, writer, "q", "ws")

	g.arm()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperRemoteFetchProcess$", "-test.v")
	cmd.Env = append(os.Environ(), fetchChildEnv+"="+cache+"\n"+proxied+"/"+filepath.Base(dir))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	waited := false
	defer func() {
		if !waited {
			_ = cmd.Process.Kill()
			<-exited
		}
	}()
	g.waitHeld(t)
	promptly(t, g, "a read of the mirror beside another process's stalled fetch", func() error {
		_, err := reader.Get(ctx, revision.Key{Package: "p", Workspace: "ws"})
		return err
	})
	g.release()
	select {
	case err := <-exited:
		waited = true
		if err != nil || !strings.Contains(out.String(), "listed: p q\n") {
			t.Fatalf("the fetching process: %v\n%s", err, out.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("the fetching process did not end:\n%s", out.String())
	}
}

// A read whose fetch stalls returns when its context ends; being the
// only one waiting, it takes the fetch down with it (the request to the
// remote ends too), and the next read fetches afresh.
func TestRemoteFetchLeftByItsReader(t *testing.T) {
	ctx := context.Background()
	dir := newBare(t)
	srv := gitServer(t, filepath.Dir(dir), "", "")
	g, proxied := newPackGate(t, srv.URL)
	writer := mustOpen(t, gitSpec(srv.URL+"/"+filepath.Base(dir)), nil)
	defer writer.Close()
	propose(t, writer, "p", "ws")
	r := mustOpen(t, gitSpec(proxied+"/"+filepath.Base(dir)), nil)
	defer r.Close()
	propose(t, writer, "q", "ws")

	g.arm()
	promptly(t, g, "a read with a deadline whose fetch stalls", func() error {
		cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		if _, err := r.List(cctx, repository.ListOptions{}); !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("got %v, want the deadline's error", err)
		}
		return nil
	})
	promptly(t, g, "the next read", func() error {
		keys, err := listKeys(ctx, r)
		if err == nil && strings.Join(keys, " ") != "p q" {
			err = fmt.Errorf("listed %v, want p q", keys)
		}
		return err
	})
}

// Reads of a Repository with RemoteReadMaxAge that start together after
// the window lapsed (a controller's workers after a poll) share one ask of
// the remote for its refs, instead of one each, on the mirror unchanged
// and on a mirror behind.
func TestRemoteLapsedReadsShareOneAsk(t *testing.T) {
	ctx := context.Background()
	dir := newBare(t)
	srv := gitServer(t, filepath.Dir(dir), "", "")
	g, proxied := newPackGate(t, srv.URL)
	writer := mustOpen(t, gitSpec(srv.URL+"/"+filepath.Base(dir)), nil)
	defer writer.Close()
	propose(t, writer, "p", "ws")
	const window = 300 * time.Millisecond
	r := mustOpen(t, gitSpec(proxied+"/"+filepath.Base(dir)), &gitrepo.Options{RemoteReadMaxAge: window})
	defer r.Close()

	readAll := func(want string) {
		t.Helper()
		const n = 8
		errs := make(chan error, n)
		for range n {
			go func() {
				keys, err := listKeys(ctx, r)
				if err == nil && strings.Join(keys, " ") != want {
					err = fmt.Errorf("listed %v, want %s", keys, want)
				}
				errs <- err
			}()
		}
		for range n {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, step := range []struct {
		name, want string
		change     func()
		packs      int64
	}{
		{name: "unchanged", want: "p"},
		{name: "behind", want: "p q", change: func() { propose(t, writer, "q", "ws") }, packs: 1},
	} {
		if step.change != nil {
			step.change()
		}
		time.Sleep(window + 50*time.Millisecond)
		refs0, packs0 := g.refs.Load(), g.packs.Load()
		readAll(step.want)
		// One shared ask; a read that came after it ended within the
		// window asks nothing, so at most one more on a slow machine.
		if got := g.refs.Load() - refs0; got < 1 || got > 2 {
			t.Errorf("%s: 8 reads after the window asked for the refs %d times, want 1 (2 at most)", step.name, got)
		}
		if got := g.packs.Load() - packs0; got != step.packs {
			t.Errorf("%s: %d requests for objects, want %d", step.name, got, step.packs)
		}
	}
}
