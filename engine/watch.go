package engine

import (
	"context"
	"errors"
	"sync"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// Watch calls handle for every change to a revision that opts selects in
// the repositories named by repos (all of the Engine's Repositories when
// repos is empty), from the moment each repository's watch starts until
// ctx is done or handle returns an error. Events of one repository arrive
// in order; handle is never called concurrently, and each event's
// Revision.Meta().Key.Repository says where it happened. Changes are seen
// as each backend's repository.Watcher reports them: memrepo at once,
// gitrepo by cheap polling of its refs.
//
// Watch blocks. It returns nil when ctx is done; handle's error when handle
// fails; otherwise the first repository error, such as one matching
// repository.ErrNotSupported for a backend that cannot watch,
// repository.ErrNotFound for an unknown repository name, or
// repository.ErrClosed. Any error stops the watches of every repository.
func (e *Engine) Watch(ctx context.Context, repos []string, opts repository.ListOptions, handle func(repository.Event) error) error {
	const op = "watch"
	if len(repos) == 0 {
		names, err := e.opts.Repositories.Names(ctx)
		if err != nil {
			return wrap(op, revision.Key{}, err)
		}
		repos = names
	}
	rs := make([]repository.Repository, len(repos))
	for i, name := range repos {
		r, err := e.repo(ctx, op, revision.Key{Repository: name})
		if err != nil {
			return err
		}
		rs[i] = r
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu      sync.Mutex // serialises handle and guards first
		first   error
		wg      sync.WaitGroup
		handled = errors.New("handled") // marks handle's own error
	)
	fail := func(err error) {
		mu.Lock()
		if first == nil {
			first = err
		}
		mu.Unlock()
		cancel()
	}
	for _, r := range rs {
		wg.Go(func() {
			err := repository.Watch(ctx, r, opts, func(ev repository.Event) error {
				mu.Lock()
				defer mu.Unlock()
				if first != nil || ctx.Err() != nil {
					return nil
				}
				if err := handle(ev); err != nil {
					first = err
					cancel()
					return handled
				}
				return nil
			})
			if err != nil && !errors.Is(err, handled) && ctx.Err() == nil {
				fail(wrap(op, revision.Key{Repository: r.Name()}, err))
			}
		})
	}
	wg.Wait()
	return first
}
