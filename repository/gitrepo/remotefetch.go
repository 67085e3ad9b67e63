package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/sideband"
	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo/internal/gitobj"
	"github.com/configasdata/cad/repository/gitrepo/internal/refstore"
)

// A read that finds the mirror behind the remote brings it up to date
// with a staged fetch, so that no lock others need is held while the
// network answers:
//
//  1. under the read lock, the mirror's refs are noted (the base);
//  2. holding no store lock, the remote is asked for its refs, and the
//     objects the mirror lacks are fetched into staging (a temporary file
//     in objects/pack of an on-disk mirror, memory for one in memory:
//     gitobj.PackStaging, whose format its doc.go describes),
//     the mirror's refs sent as haves, and a whole pack asked for (not
//     thin), so that it is checked and indexed there too;
//  3. under the write lock, for a moment and with no network: when the
//     mirror's refs are still the base, the staged pack is added to the
//     objects (on disk, two renames; content-addressed, so no reader sees
//     a change), every ref
//     target is checked to be there, and the refs are set to what the
//     remote advertised, pruning those it no longer has. When the mirror
//     moved meanwhile (a write of this process, another process's fetch),
//     nothing of the refs is set and it starts over: a mirror never goes
//     back to an older state of the remote.
//
// One staged fetch runs at a time per remote: reads that find the mirror
// stale meanwhile join it (fetchGroup), and on disk cad.lock's fetch byte
// (refstore.RoleFetch, apart from its store byte) keeps other processes' fetches of
// the same mirror out, so that they find the mirror current after it.
// A write syncs the mirror with the same fetch before it plans
// (syncForWrite, pushwrite.go).

// fetchGroup is the staged fetch of a remote under way, which the reads
// that need it join.
//
// It is not a singleflight.Group: besides sharing one call's result, a
// fetch is cancelled when the last caller waiting for it leaves, the next
// one waits for a cancelled one to end, and Close stops them all; with
// singleflight each of these would still need the waiters, the cancel
// and the running calls kept here, plus a way to tell which call a
// caller joined.
type fetchGroup struct {
	mu     sync.Mutex
	call   *fetchCall // the fetch a read joins; nil when none or being cancelled
	last   *fetchCall // the fetch started last, which the next one waits for
	closed bool
	flock  *refstore.FileLock // cad.lock's fetch role of an on-disk mirror, made at first use
	// running are the fetches not yet ended, among them those cancelled
	// when their last reader left.
	running map[*fetchCall]bool
}

// fetchCall is one staged fetch. done is closed once err and asked are
// set; asked is when the remote was asked for the refs the mirror then
// held (zero on an error).
type fetchCall struct {
	done    chan struct{}
	err     error
	asked   time.Time
	waiters int
	cancel  context.CancelCauseFunc
}

// errFetchClosed ends a fetch under way when its Repository is closed.
var errFetchClosed = fmt.Errorf("%w: the repository was closed during a fetch", repository.ErrClosed)

// fetchMaxTries bounds how often a staged fetch starts over because the
// mirror moved while it was on the network.
const fetchMaxTries = 3

// refresh brings the mirror up to date with a staged fetch, joining the
// one under way if any, and returns when the remote was asked for the
// refs the mirror was set to (or found holding). It returns ctx's error as
// soon as ctx ends; the fetch goes on while another caller waits for it,
// and is cancelled when none does. newView makes a view of st.
func (rm *remote) refresh(ctx context.Context, st *store, newView func() *view) (time.Time, error) {
	g := &rm.fetches
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return time.Time{}, errFetchClosed
	}
	c := g.call
	if c == nil {
		fctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
		c = &fetchCall{done: make(chan struct{}), cancel: cancel}
		prev := g.last
		g.call, g.last = c, c
		if g.running == nil {
			g.running = map[*fetchCall]bool{}
		}
		g.running[c] = true
		if st.gitDir != "" && g.flock == nil {
			g.flock = refstore.NewFileLock(st.gitDir, refstore.RoleFetch)
		}
		fl := g.flock
		go func() {
			if prev != nil {
				// One at a time: a fetch cancelled when its last reader
				// left ends first (at once on the network).
				<-prev.done
			}
			var asked time.Time
			err := fctx.Err()
			if err == nil {
				asked, err = rm.stagedFetch(fctx, st, newView, fl)
			}
			if err != nil && fctx.Err() != nil {
				err = context.Cause(fctx)
			}
			g.mu.Lock()
			c.asked, c.err = asked, err
			if g.call == c {
				g.call = nil
			}
			if g.last == c {
				g.last = nil
			}
			delete(g.running, c)
			g.mu.Unlock()
			cancel(nil)
			close(c.done)
		}()
	}
	c.waiters++
	g.mu.Unlock()
	select {
	case <-c.done:
		return c.asked, c.err
	case <-ctx.Done():
		g.mu.Lock()
		if c.waiters--; c.waiters == 0 {
			// No one waits: the fetch ends, and a read that comes now
			// starts another rather than join one being cancelled.
			c.cancel(context.Canceled)
			if g.call == c {
				g.call = nil
			}
		}
		g.mu.Unlock()
		return time.Time{}, ctx.Err()
	}
}

