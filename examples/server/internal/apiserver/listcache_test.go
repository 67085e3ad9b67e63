package apiserver

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/repository/repotest"
	"github.com/configasdata/cad/revision"
)

// The cache keeps one entry per request, replaced when the state changes,
// and never more bytes than its bound: the least recently used entries go
// first, and a body larger than a quarter of the bound is not kept.
func TestListCacheBoundAndReplace(t *testing.T) {
	c := newListCache(1000)
	ctx := context.Background()
	builds := 0
	build := func(n int) func() (*listCacheEntry, bool, error) {
		return func() (*listCacheEntry, bool, error) {
			builds++
			return &listCacheEntry{body: bytes.Repeat([]byte("x"), n)}, true, nil
		}
	}
	for i := range 10 {
		_, err := c.do(ctx, fmt.Sprintf("r%d", i), "s1", build(200))
		require.NoError(t, err)
		_, size, n := c.counts()
		assert.LessOrEqual(t, size, int64(1000), "after %d puts", i+1)
		assert.Equal(t, int64(n*200), size)
	}
	st, _, n := c.counts()
	assert.Equal(t, 5, n)
	assert.Equal(t, 5, st.evictions)
	// The newest are kept, the oldest went.
	assert.NotNil(t, c.get("r9", "s1", time.Now()))
	assert.Nil(t, c.get("r0", "s1", time.Now()))
	// Same request, other state: a miss, and the entry is replaced.
	builds = 0
	e, err := c.do(ctx, "r9", "s2", build(100))
	require.NoError(t, err)
	assert.Equal(t, 1, builds)
	assert.Len(t, e.body, 100)
	assert.Nil(t, c.get("r9", "s1", time.Now()))
	assert.Same(t, e, c.get("r9", "s2", time.Now()))
	// Too large: answered, not kept, and the request's older entry goes.
	e, err = c.do(ctx, "r9", "s3", build(251))
	require.NoError(t, err)
	assert.Len(t, e.body, 251)
	assert.Nil(t, c.get("r9", "s3", time.Now()))
	assert.Nil(t, c.get("r9", "s2", time.Now()))
	// Not to be kept (warnings): not kept.
	_, err = c.do(ctx, "warned", "s1", func() (*listCacheEntry, bool, error) {
		return &listCacheEntry{body: []byte("w")}, false, nil
	})
	require.NoError(t, err)
	assert.Nil(t, c.get("warned", "s1", time.Now()))
	// A failed build is not kept and its error is returned.
	boom := errors.New("boom")
	_, err = c.do(ctx, "failed", "s1", func() (*listCacheEntry, bool, error) { return nil, false, boom })
	require.ErrorIs(t, err, boom)
	assert.Nil(t, c.get("failed", "s1", time.Now()))
	// An expired entry (a Table's) is a miss.
	_, err = c.do(ctx, "table", "s1", func() (*listCacheEntry, bool, error) {
		return &listCacheEntry{body: []byte("t"), expires: time.Now().Add(time.Minute)}, true, nil
	})
	require.NoError(t, err)
	assert.NotNil(t, c.get("table", "s1", time.Now()))
	assert.Nil(t, c.get("table", "s1", time.Now().Add(2*time.Minute)))
	// The gzip form counts in the size and is evicted with the entry.
	c2 := newListCache(100 << 10)
	body := bytes.Repeat([]byte(`{"kind":"PackageRevision"},`), 900)
	e, err = c2.do(ctx, "gz", "s1", func() (*listCacheEntry, bool, error) { return &listCacheEntry{body: body}, true, nil })
	require.NoError(t, err)
	gz := c2.gzipped(e)
	_, size, _ := c2.counts()
	assert.Equal(t, int64(len(body)+len(gz)), size)
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	require.NoError(t, err)
	plain, err := io.ReadAll(zr)
	require.NoError(t, err)
	assert.Equal(t, body, plain)
}

