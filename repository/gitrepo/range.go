package gitrepo

import (
	"context"
	"iter"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// rangeBatch is how many refs Range reads under one hold of the lock: few
// enough that a batch's revisions cost little memory and a writer waits
// little, enough that taking the lock costs nothing beside the reads.
const rangeBatch = 256

var _ repository.RangeLister = (*Repository)(nil)

// Range returns an iterator over the revisions opts selects: List's
// revisions, in the order their objects lie in the packs (the order a
// list reads them in), the placeholders last. It holds in memory the refs
// it lists and one batch of revisions, not the whole list, so a list of
// 50,000 revisions in a loop that keeps nothing costs a fraction of
// List's memory. The refs are read once, when the loop starts (with a
// remote, after bringing the local clone up to date): the revisions are
// those of that moment. The objects are read a batch of refs at a time,
// the lock taken for each batch and released before its revisions are
// yielded, so the loop body may call the repository; breaking out of the
// loop stops the listing. On error it yields an *repository.Error
// matching repository.ErrClosed (the repository closed, also during the
// loop), ErrUnavailable, or wrapping ctx's error, once, and stops. The
// refs List leaves out as damaged are left out too, and named after the
// last revision by an *repository.Error wrapping a
// *repository.DamageError, as List returns it.
func (r *Repository) Range(ctx context.Context, opts repository.ListOptions) iter.Seq2[revision.PackageRevision, error] {
	return func(yield func(revision.PackageRevision, error) bool) {
		var (
			l       *listing
			damaged []error
			batch   []revision.PackageRevision
			phs     []*rev
			last    bool // phs holds the placeholders: no batch follows
		)
		add := func(x *rev) {
			if pr := l.revision(x); pr != nil {
				batch = append(batch, pr)
			}
		}
		// step reads the next batch of refs, or after the last the
		// placeholders.
		step := func() error {
			// The mapped pages are dropped as List drops them (every
			// DropPagesEvery entries), not after each batch: the pages a
			// batch leaves are the next batch's (reads go in pack
			// order), and faulting them in again made a first Range of
			// 50,000 revisions a third dearer for 4 MB less at its peak.
			if !l.done() {
				return l.refs(ctx, rangeBatch, add)
			}
			var err error
			phs, err = l.placeholders()
			last = true
			return err
		}
		if err := r.enter(ctx, "list", revision.Key{}); err != nil {
			yield(nil, err)
			return
		}
		// What the batches learnt goes to cad-paths once, at the end.
		learnt := &pathLog{}
		defer learnt.flush(r.st.paths)
		err := r.read(ctx, func(v *view) error {
			v.learnt = learnt
			damaged = damaged[:0]
			v.damaged = r.collectDamage(&damaged)
			var err error
			if l, err = r.startListing(v, opts); err != nil {
				return err
			}
			return step()
		})
		for {
			if err != nil {
				yield(nil, r.wrapErr("list", revision.Key{}, err))
				return
			}
			for i, pr := range batch {
				if !yield(pr, nil) {
					return
				}
				batch[i] = nil
			}
			batch = batch[:0]
			if last {
				break
			}
			if err := r.enter(ctx, "list", revision.Key{}); err != nil {
				yield(nil, err)
				return
			}
			err = r.readMore(ctx, step)
		}
		for _, x := range phs {
			if pr := l.revision(x); pr != nil && !yield(pr, nil) {
				return
			}
		}
		if err := repository.NewDamageError(damaged); err != nil {
			yield(nil, r.wrapErr("list", revision.Key{}, err))
		}
	}
}

// readMore runs fn with the local storage locked for reading, as read
// does but without bringing a remote's clone up to date: for a read that
// goes on with a view read has started.
func (r *Repository) readMore(ctx context.Context, fn func() error) error {
	return r.st.read(ctx, fn)
}