// stopFetches ends the staged fetch under way, if any, and waits until it
// has stopped (it ends at once on the network, and holds a store lock
// only for a local step); later refreshes return an error matching
// repository.ErrClosed.
func (rm *remote) stopFetches() {
	g := &rm.fetches
	g.mu.Lock()
	g.closed = true
	var calls []*fetchCall
	for c := range g.running {
		calls = append(calls, c)
	}
	g.mu.Unlock()
	for _, c := range calls {
		c.cancel(errFetchClosed)
		<-c.done
	}
	g.mu.Lock()
	if g.flock != nil {
		g.flock.Close()
		g.flock = nil
	}
	g.mu.Unlock()
}

// errMirrorMoved: the mirror's refs changed while a staged fetch was on
// the network.
var errMirrorMoved = errors.New("the mirror moved during the fetch")

// stagedFetch runs one staged fetch (see above), holding fl (nil in
// memory) throughout, and returns when the remote was asked for the refs
// it set.
func (rm *remote) stagedFetch(ctx context.Context, st *store, newView func() *view, fl *refstore.FileLock) (time.Time, error) {
	if fl != nil {
		if err := fl.Lock(ctx, true); err != nil {
			return time.Time{}, err
		}
		defer fl.Unlock()
	}
	for try := 1; ; try++ {
		if err := ctx.Err(); err != nil {
			return time.Time{}, err
		}
		asked, err := rm.stagedFetchOnce(ctx, st, newView)
		if errors.Is(err, errMirrorMoved) {
			if try < fetchMaxTries {
				continue
			}
			err = fmt.Errorf("%w: fetch from %s: %w %d times", repository.ErrUnavailable, rm.redactedURL, err, try)
		}
		if err == nil {
			rm.markSynced(asked)
		}
		return asked, err
	}
}

