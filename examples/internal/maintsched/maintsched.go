// Package maintsched runs the maintenance of open repositories on a
// schedule (repository.Maintain: gitrepo packs loose objects, small packs
// and loose refs), for the reference server (--maintain-interval) and the
// operator, which share it. Writes run maintenance by themselves when a
// repository needs it; the schedule catches repositories that are only
// read, or written by other processes, between writes.
package maintsched

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/configasdata/cad/repository"
)

// Defaults of Loop.
const (
	// DefaultInterval is the default period between the end of one
	// maintenance pass and the start of the next.
	DefaultInterval = time.Hour
	// DefaultTimeout bounds the maintenance of one repository.
	DefaultTimeout = 30 * time.Minute
)

// Repo is one repository a pass maintains.
type Repo struct {
	// Namespace and Name name the Repository object it is registered as.
	Namespace, Name string
	// Repository is the open repository.
	Repository repository.Repository
}

// Loop maintains repositories on a schedule. Its fields are not changed
// while Run runs.
type Loop struct {
	// Interval is the time from the end of one pass to the start of the
	// next; the first pass starts one Interval after Run. Passes never
	// overlap: each maintains the repositories one at a time. Default
	// DefaultInterval.
	Interval time.Duration
	// Timeout bounds the maintenance of one repository (a run that waits
	// for another process's run, say); default DefaultTimeout.
	Timeout time.Duration
	// Repos returns the repositories to maintain, called at the start of
	// each pass. Required.
	Repos func() []Repo
	// Report, when set, is called after the maintenance of each
	// repository that implements repository.Maintainer: with nil when it
	// succeeded, its error when it failed. It is not called for a
	// repository that does not implement it, that was closed meanwhile,
	// or when the pass ends because Run's ctx is done.
	Report func(Repo, error)
	// Logger receives a warning for each failed run (with the
	// repository's namespace and name) and a debug line for each
	// successful one; nil is silent.
	Logger *slog.Logger
}

// Run runs a maintenance pass every Interval until ctx is done, and
// returns nil then. It returns at once, with nil, for a negative
// Interval.
func (l *Loop) Run(ctx context.Context) error {
	interval := l.Interval
	if interval < 0 {
		return nil
	}
	if interval == 0 {
		interval = DefaultInterval
	}
	t := time.NewTimer(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		l.Pass(ctx)
		t.Reset(interval)
	}
}

// Pass maintains every repository Repos returns, one at a time, and
// returns when they are done or ctx is.
func (l *Loop) Pass(ctx context.Context) {
	log := l.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	timeout := l.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	for _, r := range l.Repos() {
		if ctx.Err() != nil {
			return
		}
		if _, ok := r.Repository.(repository.Maintainer); !ok {
			continue
		}
		start := time.Now()
		rctx, cancel := context.WithTimeout(ctx, timeout)
		err := repository.Maintain(rctx, r.Repository)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, repository.ErrClosed):
			continue // replaced or removed meanwhile
		case err != nil:
			log.Warn("repository maintenance failed", "namespace", r.Namespace, "name", r.Name, "err", err)
		default:
			log.Debug("repository maintained", "namespace", r.Namespace, "name", r.Name, "took", time.Since(start))
		}
		if l.Report != nil {
			l.Report(r, err)
		}
	}
}