// Requests that miss the same entry at once share one build; when the
// build's result is not kept, each waiting request builds its own.
func TestListCacheSharesBuilds(t *testing.T) {
	for _, keep := range []bool{true, false} {
		t.Run(fmt.Sprint("keep=", keep), func(t *testing.T) {
			c := newListCache(1 << 20)
			ctx := context.Background()
			release := make(chan struct{})
			var mu sync.Mutex
			builds := 0
			build := func() (*listCacheEntry, bool, error) {
				mu.Lock()
				builds++
				first := builds == 1
				mu.Unlock()
				if first {
					<-release
				}
				return &listCacheEntry{body: []byte("body")}, keep, nil
			}
			var wg sync.WaitGroup
			bodies := make([][]byte, 8)
			for i := range bodies {
				wg.Go(func() {
					e, err := c.do(ctx, "req", "state", build)
					assert.NoError(t, err)
					if e != nil {
						bodies[i] = e.body
					}
				})
			}
			require.Eventually(t, func() bool {
				st, _, _ := c.counts()
				return st.builds == 1 && st.shared == 7
			}, 10*time.Second, time.Millisecond)
			close(release)
			wg.Wait()
			for _, b := range bodies {
				assert.Equal(t, "body", string(b))
			}
			if keep {
				assert.Equal(t, 1, builds)
			} else {
				assert.Equal(t, 8, builds)
			}
		})
	}
}

// A waiting request gives up with its context; the others are not held.
func TestListCacheWaitCancelled(t *testing.T) {
	c := newListCache(1 << 20)
	release := make(chan struct{})
	go c.do(context.Background(), "req", "state", func() (*listCacheEntry, bool, error) {
		<-release
		return &listCacheEntry{body: []byte("b")}, true, nil
	})
	require.Eventually(t, func() bool { st, _, _ := c.counts(); return st.builds == 1 }, 10*time.Second, time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.do(ctx, "req", "state", func() (*listCacheEntry, bool, error) { t.Error("built"); return nil, false, nil })
	require.ErrorIs(t, err, context.Canceled)
	close(release)
}

// A state check is shared only by requests that arrived before it
// started: one that arrives while a check runs waits for the next, and
// the requests that wait together share that next one.
func TestStateChecksNeverStale(t *testing.T) {
	var sc stateChecks
	ctx := context.Background()
	var mu sync.Mutex
	value, reads := 0, 0
	gates := []chan struct{}{make(chan struct{}), make(chan struct{})}
	read := func() (string, bool) {
		mu.Lock()
		v, n := value, reads
		reads++
		mu.Unlock()
		<-gates[min(n, 1)]
		return fmt.Sprint(v), true
	}
	// counts returns the readings so far and the requests that waited
	// for the running one (a request woken by the end of an earlier one
	// is not counted, however late it runs).
	counts := func() (int, int) {
		sc.mu.Lock()
		defer sc.mu.Unlock()
		if c := sc.cur["k"]; c != nil {
			return sc.reads, c.waiters
		}
		return sc.reads, 0
	}
	first := make(chan string)
	go func() { s, _ := sc.check(ctx, "k", read); first <- s }()
	require.Eventually(t, func() bool { r, _ := counts(); return r == 1 }, 10*time.Second, time.Millisecond)
	// Written while the first check runs: the requests that come now
	// must see it.
	mu.Lock()
	value = 1
	mu.Unlock()
	later := make(chan string, 5)
	for range 5 {
		go func() { s, _ := sc.check(ctx, "k", read); later <- s }()
	}
	require.Eventually(t, func() bool { _, w := counts(); return w == 5 }, 10*time.Second, time.Millisecond)
	close(gates[0])
	assert.Equal(t, "0", <-first)
	// One of them reads again; the other four wait for that reading.
	require.Eventually(t, func() bool { r, w := counts(); return r == 2 && w == 4 }, 10*time.Second, time.Millisecond)
	close(gates[1])
	for range 5 {
		assert.Equal(t, "1", <-later)
	}
	r, _ := counts()
	assert.Equal(t, 2, r)
	// A waiter gives up with its context.
	gates = []chan struct{}{make(chan struct{}), make(chan struct{})}
	go sc.check(ctx, "k", read)
	require.Eventually(t, func() bool { r, _ := counts(); return r == 3 }, 10*time.Second, time.Millisecond)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, ok := sc.check(cctx, "k", read)
	assert.False(t, ok)
	close(gates[0])
	close(gates[1])
}

// listBody lists path with the given Accept header and returns the
// response.
func listBody(t *testing.T, ts *testServer, path, accept string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest("GET", ts.URL+path, nil)
	require.NoError(t, err)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", data)
	return resp, data
}

type listed struct {
	Kind     string `json:"kind"`
	Metadata struct {
		ResourceVersion string `json:"resourceVersion"`
		Continue        string `json:"continue"`
	} `json:"metadata"`
	Items []struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Spec struct {
			PackageName string `json:"packageName"`
		} `json:"spec"`
	} `json:"items"`
	Rows []struct {
		Cells []any `json:"cells"`
	} `json:"rows"`
}

