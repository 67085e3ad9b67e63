package apiserver

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/configasdata/cad/examples/internal/porchapi"
	"github.com/configasdata/cad/internal/lru"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
)

// DefaultListCacheBytes bounds the list response cache when
// Options.ListCacheBytes is zero: room for dozens of lists of several
// thousand PackageRevisions (a list of 2,400 is 1.2 MB of JSON, 170 KB
// with gzip).
const DefaultListCacheBytes = 64 << 20

// gzipMinBytes is the smallest list body sent compressed to a client that
// accepts gzip, kube-apiserver's threshold.
const gzipMinBytes = 128 << 10

// snapEntryBytes is what an entry's snapshot costs per object, counted
// in its size: a map slot with its key (the objects are the listings').
const snapEntryBytes = 96

// tableTTL is how long a cached Table stays served: its Age column is
// computed when it is built.
const tableTTL = time.Second

// listCache keeps the encoded bodies of recent PackageRevision lists. An
// entry is keyed by the normalised request (namespace, selectors, limit,
// continue token, JSON or Table) and holds the state it was built from:
// the registration and Version of every repository the list covers. A
// request whose repositories are all at that state gets the body as it
// was written, without listing, filtering or encoding anything; one that
// finds another state builds the list again and replaces the entry.
// Requests that find the same missing entry at the same time share one
// build. A body that came with warnings (a repository not open, a list
// that failed) is never kept. Bounded: the bodies, their gzip forms (made
// on the first request that accepts gzip) and their snapshots' maps
// (counted at snapEntryBytes an object) hold at most max bytes,
// the least recently used going first; an entry larger than max/4 is not
// kept. Safe for concurrent use.
type listCache struct {
	max     int64
	gzipMin int // smallest body sent compressed

	mu      sync.Mutex                          // held around a sequence of entries calls and for stats
	entries *lru.Cache[string, *listCacheEntry] // by request, cost e.size; nil when max <= 0
	flights singleflight.Group                  // the running build of each request and state
	stats   listCacheStats

	checks stateChecks
}

// listCacheStats counts what the cache did, for tests: shared is the
// requests that joined another's build (misses that did not build).
type listCacheStats struct {
	hits, builds, shared, evictions int
	misses                          int // requests that started or joined a build
}

type listCacheEntry struct {
	req, state string
	body       []byte
	expires    time.Time // zero: kept while the state holds
	// rv names the list for later pages and watches; snap is what the
	// server's snapshots hold for it, given back to them on a hit.
	rv   string
	snap map[string]*porchapi.PackageRevision
	size int64 // body, gz and snapshot map, as counted in the cache's size

	gzOnce sync.Once
	gz     []byte
}

// listFlight is what one build of a missing entry gives the requests that
// waited for it.
type listFlight struct {
	entry *listCacheEntry // nil when the build's result was not kept
}

func newListCache(max int64) *listCache {
	return &listCache{max: max, gzipMin: gzipMinBytes, entries: lru.New[string, *listCacheEntry](max, max/4)}
}

// get returns the entry of req at state, if it is kept and fresh.
func (c *listCache) get(req, state string, now time.Time) *listCacheEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries.Get(req)
	if !ok || e.state != state || (!e.expires.IsZero() && now.After(e.expires)) {
		return nil
	}
	c.stats.hits++
	return e
}

