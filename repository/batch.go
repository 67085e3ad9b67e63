package repository

import (
	"context"
)

// Batcher is implemented by repositories that can gather the writes of
// many operations into a [Batch] and make them durable and visible
// together, at a fraction of the cost of writing each one on its own (for
// git, one pack and one ref transaction for all of them).
type Batcher interface {
	// BeginBatch starts a write batch. Errors: an *Error matching
	// ErrNotSupported when this repository cannot batch (a backend that
	// batches some of its repositories only, such as gitrepo's in
	// memory), ErrClosed, or wrapping ctx's error. ctx bounds only the
	// call; the batch lives until Commit or Discard.
	BeginBatch(ctx context.Context) (Batch, error)
}

// Batch is a write batch, as database/sql's *Tx is a transaction: a
// Repository of the same Name whose writes are held in the batch until
// Commit. Every write made through it, and through the drafts and
// revisions obtained through it (a draft's Commit, UpdateLifecycle,
// Delete, and the optional writes the backend offers on the batch too,
// such as SetMetadata and Adopt):
//
//   - checks its preconditions against the repository as the batch sees
//     it, the committed state plus the batch's earlier writes, and
//     returns its result as if it were written;
//   - is seen by the reads made through the batch (List, Get, OpenDraft
//     and the content of the revisions they return), and by no other
//     reader, in this process or another, until Commit returns nil;
//   - leaves nothing in the batch when it fails; the batch's other writes
//     are unaffected.
//
// Writes through a batch are serialised among themselves; a Batch is safe
// for concurrent use. Commit and Discard end it: after either, every
// method of the batch and of the drafts and revisions obtained through
// it returns an *Error matching [ErrBatchDone] and writes nothing (Meta,
// which cannot fail, still answers). Close discards a batch that has not
// ended and returns nil; it never closes the repository.
//
// A repository that cannot batch says so (BeginBatch returns
// ErrNotSupported); nothing pretends to batch. A caller that wants "a
// batch where the repository offers one" chooses so explicitly: it writes
// through the repository itself when BeginBatch refuses.
type Batch interface {
	Repository
	// Commit writes every write held in the batch, all or nothing: when
	// it returns nil they are all durable and visible to every reader;
	// when it returns an error none of them is, and the results the
	// writes returned are void. It returns an error matching ErrConflict
	// when another writer changed, since a write of the batch read it,
	// something that write decided on (a revision it changes, a
	// workspace it takes, a Version it was given, the revision numbers
	// of a package it approves into), ErrClosed when the repository was
	// closed, ErrUnavailable, ErrBatchDone when the batch already ended,
	// or wrapping ctx's error. A batch with no writes commits nothing
	// and returns nil. Commit ends the batch whatever it returns.
	Commit(ctx context.Context) error
	// Discard drops every write held in the batch, none of which is ever
	// written, and ends it. Discarding a batch that ended does nothing.
	Discard()
}

// BeginBatch calls r's BeginBatch when r implements [Batcher] and returns
// an *Error wrapping ErrNotSupported otherwise. It never falls back to
// writing without a batch.
func BeginBatch(ctx context.Context, r Repository) (Batch, error) {
	if b, ok := r.(Batcher); ok {
		return b.BeginBatch(ctx)
	}
	return nil, &Error{Op: "begin batch", Repository: r.Name(), Err: ErrNotSupported}
}