func decodeListed(t *testing.T, data []byte) listed {
	t.Helper()
	var l listed
	require.NoError(t, json.Unmarshal(data, &l), "%s", data)
	return l
}

const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"

// Repeated lists come from the cache; JSON and Table, and lists with
// different selectors, are kept apart; a write through the server makes
// the next list build again and show it.
func TestListCacheServer(t *testing.T) {
	ts := startServer(t, "", nil)
	for _, p := range []string{"a", "b", "c"} {
		require.Equal(t, 201, ts.doJSON("POST", prPath, initPR(p, "ws"), nil))
	}
	_, first := listBody(t, ts, prPath, "")
	before, _, _ := ts.lists.counts()
	_, again := listBody(t, ts, prPath, "")
	after, _, _ := ts.lists.counts()
	assert.Equal(t, first, again)
	assert.Equal(t, before.hits+1, after.hits, "the second list is a hit")
	assert.Equal(t, before.builds, after.builds)
	assert.Len(t, decodeListed(t, first).Items, 3)

	// A Table, then JSON again, then the Table again: each its own.
	for range 2 {
		_, tb := listBody(t, ts, prPath, tableAccept)
		l := decodeListed(t, tb)
		assert.Equal(t, "Table", l.Kind)
		assert.Len(t, l.Rows, 3)
		_, js := listBody(t, ts, prPath, "application/json")
		l = decodeListed(t, js)
		assert.Equal(t, "PackageRevisionList", l.Kind)
		assert.Len(t, l.Items, 3)
	}
	// Selectors: each list its own answer, repeated or not.
	for range 2 {
		for _, p := range []string{"a", "b"} {
			_, data := listBody(t, ts, prPath+"?fieldSelector="+url.QueryEscape("spec.packageName="+p), "")
			l := decodeListed(t, data)
			require.Len(t, l.Items, 1)
			assert.Equal(t, p, l.Items[0].Spec.PackageName)
		}
		_, data := listBody(t, ts, prPath+"?labelSelector="+url.QueryEscape("no-such-label=x"), "")
		assert.Empty(t, decodeListed(t, data).Items)
	}
	// Another namespace lists nothing of default's.
	_, data := listBody(t, ts, "/apis/porch.kpt.dev/v1alpha1/namespaces/other/packagerevisions", "")
	assert.Empty(t, decodeListed(t, data).Items)

	// A write through the server: the next list has it.
	require.Equal(t, 201, ts.doJSON("POST", prPath, initPR("d", "ws"), nil))
	_, data = listBody(t, ts, prPath, "")
	assert.Len(t, decodeListed(t, data).Items, 4)
	_, data = listBody(t, ts, prPath, tableAccept)
	assert.Len(t, decodeListed(t, data).Rows, 4)
	_, data = listBody(t, ts, prPath+"?fieldSelector="+url.QueryEscape("spec.packageName=d"), "")
	assert.Len(t, decodeListed(t, data).Items, 1)
}

// gzip: a client that accepts it gets a compressed list when the server
// compresses lists and the list is large; the same JSON either way.
func TestListCacheGzip(t *testing.T) {
	ts := startServer(t, "", func(o *Options) { o.CompressLists, o.listGzipMin = true, 8<<10 })
	for i := range 20 {
		require.Equal(t, 201, ts.doJSON("POST", prPath, initPR(fmt.Sprintf("p%03d", i), "ws"), nil))
	}
	// No transparent decompression: see what is sent.
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	get := func(enc string) (*http.Response, []byte) {
		req, err := http.NewRequest("GET", ts.URL+prPath, nil)
		require.NoError(t, err)
		if enc != "" {
			req.Header.Set("Accept-Encoding", enc)
		}
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, data
	}
	resp, plain := get("")
	require.Greater(t, len(plain), 8<<10)
	assert.Empty(t, resp.Header.Get("Content-Encoding"))
	assert.Equal(t, fmt.Sprint(len(plain)), resp.Header.Get("Content-Length"))
	for range 2 {
		resp, gz := get("gzip, deflate")
		assert.Equal(t, "gzip", resp.Header.Get("Content-Encoding"))
		assert.Less(t, len(gz), len(plain)/4)
		zr, err := gzip.NewReader(bytes.NewReader(gz))
		require.NoError(t, err)
		unzipped, err := io.ReadAll(zr)
		require.NoError(t, err)
		assert.Equal(t, plain, unzipped)
	}
	resp, again := get("gzip;q=0")
	assert.Empty(t, resp.Header.Get("Content-Encoding"))
	assert.Equal(t, plain, again)
}