// do returns the entry of req at state: the kept one, the one another
// request is building (after waiting for it), or the one build makes for
// this request. build reports whether its entry may be kept; an entry
// that is not kept is this request's alone, and the requests that waited
// for it build their own.
func (c *listCache) do(ctx context.Context, req, state string, build func() (*listCacheEntry, bool, error)) (*listCacheEntry, error) {
	if e := c.get(req, state, time.Now()); e != nil {
		return e, nil
	}
	key := req + "\x00" + state
	// Only the caller whose function runs builds; the others wait for it
	// (or for their context) and share its entry when it was kept.
	var ran bool
	var mine *listCacheEntry
	ch := c.flights.DoChan(key, func() (res any, err error) {
		ran = true
		c.mu.Lock()
		c.stats.builds++
		c.mu.Unlock()
		defer func() {
			// A panic in build must not crash the process through
			// DoChan; it fails this request and the waiters build.
			if p := recover(); p != nil {
				res, err = &listFlight{}, fmt.Errorf("list build panicked: %v", p)
			}
		}()
		e, keep, err := build()
		mine = e
		f := &listFlight{}
		if err == nil && keep && e != nil {
			c.mu.Lock()
			e.req, e.state = req, state
			if c.put(e) {
				f.entry = e
			}
			c.mu.Unlock()
		}
		return f, err
	})
	// Counted once this request has started or joined the flight.
	c.mu.Lock()
	c.stats.misses++
	c.mu.Unlock()
	var r singleflight.Result
	select {
	case r = <-ch:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if ran {
		return mine, r.Err
	}
	if f, _ := r.Val.(*listFlight); f != nil && f.entry != nil {
		return f.entry, nil
	}
	e, _, err := build()
	return e, err
}

// put keeps e, replacing the entry of its request (which goes also when
// e is not kept); c.mu is held. It reports false when e is too large to
// keep.
func (c *listCache) put(e *listCacheEntry) bool {
	e.size = int64(len(e.body) + len(e.snap)*snapEntryBytes)
	return c.keep(e)
}

// keep puts e at its size, counting the entries it pushes out; c.mu is
// held.
func (c *listCache) keep(e *listCacheEntry) bool {
	c.entries.Remove(e.req)
	before := c.entries.Len()
	kept := c.entries.Put(e.req, e, e.size)
	if kept {
		before++
	}
	c.stats.evictions += before - c.entries.Len()
	return kept
}

// gzipped returns e's body compressed, made on the first call and
// counted in the cache's size while e is kept.
func (c *listCache) gzipped(e *listCacheEntry) []byte {
	e.gzOnce.Do(func() {
		var buf bytes.Buffer
		buf.Grow(len(e.body) / 8)
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
		zw.Write(e.body)
		zw.Close()
		e.gz = buf.Bytes()
		c.mu.Lock()
		if cur, ok := c.entries.Get(e.req); ok && cur == e {
			e.size += int64(len(e.gz))
			c.keep(e)
		}
		c.mu.Unlock()
	})
	return e.gz
}

// counts returns the cache's statistics and size.
func (c *listCache) counts() (listCacheStats, int64, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.stats
	st.shared = st.misses - st.builds
	return st, c.entries.Cost(), c.entries.Len()
}

// acceptsGzip reports whether the request's Accept-Encoding allows gzip.
func acceptsGzip(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept-Encoding") {
		for _, part := range strings.Split(v, ",") {
			name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
			if !strings.EqualFold(strings.TrimSpace(name), "gzip") {
				continue
			}
			if q, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
				if f, err := strconv.ParseFloat(q, 64); err == nil && f == 0 {
					return false
				}
			}
			return true
		}
	}
	return false
}

// writeListBody writes a list body with the headers of every JSON answer
// and its length, compressed when the client accepts gzip, the server
// compresses lists and the body is large enough.
func (s *Server) writeListBody(w http.ResponseWriter, r *http.Request, e *listCacheEntry) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-cache, private")
	body := e.body
	if s.opts.CompressLists && s.lists != nil && len(body) >= s.lists.gzipMin {
		h.Add("Vary", "Accept-Encoding")
		if acceptsGzip(r) {
			body = s.lists.gzipped(e)
			h.Set("Content-Encoding", "gzip")
		}
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	w.Write(body)
}

// entryGen numbers registrations, so that a list cache state names one.
var entryGen atomic.Uint64