// stagedFetchOnce runs the three steps of a staged fetch once.
func (rm *remote) stagedFetchOnce(ctx context.Context, st *store, newView func() *view) (time.Time, error) {
	const what = "fetch from "
	read, write := st.read, st.write
	// 1. The base: the mirror's refs now.
	var base map[plumbing.ReferenceName]plumbing.Hash
	damaged := false
	if err := read(ctx, func() error {
		var err error
		base, err = mirroredRefs(newView(), &damaged)
		return err
	}); err != nil {
		return time.Time{}, err
	}

	// 2. The network, holding no store lock.
	asked := time.Now()
	sess, ar, remote, closeSess, err := rm.uploadPack(ctx)
	if err != nil {
		return time.Time{}, err
	}
	defer closeSess()
	if !damaged && sameRefs(base, remote) {
		return asked, nil
	}
	var wants, haves []plumbing.Hash
	if err := read(ctx, func() error {
		v := newView()
		seen := map[plumbing.Hash]bool{}
		for _, h := range remote {
			if !seen[h] && !v.has(h) {
				wants = append(wants, h)
			}
			seen[h] = true
		}
		for _, h := range base {
			if v.has(h) {
				haves = append(haves, h)
			}
		}
		return nil
	}); err != nil {
		return time.Time{}, err
	}
	var stage *gitobj.PackStaging
	if len(wants) > 0 {
		req := packp.NewUploadPackRequestFromCapabilities(ar.Capabilities)
		if ar.Capabilities.Supports(capability.NoProgress) {
			_ = req.Capabilities.Set(capability.NoProgress)
		}
		// A whole pack, no deltas against objects it leaves out: it is
		// indexed before the lock, on its own.
		req.Capabilities.Delete(capability.ThinPack)
		req.Wants = wants
		req.Haves = haves
		stage, err = gitobj.NewPackStaging(st.gitDir)
		if err != nil {
			return time.Time{}, fmt.Errorf("fetch from %s: staging: %w", rm.redactedURL, err)
		}
		defer stage.Close()
		if err := rm.fetchPack(ctx, sess, req, stage); err != nil {
			return time.Time{}, err
		}
		var syncFile func(*os.File) error
		if st.fsrefs != nil {
			syncFile = st.fsrefs.SyncFile
		}
		if err := stage.Prepare(syncFile); err != nil {
			return time.Time{}, fmt.Errorf("%w: fetch from %s: the pack: %w", repository.ErrUnavailable, rm.redactedURL, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return time.Time{}, err
	}

	// 3. The local step, under the write lock.
	return asked, write(ctx, func() error {
		v := newView()
		dmg := false
		now, err := mirroredRefs(v, &dmg)
		if err != nil {
			return err
		}
		if !sameRefs(now, base) || dmg != damaged {
			if !dmg && sameRefs(now, remote) {
				// Another fetch (a read's, beside a write's) has set
				// the mirror to what this one was asked: it is done.
				return nil
			}
			return errMirrorMoved
		}
		if stage != nil {
			var syncDir func(string) error
			if st.fsrefs != nil {
				syncDir = st.fsrefs.SyncDir
			}
			if err := stage.Install(st.s, syncDir); err != nil {
				return fmt.Errorf("fetch from %s: adding the pack: %w", rm.redactedURL, err)
			}
			rm.landed.Store(true) // a pack more: maintenance.go
		}
		var updates []refstore.RefUpdate
		for name, h := range remote {
			if !v.has(h) {
				return fmt.Errorf("%w: fetch from %s: %s is %s, which the remote did not send", repository.ErrUnavailable, rm.redactedURL, name, h)
			}
			if base[name] != h {
				updates = append(updates, refstore.RefUpdate{Name: name, Old: base[name], New: h})
			}
		}
		for name, h := range base {
			if _, ok := remote[name]; !ok {
				updates = append(updates, refstore.RefUpdate{Name: name, Old: h})
			}
		}
		if damaged && st.fsrefs != nil {
			n, err := st.fsrefs.DropDamaged()
			if err != nil {
				return err
			}
			if n > 0 {
				st.warn("dropped damaged refs of the local mirror", "refs", n)
			}
		}
		return applyRefs(v, updates, false)
	})
}

// fetchPack asks the remote, on sess, for the objects req wants, and
// writes the pack it sends to w. It ends with ctx, returning ctx's error.
func (rm *remote) fetchPack(ctx context.Context, sess transport.UploadPackSession, req *packp.UploadPackRequest, w io.Writer) error {
	body, err := sess.UploadPack(ctx, req)
	if err == nil {
		_, err = io.Copy(w, demuxed(req.Capabilities, body))
		_ = body.Close()
	}
	if cerr := ctx.Err(); err != nil && cerr != nil {
		return cerr
	}
	if err != nil {
		return rm.classify("fetch from "+rm.redactedURL, err)
	}
	return nil
}

// mirroredRefs returns the refs of v under mirrorPrefixes, setting
// *damaged when one was left out as damaged.
func mirroredRefs(v *view, damaged *bool) (map[plumbing.ReferenceName]plumbing.Hash, error) {
	warn := v.damaged
	v.damaged = func(err error) {
		*damaged = true
		if warn != nil {
			warn(err)
		}
	}
	defer func() { v.damaged = warn }()
	out := map[plumbing.ReferenceName]plumbing.Hash{}
	for _, p := range mirrorPrefixes {
		refs, err := v.under(p)
		if err != nil {
			return nil, err
		}
		for name, h := range refs {
			out[name] = h
		}
	}
	return out, nil
}

func sameRefs(a, b map[plumbing.ReferenceName]plumbing.Hash) bool {
	if len(a) != len(b) {
		return false
	}
	for name, h := range a {
		if g, ok := b[name]; !ok || g != h {
			return false
		}
	}
	return true
}

// demuxed returns the pack data of an upload-pack response, out of its
// side-band channels when caps asked for them.
func demuxed(caps *capability.List, r io.Reader) io.Reader {
	var t sideband.Type
	switch {
	case caps.Supports(capability.Sideband64k):
		t = sideband.Sideband64k
	case caps.Supports(capability.Sideband):
		t = sideband.Sideband
	default:
		return r
	}
	return sideband.NewDemuxer(t, r)
}

// readFetched runs fn on the mirror once a staged fetch has brought it up
// to date, for a read that asked the remote for its refs at start (refs)
// and found the mirror behind. fn runs under the read lock on the mirror
// as the fetch left it when that holds refs, or a state the remote was
// asked for after start (the read sees every write that ended before it
// began); else, the fetch it joined having asked before start, it fetches
// again.
func (r *Repository) readFetched(ctx context.Context, start time.Time, refs map[plumbing.ReferenceName]plumbing.Hash, fn func(v *view) error) error {
	for try := 1; ; try++ {
		asked, err := r.remote.refresh(ctx, r.st, r.newView)
		if err != nil {
			return err
		}
		ran := false
		err = r.st.read(ctx, func() error {
			v := r.newView()
			if asked.Before(start) && try < fetchMaxTries {
				if ok, err := mirrors(v, refs); err != nil || !ok {
					return err
				}
			}
			ran = true
			return fn(v)
		})
		if ran || err != nil {
			return err
		}
	}
}