// Pages come from the list the first page was cut from, and a repeated
// first page from the cache: after the first list, paging lists no
// repository again.
func TestListPagingDoesNotList(t *testing.T) {
	var mu sync.Mutex
	lists := 0
	ts := startServer(t, "", func(o *Options) { o.Open = countingOpen(&mu, &lists) })
	for i := range 5 {
		require.Equal(t, 201, ts.doJSON("POST", prPath, initPR(fmt.Sprintf("p%d", i), "ws"), nil))
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return lists }
	// The repository's watcher (polling every 50ms) reports the creations
	// and the server lists each package's latest revision for them; wait
	// until that is done, so that only paging is counted.
	settle := func() int {
		for prev := -1; ; {
			n := count()
			if n == prev {
				return n
			}
			prev = n
			time.Sleep(300 * time.Millisecond)
		}
	}
	settle()
	_, data := listBody(t, ts, prPath+"?limit=2", "")
	page := decodeListed(t, data)
	require.Len(t, page.Items, 2)
	n := settle()
	var names []string
	for _, it := range page.Items {
		names = append(names, it.Metadata.Name)
	}
	for page.Metadata.Continue != "" {
		_, data = listBody(t, ts, prPath+"?limit=2&continue="+url.QueryEscape(page.Metadata.Continue), "")
		page = decodeListed(t, data)
		for _, it := range page.Items {
			names = append(names, it.Metadata.Name)
		}
	}
	assert.Len(t, names, 5)
	// The first page again, and the whole list: from the cache and the
	// listing.
	listBody(t, ts, prPath+"?limit=2", "")
	listBody(t, ts, prPath, "")
	assert.Equal(t, n, count(), "paging listed a repository again")
}

// countingOpen opens repositories as the server does and counts their
// List calls.
func countingOpen(mu *sync.Mutex, n *int) OpenFunc {
	return func(ctx context.Context, ns string, spec repository.Spec) (repository.Repository, error) {
		r, err := gitrepo.Open(ctx, spec, &gitrepo.Options{PollInterval: 50 * time.Millisecond})
		if err != nil {
			return nil, err
		}
		return repotest.Intercept(r, repotest.Funcs{
			List: func(ctx context.Context, next repository.Repository, opts repository.ListOptions) ([]revision.PackageRevision, error) {
				mu.Lock()
				*n++
				mu.Unlock()
				return next.List(ctx, opts)
			},
		}), nil
	}
}