// version returns the Version of e's repository; ok is false when it has
// none (it cannot be opened, or is not a repository.Versioner). A git
// repository on disk is read through its versionCache: a stat of its refs
// when they did not change, without opening the repository; otherwise
// the repository is acquired in ctx's scope.
func (s *Server) version(ctx context.Context, e *repoEntry) (v string, ok bool, err error) {
	vc := e.versions()
	if vc != nil {
		if v, ok := vc.cached(); ok {
			return v, true, nil
		}
	}
	repo, err := s.acquire(ctx, e)
	if err != nil {
		return "", false, err
	}
	switch r := repo.(type) {
	case *gitrepo.Repository:
		if vc = e.versions(); vc != nil {
			v, err = vc.Version(ctx, r)
		} else {
			v, err = r.Version(ctx)
		}
	case repository.Versioner:
		v, err = r.Version(ctx)
	default:
		return "", false, nil
	}
	return v, true, err
}

// listState returns the state a PackageRevision list of rq depends on:
// the registration and Version of every repository it covers. ok is
// false when the list is not to be cached: another resource, the caches
// turned off, a repository not open, without a Version or whose Version
// fails.
//
// Concurrent requests share the reading of the Versions, but never one
// that started before they arrived: each sees every write that ended
// before it came.
func (s *Server) listState(ctx context.Context, rq *request, lo *listOptions) (string, bool) {
	if rq.def.gr != grPackageRevisions || s.lists == nil || s.prs.max <= 0 {
		return "", false
	}
	repoSel, _ := lo.field.RequiresExactMatch("spec.repository")
	return s.lists.checks.check(ctx, rq.ns+"\x00"+repoSel, func() (string, bool) {
		return s.readState(ctx, rq.ns, repoSel)
	})
}

// readState reads the state of the lists of namespace ns ("" for all) of
// repository repoSel ("" for all); see listState.
func (s *Server) readState(ctx context.Context, ns, repoSel string) (string, bool) {
	var b strings.Builder
	for _, e := range s.entries(ns) {
		if repoSel != "" && e.name != repoSel {
			continue
		}
		v, ok, err := s.version(ctx, e)
		if !ok || err != nil {
			return "", false
		}
		b.WriteString(strconv.FormatUint(e.gen, 10))
		b.WriteByte(' ')
		b.WriteString(v)
		b.WriteByte('\n')
	}
	return b.String(), true
}

// listRequestKey is the normalised request of a list: what its body
// depends on besides the repositories' state.
func listRequestKey(rq *request, lo *listOptions, table bool) string {
	format := "json"
	if table {
		format = "table"
	}
	return strings.Join([]string{rq.def.gr.String(), rq.ns, lo.label.String(), lo.field.String(),
		strconv.FormatInt(lo.limit, 10), lo.continueToken, format}, "\x00")
}

// stateChecks shares the reading of list states between concurrent
// requests: a request joins a reading that started after it arrived, or
// waits for the running one to end and then joins (or starts) the next.
// So every request gets a state read after it arrived, and N concurrent
// requests read it about twice instead of N times.
type stateChecks struct {
	seq atomic.Uint64
	mu  sync.Mutex
	cur map[string]*stateCheck // the running reading of each key
	// reads counts the readings, for tests.
	reads int
}

type stateCheck struct {
	start uint64 // its place in seq
	done  chan struct{}
	state string
	ok    bool
	// waiters counts the requests that waited for it (under
	// stateChecks.mu), for tests.
	waiters int
}

// check returns the result of a read of key that started after the call
// began; read reads it.
func (sc *stateChecks) check(ctx context.Context, key string, read func() (string, bool)) (string, bool) {
	arrived := sc.seq.Add(1)
	for {
		sc.mu.Lock()
		c := sc.cur[key]
		if c == nil {
			if sc.cur == nil {
				sc.cur = map[string]*stateCheck{}
			}
			c = &stateCheck{start: sc.seq.Add(1), done: make(chan struct{})}
			sc.cur[key] = c
			sc.reads++
			sc.mu.Unlock()
			func() {
				defer func() {
					sc.mu.Lock()
					delete(sc.cur, key)
					sc.mu.Unlock()
					close(c.done)
				}()
				c.state, c.ok = read()
			}()
			return c.state, c.ok
		}
		c.waiters++
		sc.mu.Unlock()
		select {
		case <-c.done:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			return "", false
		}
		if c.start > arrived {
			return c.state, c.ok
		}
	}
}
