package gitrepo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo/internal/refstore"
)

// A write to a remote holds the store's write lock only for its local
// steps, so that reads of the mirror (of this process and of others
// sharing the CacheDir) go on while it is on the network:
//
//  1. the writers of the remote take turns (writeGate: in this process a
//     channel of one; on disk also cad.lock's push byte
//     (refstore.RolePush), apart from its store byte, for the writers of
//     other processes). It is no store lock: no read waits for it;
//  2. the mirror is brought up to date with a staged fetch, as a read
//     does, holding no store lock (syncForWrite);
//  3. under the write lock, with no network: the plan runs on the
//     mirror, writing its objects (content-addressed: no ref names them
//     yet), and the pack of the objects to push is encoded into memory;
//  4. holding no store lock, the pack and the ref updates, with their
//     expected old values, are pushed in one atomic push; when the
//     remote moved since the plan, the write starts over at 2;
//  5. under the write lock, for a moment: the refs the remote took are
//     set in the mirror, those still at their old values (a fetch of a
//     read may have brought the push in already). When a ref moved
//     elsewhere meanwhile (a fetch brought a later write of the remote),
//     none is set: the mirror stays at a state the remote had, which the
//     next fetch brings forward.
//
// A crash or an error between 4 and 5 leaves the mirror's refs as they
// were (an older state of the remote, which the next fetch repairs) and
// objects no ref names; the mirror is never ahead of the remote, and a
// ref never names an object it lacks.

// writeGate serialises the writes to a remote.
type writeGate struct {
	// turn holds a token while a write runs; a channel so that waiting
	// for it ends with the waiter's context.
	turn chan struct{}
	// mu guards the rest.
	mu     sync.Mutex
	closed bool
	cancel context.CancelCauseFunc // ends the write running
	flock  *refstore.FileLock      // cad.lock's push role of an on-disk mirror, made at first use
}

// errWriteClosed ends a write under way when its Repository is closed.
var errWriteClosed = fmt.Errorf("%w: the repository was closed during a write", repository.ErrClosed)

// beginWrite waits for the turn of a write to the remote, in this process
// and (gitDir set) among the processes sharing the mirror, and returns
// the context the write runs in (which Close ends too) and what ends the
// turn. It returns ctx's error when ctx ends first, and an error matching
// repository.ErrClosed once the Repository is closed.
func (rm *remote) beginWrite(ctx context.Context, gitDir string) (context.Context, func(), error) {
	g := &rm.writes
	select {
	case g.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		<-g.turn
		return nil, nil, errWriteClosed
	}
	wctx, cancel := context.WithCancelCause(ctx)
	g.cancel = cancel
	if gitDir != "" && g.flock == nil {
		g.flock = refstore.NewFileLock(gitDir, refstore.RolePush)
	}
	fl := g.flock
	g.mu.Unlock()
	end := func() {
		g.mu.Lock()
		g.cancel = nil
		g.mu.Unlock()
		cancel(nil)
		<-g.turn
	}
	if fl != nil {
		if err := fl.Lock(wctx, true); err != nil {
			if ctx.Err() == nil && wctx.Err() != nil {
				err = context.Cause(wctx)
			}
			end()
			return nil, nil, err
		}
		inner := end
		end = func() {
			fl.Unlock()
			inner()
		}
	}
	return wctx, end, nil
}

// stopWrites ends the write under way, if any (it ends at once on the
// network, and holds a store lock only for a local step), and waits until
// it has ended; later writes return an error matching
// repository.ErrClosed.
func (rm *remote) stopWrites() {
	g := &rm.writes
	g.mu.Lock()
	g.closed = true
	if g.cancel != nil {
		g.cancel(errWriteClosed)
	}
	g.mu.Unlock()
	g.turn <- struct{}{}
	g.mu.Lock()
	if g.flock != nil {
		g.flock.Close()
		g.flock = nil
	}
	g.mu.Unlock()
	<-g.turn
}