// Another process or handle writing the repository: the next list shows
// it, also when the refs' files were old enough for their stamps to be
// trusted (the fast path of the Version).
func TestListCacheSeesOtherWriters(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	ts := startServer(t, "", nil)
	for _, p := range []string{"a", "b"} {
		require.Equal(t, 201, ts.doJSON("POST", prPath, initPR(p, "ws"), nil))
	}
	gitDir := filepath.Join(ts.dataDir, "git", "default.git")
	age := func() { ageRefs(t, gitDir) }
	names := func() []string {
		_, data := listBody(t, ts, prPath, "")
		var out []string
		for _, it := range decodeListed(t, data).Items {
			out = append(out, it.Spec.PackageName)
		}
		return out
	}
	age()
	assert.ElementsMatch(t, []string{"a", "b"}, names())
	assert.ElementsMatch(t, []string{"a", "b"}, names())
	// git, another process, removes the draft branch of b.
	bDraft := strings.TrimSpace(runGit(t, gitDir, "rev-parse", "refs/heads/drafts/b/ws"))
	runGit(t, gitDir, "update-ref", "-d", "refs/heads/drafts/b/ws")
	assert.ElementsMatch(t, []string{"a"}, names())
	age()
	names()
	// git packs the refs (same refs: same list), then adds b back.
	runGit(t, gitDir, "pack-refs", "--all")
	assert.ElementsMatch(t, []string{"a"}, names())
	age()
	names()
	runGit(t, gitDir, "update-ref", "refs/heads/drafts/b/ws", bDraft)
	assert.ElementsMatch(t, []string{"a", "b"}, names())
	// Another cad handle on the same repository creates c.
	age()
	names()
	ctx := context.Background()
	other, err := gitrepo.Open(ctx, repository.Spec{Name: "default", Type: repository.TypeGit,
		Git: &repository.GitSpec{Repo: gitDir, Branch: "main"}}, nil)
	require.NoError(t, err)
	defer other.Close()
	d, err := other.CreateDraft(ctx, revision.Key{Package: "c", Workspace: "ws"}, repository.CreateDraftOptions{})
	require.NoError(t, err)
	require.NoError(t, d.SetFile(revision.KptfileName, []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: c\n")))
	_, err = d.Commit(ctx, revision.CommitOptions{})
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"a", "b", "c"}, names())
}

// ageRefs sets the modification times of the refs' files of gitDir an
// hour back, as if nothing had been written for an hour.
func ageRefs(t *testing.T, gitDir string) {
	t.Helper()
	old := time.Now().Add(-time.Hour)
	paths := []string{filepath.Join(gitDir, "packed-refs")}
	filepath.WalkDir(filepath.Join(gitDir, "refs"), func(p string, d os.DirEntry, err error) error {
		if err == nil {
			paths = append(paths, p)
		}
		return nil
	})
	for _, p := range paths {
		if err := os.Chtimes(p, old, old); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
}

func runGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
	return string(out)
}

// Many clients listing at once, in JSON and as Tables, with and without
// selectors and pages, while revisions are created: every answer is of
// its own kind and selection, and once the writes end every list shows
// them all.
func TestListCacheConcurrent(t *testing.T) {
	ts := startServer(t, "", nil)
	for _, p := range []string{"a", "b", "c"} {
		require.Equal(t, 201, ts.doJSON("POST", prPath, initPR(p, "ws"), nil))
	}
	type query struct {
		path, accept string
		check        func(l listed) error
	}
	count := func(n int) bool { return n >= 3 && n <= 6 }
	queries := []query{
		{prPath, "", func(l listed) error {
			if l.Kind != "PackageRevisionList" || !count(len(l.Items)) {
				return fmt.Errorf("list: %s with %d items", l.Kind, len(l.Items))
			}
			return nil
		}},
		{prPath, tableAccept, func(l listed) error {
			if l.Kind != "Table" || !count(len(l.Rows)) || len(l.Items) != 0 {
				return fmt.Errorf("table: %s with %d rows", l.Kind, len(l.Rows))
			}
			return nil
		}},
		{prPath + "?fieldSelector=" + url.QueryEscape("spec.packageName=b"), "", func(l listed) error {
			if len(l.Items) != 1 || l.Items[0].Spec.PackageName != "b" {
				return fmt.Errorf("selected b: %+v", l.Items)
			}
			return nil
		}},
		{prPath + "?limit=1", "", func(l listed) error {
			if len(l.Items) != 1 || l.Metadata.Continue == "" {
				return fmt.Errorf("page: %d items, continue %q", len(l.Items), l.Metadata.Continue)
			}
			return nil
		}},
	}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 12 {
				q := queries[(g+i)%len(queries)]
				req, _ := http.NewRequest("GET", ts.URL+q.path, nil)
				if q.accept != "" {
					req.Header.Set("Accept", q.accept)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				data, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				var l listed
				if err == nil {
					err = json.Unmarshal(data, &l)
				}
				if err == nil {
					err = q.check(l)
				}
				if err != nil {
					t.Errorf("%s (%s): %v", q.path, q.accept, err)
					return
				}
			}
		})
	}
	wg.Go(func() {
		for _, p := range []string{"d", "e", "f"} {
			if code := ts.doJSON("POST", prPath, initPR(p, "ws"), nil); code != 201 {
				t.Errorf("create %s: %d", p, code)
			}
		}
	})
	wg.Wait()
	_, data := listBody(t, ts, prPath, "")
	assert.Len(t, decodeListed(t, data).Items, 6)
	_, data = listBody(t, ts, prPath, tableAccept)
	assert.Len(t, decodeListed(t, data).Rows, 6)
	st, _, _ := ts.lists.counts()
	assert.Positive(t, st.hits)
}

