package variant

import (
	"context"
	"errors"
	"fmt"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/repository"
)

// A set's sync writes each downstream repository that several of its
// variants write to through one write batch (repository.Batch), where
// the repository offers one and the Engine can work through it (Scoper):
// the variants' writes are held until every variant is synced, then
// committed at once (for git, one pack and one ref transaction instead of
// a dozen files per downstream). A variant whose sync fails leaves
// nothing in the batch and the others commit; a batch whose commit fails
// writes nothing: when it lost a race with another writer, the variants
// that wrote to its repository are synced again, each write on its own;
// otherwise they fail with its error. A repository without batches is
// written one write at a time, as Sync does.

// maxBatchVariants bounds the variants whose writes one batch holds, in
// memory until its commit; a larger set is synced in batches of this
// many variants, one after another.
const maxBatchVariants = 256

// Scoper is an optional interface of an Engine, for one group of the
// operations of SyncSet or RemoveSet: Scope returns an Engine that works
// as this one does, but on repos (write batches, repository.Batch) in
// place of the repositories of the same names (engine.Engine.Using), and,
// when refSnapshot is set, checks the references of the drafts it deletes
// against one listing (engine.Engine.WithReferenceSnapshot). An
// *engine.Engine needs no Scope: SyncSet and RemoveSet derive such an
// Engine from it themselves. A wrapper of an Engine implements Scope (by
// scoping what it wraps and wrapping the result) to keep the sets' writes
// batched; through an Engine that is neither, they write without batches,
// one write at a time, with the same results.
type Scoper interface {
	Scope(repos []repository.Repository, refSnapshot bool) Engine
}

// scope returns e scoped as Scoper describes, and whether e can be.
func scope(e Engine, repos []repository.Repository, refSnapshot bool) (Engine, bool) {
	switch x := e.(type) {
	case *engine.Engine:
		x = x.Using(repos...)
		if refSnapshot {
			x = x.WithReferenceSnapshot()
		}
		return x, true
	case Scoper:
		return x.Scope(repos, refSnapshot), true
	}
	return e, false
}

// setBatch is the write batch of one downstream repository of a set.
type setBatch struct {
	repo  string
	batch repository.Batch
}

// batched returns the Engine and Options of one group of a set's writes:
// e and o over a write batch of every repository that more than one
// writer writes to (targets names the repository of each, once per
// writer: a variant's downstream, or the repositories a removed variant's
// revisions lie in), and the batches. A repository that cannot be
// resolved or cannot batch is left out: its writers write directly (and
// report the resolution's error themselves); through an Engine that
// cannot be scoped (see Scoper) every writer does. With refSnapshot the
// Engine checks the references of the drafts it deletes against one
// listing.
func batched(ctx context.Context, e Engine, o Options, targets []string, refSnapshot bool) (Engine, Options, []setBatch) {
	count := map[string]int{}
	var repos []string
	for _, name := range targets {
		if count[name]++; count[name] == 2 {
			repos = append(repos, name)
		}
	}
	var out []setBatch
	var bs []repository.Repository
	for _, name := range repos {
		r, err := o.Repositories.Repository(ctx, name)
		if err != nil {
			continue
		}
		b, err := repository.BeginBatch(ctx, r)
		if err != nil {
			o.Logger.DebugContext(ctx, "writing without a batch", "repository", name, "error", err)
			continue
		}
		out = append(out, setBatch{repo: name, batch: b})
		bs = append(bs, b)
	}
	se, ok := scope(e, bs, refSnapshot)
	if !ok {
		if len(out) > 0 {
			o.Logger.DebugContext(ctx, "writing without batches: the Engine cannot work through them (variant.Scoper)")
		}
		for _, sb := range out {
			sb.batch.Discard()
		}
		return e, o, nil
	}
	o.Repositories = engine.Overlay(o.Repositories, bs...)
	return se, o, out
}

// commitBatches commits batches. For a commit that fails, every writer
// whose result records a write to its repository is either to be run
// again, when the commit lost a race (repository.ErrConflict), or failed
// with the commit's error (in its result and errs). It returns the
// writers to run again, by index.
func commitBatches(ctx context.Context, o Options, batches []setBatch, results []*Result, errs []error) map[int]bool {
	redo := map[int]bool{}
	for _, sb := range batches {
		err := sb.batch.Commit(ctx)
		if err == nil {
			continue
		}
		err = fmt.Errorf("variant: write the set's changes to repository %s: %w", sb.repo, err)
		conflict := errors.Is(err, repository.ErrConflict)
		o.Logger.DebugContext(ctx, "batch not written", "repository", sb.repo, "again", conflict, "error", err)
		for i, r := range results {
			if r == nil || !wroteTo(r, sb.repo) {
				continue
			}
			if conflict {
				redo[i] = true
				continue
			}
			r.failed(o.Now(), err)
			errs[i] = err
		}
	}
	return redo
}

// wroteTo reports whether r records a write to repository repo.
func wroteTo(r *Result, repo string) bool {
	for _, c := range r.Changes {
		if c.Key.Repository == repo {
			return true
		}
	}
	return false
}
