package memrepo

import (
	"context"
	"errors"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

func errorsIs(err, target error) bool { return errors.Is(err, target) }

// watch is one running Watch: a queue the writer appends to under r.mu and
// the watching goroutine drains.
type watch struct {
	opts   repository.ListOptions
	queue  []repository.Event
	wake   chan struct{}
	closed bool
}

func (w *watch) close() {
	w.closed = true
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// notify queues an event for every watch that selects rec, and records
// that rec's package was written; r.mu held.
func (r *Repository) notify(t repository.EventType, rec *record) {
	if r.touched != nil {
		r.touched[rec.meta.Key.Package] = true
	}
	for w := range r.watches {
		if !w.opts.Matches(rec.meta) {
			continue
		}
		w.queue = append(w.queue, repository.Event{Type: t, Revision: rec.revision()})
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

// Watch calls handle for every change to a revision opts selects, in
// order, until ctx is done (it then returns nil), handle returns an error
// (returned as is), or the repository is closed (ErrClosed). Events are
// queued without bound, so a slow handler never blocks writers.
func (r *Repository) Watch(ctx context.Context, opts repository.ListOptions, handle func(repository.Event) error) error {
	if err := r.enter(ctx, "watch", revision.Key{}); err != nil {
		return err
	}
	w := &watch{opts: opts, wake: make(chan struct{}, 1)}
	r.watches[w] = struct{}{}
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.watches, w)
		r.mu.Unlock()
	}()
	for {
		r.mu.Lock()
		batch, closed := w.queue, w.closed
		w.queue = nil
		r.mu.Unlock()
		for _, ev := range batch {
			if err := handle(ev); err != nil {
				return err
			}
		}
		if closed {
			return r.errorf("watch", revision.Key{}, repository.ErrClosed, "repository is closed")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-w.wake:
		}
	}
}