// syncForWrite brings the mirror up to date for a write with a staged
// fetch of its own, holding no store lock. It takes neither a read's
// fetch under way nor the fetch role of cad.lock: a read's fetch stalled on the
// network must not hold up a write, and two staged fetches may run at
// once (each sets the refs only when the mirror is still as it found
// it). The push checks the remote's refs anyway: this spares pushes
// planned on a stale mirror.
func (rm *remote) syncForWrite(ctx context.Context, st *store, newView func() *view) error {
	for try := 1; ; try++ {
		asked, err := rm.stagedFetchOnce(ctx, st, newView)
		if errors.Is(err, errMirrorMoved) && try < fetchMaxTries {
			continue
		}
		if errors.Is(err, errMirrorMoved) {
			err = fmt.Errorf("%w: fetch from %s: %w %d times", repository.ErrUnavailable, rm.redactedURL, err, try)
		}
		if err != nil {
			return err
		}
		rm.markSynced(asked)
		return nil
	}
}

// updateRemote runs one attempt of a write to a remote (see above). It
// returns an error matching refstore.ErrRetry when the remote moved since
// the plan.
func (r *Repository) updateRemote(ctx context.Context, plan func(v *view) (*txn, error)) error {
	wctx, end, err := r.remote.beginWrite(ctx, r.st.gitDir)
	if err != nil {
		return err
	}
	defer end()
	err = r.updateRemoteTurn(wctx, plan)
	if err != nil && ctx.Err() == nil && wctx.Err() != nil {
		// Ended by Close.
		err = fmt.Errorf("%w (%w)", context.Cause(wctx), err)
	}
	return err
}

func (r *Repository) updateRemoteTurn(ctx context.Context, plan func(v *view) (*txn, error)) error {
	if err := r.remote.syncForWrite(ctx, r.st, r.newView); err != nil {
		return err
	}
	var (
		t       *txn
		pack    []byte
		written []plumbing.Hash
	)
	err := r.st.write(ctx, func() error {
		v := r.newView()
		var err error
		t, err = plan(v)
		if err != nil || t == nil || len(t.updates) == 0 {
			t = nil
			return err
		}
		written = v.written
		pack, err = encodePack(v, t)
		return err
	})
	if err != nil || t == nil {
		return err
	}
	defer r.written()
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := r.remote.push(ctx, pack, t); err != nil {
		return err
	}
	refstore.Fault("remote-pushed")
	// The remote took it: mirror it, even when ctx has ended since (the
	// step is local and short; Close waits for it).
	return r.st.write(context.WithoutCancel(ctx), func() error {
		v := r.newView()
		v.written = written
		return applyPushed(v, t)
	})
}

// needsPack reports whether a push of t sends a pack: unless every
// command deletes its ref.
func (t *txn) needsPack() bool {
	for _, u := range t.updates {
		if !u.New.IsZero() {
			return true
		}
	}
	for _, u := range t.keeps {
		if !u.New.IsZero() {
			return true
		}
	}
	return false
}

// encodePack returns the pack of the objects written through v (whole
// objects, no deltas), or nil when a push of t sends none. The store is
// locked.
func encodePack(v *view, t *txn) ([]byte, error) {
	if !t.needsPack() {
		return nil, nil
	}
	var b bytes.Buffer
	if _, err := packfile.NewEncoder(&b, v.s, false).Encode(dedupe(v.written), 0); err != nil {
		return nil, fmt.Errorf("encoding the pack to push: %w", err)
	}
	return b.Bytes(), nil
}

// applyPushed sets in the mirror v the refs of t, which the remote took:
// those still at their old values. A ref at its new value already was
// brought in by a fetch that saw the push; when one is at another value, a
// fetch brought a later state of the remote, and nothing is set (the
// mirror holds a state the remote had). The write lock is held.
func applyPushed(v *view, t *txn) error {
	var todo []refstore.RefUpdate
	for _, u := range t.updates {
		cur, _, err := v.ref(u.Name)
		if err != nil {
			return err
		}
		switch cur {
		case u.Old:
			todo = append(todo, u)
		case u.New:
		default:
			return nil
		}
	}
	if len(todo) == 0 {
		return nil
	}
	return applyRefs(v, todo, true)
}
