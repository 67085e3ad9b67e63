package gitrepo

import (
	"context"
	"time"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// Watch calls handle for every change to a revision opts selects, from
// the moment it is called until ctx is done or handle returns an error.
// Writes through this Repository are seen at once; other writers' (other
// handles, processes, the git CLI, a remote) by polling: every
// Options.PollInterval it reads the repository's Version
// (the refs; for a remote, one ls-remote) and lists again only when that
// changed. A change of Meta.Version is Modified; a revision that is no
// longer listed is Deleted, with its last state, unless the list left out
// damaged refs (see List): then no revision is reported deleted until a
// list is whole again. Watch blocks; it returns
// nil when ctx is done, handle's error, or an *repository.Error matching
// ErrClosed when the repository is closed.
func (r *Repository) Watch(ctx context.Context, opts repository.ListOptions, handle func(repository.Event) error) error {
	if err := r.enter(ctx, "watch", revision.Key{}); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	type seen struct {
		version string
		pr      revision.PackageRevision
	}
	// snapshot lists, and also reports whether damaged refs were left
	// out (logged): their revisions are then not known to be deleted.
	snapshot := func() (map[revision.Key]seen, []revision.Key, bool, error) {
		revs, err := r.List(ctx, opts)
		damaged := err != nil && repository.Damage(err) != nil
		if err != nil && !damaged {
			return nil, nil, false, err
		}
		if damaged {
			r.log.Warn("watch: the list left out damaged refs", "err", err)
		}
		m := make(map[revision.Key]seen, len(revs))
		order := make([]revision.Key, 0, len(revs))
		for _, pr := range revs {
			k := pr.Meta().Key
			m[k] = seen{pr.Meta().Version, pr}
			order = append(order, k)
		}
		return m, order, damaged, nil
	}
	token, _ := r.Version(ctx)
	prev, prevOrder, _, err := snapshot()
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	tick := time.NewTicker(r.opts.PollInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-r.writes():
		}
		if r.closed.Load() {
			return r.enter(ctx, "watch", revision.Key{})
		}
		t, err := r.Version(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			r.log.Warn("watch: reading the refs failed", "err", err)
			continue
		}
		if t == token {
			continue
		}
		cur, order, damaged, err := snapshot()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			r.log.Warn("watch: listing failed", "err", err)
			continue
		}
		token = t
		if damaged {
			// A revision left out may be behind a damaged ref: it is
			// not reported deleted, and stays as it was.
			for _, k := range prevOrder {
				if _, ok := cur[k]; !ok {
					cur[k] = prev[k]
					order = append(order, k)
				}
			}
		}
		for _, k := range prevOrder {
			if _, ok := cur[k]; !ok {
				if err := handle(repository.Event{Type: repository.Deleted, Revision: prev[k].pr}); err != nil {
					return err
				}
			}
		}
		for _, k := range order {
			old, ok := prev[k]
			switch {
			case !ok:
				err = handle(repository.Event{Type: repository.Added, Revision: cur[k].pr})
			case old.version != cur[k].version:
				err = handle(repository.Event{Type: repository.Modified, Revision: cur[k].pr})
			}
			if err != nil {
				return err
			}
		}
		prev, prevOrder = cur, order
	}
}