// A watch from the resourceVersion of a list served from the cache
// starts from that list, also when the server's snapshots had forgotten
// it: only the changes since come.
func TestListCacheWatchFromCachedList(t *testing.T) {
	ts := startServer(t, "", nil)
	for _, p := range []string{"a", "b"} {
		require.Equal(t, 201, ts.doJSON("POST", prPath, initPR(p, "ws"), nil))
	}
	_, data := listBody(t, ts, prPath, "")
	rv := decodeListed(t, data).Metadata.ResourceVersion
	// Other lists push it out of the snapshots.
	for i := range 70 {
		ts.snaps.put(nil)
		ts.snaps.keep(fmt.Sprint("other", i), nil)
	}
	_, ok := ts.snaps.get(rv)
	require.False(t, ok)
	_, data = listBody(t, ts, prPath, "")
	require.Equal(t, rv, decodeListed(t, data).Metadata.ResourceVersion)
	resp, err := http.Get(ts.URL + prPath + "?watch=true&resourceVersion=" + url.QueryEscape(rv))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	events := make(chan string, 16)
	go func() {
		dec := json.NewDecoder(resp.Body)
		for {
			var ev struct {
				Type   string `json:"type"`
				Object struct {
					Metadata struct {
						Name string `json:"name"`
					} `json:"metadata"`
				} `json:"object"`
			}
			if dec.Decode(&ev) != nil {
				close(events)
				return
			}
			events <- ev.Type + " " + ev.Object.Metadata.Name
		}
	}()
	ts.waitWatchers(t, 1)
	require.Equal(t, 201, ts.doJSON("POST", prPath, initPR("c", "ws"), nil))
	select {
	case ev := <-events:
		assert.Equal(t, "ADDED default.c.ws", ev, "the first event is the new revision's")
	case <-time.After(20 * time.Second):
		t.Fatal("no event")
	}
}

// A repository that is no longer served leaves no listing behind, and
// lists stop showing it.
func TestListingDroppedWithRepository(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	ts := startServer(t, "", nil)
	dir := filepath.Join(t.TempDir(), "extra.git")
	porchRepo(t, dir, 2, 1)
	repo := map[string]any{"apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "Repository",
		"metadata": map[string]any{"name": "extra"},
		"spec":     map[string]any{"type": "git", "git": map[string]any{"repo": dir, "branch": "main"}}}
	require.Equal(t, 201, ts.doJSON("POST", repoPath, repo, nil))
	kept := func() int {
		ts.prs.mu.Lock()
		defer ts.prs.mu.Unlock()
		n := 0
		for k := range ts.prs.listings {
			if k.name == "extra" {
				n++
			}
		}
		return n
	}
	_, data := listBody(t, ts, prPath, "")
	assert.Len(t, decodeListed(t, data).Items, 4) // 2 packages × (v1 + main)
	assert.Equal(t, 1, kept())
	code, body := ts.do("DELETE", repoPath+"/extra", "", nil)
	require.Equal(t, 200, code, "%s", body)
	assert.Equal(t, 0, kept())
	_, data = listBody(t, ts, prPath, "")
	assert.Empty(t, decodeListed(t, data).Items)
}

