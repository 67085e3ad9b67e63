package repository

import (
	"context"
	"errors"
)

// Batcher is implemented by repositories that can gather the writes of
// many operations and make them durable and visible together, at a
// fraction of the cost of writing each one on its own (one file and one
// sync for all their content, one ref transaction for all their refs).
type Batcher interface {
	// BeginBatch starts a write batch and returns a context that carries
	// it, and the batch. Every write to this repository made with that
	// context or one derived from it (a draft's Commit, UpdateLifecycle,
	// Delete, SetMetadata, Adopt) is held in the batch instead of being
	// written:
	//
	//   - it checks its preconditions against the repository as the
	//     batch sees it, the committed state plus the batch's earlier
	//     writes, and returns its result as if it were written;
	//   - reads made with the batch's context (List, Get, OpenDraft and
	//     the content of the revisions they return) see the batch's
	//     writes; reads with any other context, in this process or
	//     another, see none of them until Commit returns nil;
	//   - a write that fails leaves nothing in the batch; the batch's
	//     other writes are unaffected.
	//
	// Writes with the context are serialised among themselves; the
	// batch and its context are safe for concurrent use. After Commit or
	// Discard, the context writes and reads directly, as without a batch.
	// Errors: ErrNotSupported when this repository cannot batch (then
	// write without one), ErrClosed, or wrapping ctx's error.
	BeginBatch(ctx context.Context) (context.Context, Batch, error)
}

// Batch is a write batch of a [Batcher]. It is safe for concurrent use.
type Batch interface {
	// Commit writes every write held in the batch, all or nothing: when
	// it returns nil they are all durable and visible to every reader;
	// when it returns an error none of them is, and the results the
	// writes returned are void. It returns an error matching ErrConflict
	// when another writer changed, since a write of the batch read it,
	// something that write decided on (a revision it changes, a
	// workspace it takes, a Version it was given, the revision numbers
	// of a package it approves into), ErrClosed, ErrUnavailable, or
	// wrapping ctx's error. A batch with no writes commits nothing and returns
	// nil. Commit and Discard end the batch; calling either again does
	// nothing and returns nil.
	Commit(ctx context.Context) error
	// Discard drops every write held in the batch: none of them is ever
	// written.
	Discard()
}

// BeginBatch starts a write batch on r: r's BeginBatch when r implements
// [Batcher] and can batch. Otherwise it returns ctx itself and a Batch
// whose Commit and Discard do nothing: writes with ctx are then made one
// at a time, each durable and visible when it returns, as without a
// batch (and Discard cannot undo them). Errors are r's BeginBatch's
// other than ErrNotSupported.
func BeginBatch(ctx context.Context, r Repository) (context.Context, Batch, error) {
	if b, ok := r.(Batcher); ok {
		bctx, batch, err := b.BeginBatch(ctx)
		if err == nil {
			return bctx, batch, nil
		}
		if !errors.Is(err, ErrNotSupported) {
			return ctx, nil, err
		}
	}
	return ctx, noBatch{}, nil
}

// noBatch is the Batch of a repository that writes one at a time.
type noBatch struct{}

func (noBatch) Commit(context.Context) error { return nil }
func (noBatch) Discard()                     {}