// A list in the cache is still authorized per request: a viewer gets it,
// a user without a role and an anonymous request do not.
func TestListCacheAuthorizes(t *testing.T) {
	ts := startServer(t, "", func(o *Options) {
		o.Tokens = Tokens{
			"tok-admin":  {Name: "admin", Groups: []string{"cad:admin"}},
			"tok-viewer": {Name: "viewer", Groups: []string{"cad:viewer"}},
			"tok-none":   {Name: "none"},
		}
	})
	get := func(token string) (int, []byte) {
		req, err := http.NewRequest("GET", ts.URL+prPath, nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, data
	}
	body, err := json.Marshal(initPR("a", "ws"))
	require.NoError(t, err)
	req, err := http.NewRequest("POST", ts.URL+prPath, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer tok-admin")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 201, resp.StatusCode)
	for range 2 {
		code, data := get("tok-viewer")
		require.Equal(t, 200, code)
		assert.Len(t, decodeListed(t, data).Items, 1)
	}
	st, _, _ := ts.lists.counts()
	require.Positive(t, st.hits)
	code, data := get("tok-none")
	assert.Equal(t, http.StatusForbidden, code)
	assert.NotContains(t, string(data), "default.a.ws")
	code, data = get("")
	assert.Equal(t, http.StatusUnauthorized, code)
	assert.NotContains(t, string(data), "default.a.ws")
}

// kubectl get asks for a Table, -o json for the list: repeated and
// interleaved, each gets its own, and a revision created in between shows
// in both.
func TestListCacheKubectl(t *testing.T) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("no kubectl")
	}
	ts := startServer(t, "", nil)
	k := newKubectl(t, ts.URL)
	for _, p := range []string{"a", "b"} {
		require.Equal(t, 201, ts.doJSON("POST", prPath, initPR(p, "ws"), nil))
	}
	check := func(want ...string) {
		t.Helper()
		for range 2 {
			table := k.ok("", "get", "packagerevisions")
			assert.Contains(t, table, "LIFECYCLE")
			var l listed
			require.NoError(t, json.Unmarshal([]byte(k.ok("", "get", "packagerevisions", "-o", "json")), &l))
			assert.Equal(t, "List", l.Kind)
			var names []string
			for _, it := range l.Items {
				names = append(names, it.Metadata.Name)
				assert.Contains(t, table, it.Metadata.Name)
			}
			assert.ElementsMatch(t, want, names)
			assert.Equal(t, len(want)+1, len(strings.Split(strings.TrimSpace(table), "\n")), table)
		}
	}
	check("default.a.ws", "default.b.ws")
	require.Equal(t, 201, ts.doJSON("POST", prPath, initPR("c", "ws"), nil))
	check("default.a.ws", "default.b.ws", "default.c.ws")
	st, _, _ := ts.lists.counts()
	assert.Positive(t, st.hits)
}

// Options.ListCacheBytes: negative turns the cache off, a bound too small
// for any list keeps none; lists are answered the same either way.
func TestListCacheOptions(t *testing.T) {
	for _, tc := range []struct {
		bytes int64
		off   bool
	}{{-1, true}, {64, false}} {
		t.Run(fmt.Sprint(tc.bytes), func(t *testing.T) {
			ts := startServer(t, "", func(o *Options) { o.ListCacheBytes = tc.bytes })
			require.Equal(t, 201, ts.doJSON("POST", prPath, initPR("a", "ws"), nil))
			for range 2 {
				_, data := listBody(t, ts, prPath, "")
				assert.Len(t, decodeListed(t, data).Items, 1)
			}
			if tc.off {
				assert.Nil(t, ts.lists)
				return
			}
			st, size, n := ts.lists.counts()
			assert.Zero(t, st.hits)
			assert.Equal(t, 2, st.builds)
			assert.Zero(t, size)
			assert.Zero(t, n)
		})
	}
}

// A build that panics fails its own request with an error, not the
// process, and the requests that waited for it build their own.
func TestListCacheBuildPanics(t *testing.T) {
	c := newListCache(1 << 20)
	release := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		_, err := c.do(context.Background(), "req", "state", func() (*listCacheEntry, bool, error) {
			<-release
			panic("boom")
		})
		errc <- err
	}()
	require.Eventually(t, func() bool { st, _, _ := c.counts(); return st.builds == 1 }, 10*time.Second, time.Millisecond)
	got := make(chan *listCacheEntry, 1)
	go func() {
		e, err := c.do(context.Background(), "req", "state", func() (*listCacheEntry, bool, error) {
			return &listCacheEntry{body: []byte("mine")}, true, nil
		})
		assert.NoError(t, err)
		got <- e
	}()
	require.Eventually(t, func() bool { st, _, _ := c.counts(); return st.shared == 1 }, 10*time.Second, time.Millisecond)
	close(release)
	require.ErrorContains(t, <-errc, "panicked")
	assert.Equal(t, "mine", string((<-got).body))
}
