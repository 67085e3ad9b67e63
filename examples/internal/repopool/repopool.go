// Package repopool keeps a bounded number of repositories open for a
// process that serves many (the operator, the reference server): each
// registered repository is opened on first use, kept open while it is
// used, and closed again when it has not been used for a while or when
// more than a bound are open, least recently used first; the next use
// opens it again. An open local git repository holds file descriptors
// (gitrepo keeps its cad.lock and cad-paths open) and caches, so a fleet
// of thousands would otherwise hold thousands of each.
//
// A repository is used between an Acquire and the release it returns, and
// is never closed in between: what a caller got from it (a lazily read
// revision, a draft) stays readable until the caller releases it. A
// Scope acquires each repository once and releases them all at once, for
// a unit of work (a reconcile, a request) that may touch several.
package repopool

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/configasdata/cad/repository"
)

// Defaults of Options.
const (
	// DefaultMaxOpen is the default bound on the open repositories that
	// no one uses.
	DefaultMaxOpen = 256
	// DefaultIdleTimeout is how long a repository stays open after its
	// last use, by default.
	DefaultIdleTimeout = 5 * time.Minute
)

// ErrNotRegistered is matched by the error of Acquire for a key that was
// never registered (Set) or was removed.
var ErrNotRegistered = errors.New("repopool: repository not registered")

// Opener opens a repository; the pool calls it on the first use after
// registration and after each close.
type Opener func(ctx context.Context) (repository.Repository, error)

// Options configure a Pool; the zero value of each field is its default.
type Options struct {
	// MaxOpen bounds the open repositories that are not in use: when
	// more are open, the least recently used ones are closed at once.
	// Repositories in use are never closed, so while more than MaxOpen
	// are in use at once, that many are open. Pinned repositories (Set's
	// pin) are not counted. Default DefaultMaxOpen.
	MaxOpen int
	// IdleTimeout closes a repository that has not been used for this
	// long (checked by Run); default DefaultIdleTimeout; negative: never.
	IdleTimeout time.Duration
	// Now is the pool's clock; default time.Now.
	Now func() time.Time
}

// Pool is a set of registered repositories, each open or closed. It is
// safe for concurrent use.
type Pool struct {
	maxOpen int
	idle    time.Duration
	now     func() time.Time

	mu      sync.Mutex
	entries map[string]*entry
	lru     list.List // of *instance: open, unused, unpinned; least recently used first
	open    int       // open instances, pinned or not, in use or not
	closed  bool
}

// entry is a registered key.
type entry struct {
	key         string
	fingerprint string
	opener      Opener
	pin         bool
	cur         *instance // nil while closed
	opening     chan struct{}
	openErr     error // of the open that closed opening
}

// instance is one open repository of an entry. It outlives its entry's
// hold on it (a new fingerprint, a removal) while it is used.
type instance struct {
	repo     repository.Repository
	e        *entry
	refs     int
	lastUsed time.Time
	elem     *list.Element // in Pool.lru, or nil
	retired  bool          // no longer its entry's cur: closed at refs 0
	closed   bool
}

// New returns an empty pool with opts (nil: the defaults). It starts
// nothing: Run closes the idle repositories.
func New(opts *Options) *Pool {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MaxOpen <= 0 {
		o.MaxOpen = DefaultMaxOpen
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Pool{maxOpen: o.MaxOpen, idle: o.IdleTimeout, now: o.Now, entries: map[string]*entry{}}
}

// Set registers key, opened by open. A key already registered with the
// same fingerprint is left as it is (open stays the one it had); with
// another fingerprint (its configuration or credentials changed), its
// open repository is closed as soon as no one uses it, and the next
// Acquire opens it with open. A pinned repository is never closed for
// idleness or the bound (one that is costly to open again and holds no
// descriptors, such as a remote cloned in memory). Set reports whether
// the registration changed.
func (p *Pool) Set(key, fingerprint string, open Opener, pin bool) bool {
	p.mu.Lock()
	e := p.entries[key]
	if e != nil && e.fingerprint == fingerprint && e.pin == pin {
		p.mu.Unlock()
		return false
	}
	var drop []*instance
	if e == nil {
		e = &entry{key: key}
		p.entries[key] = e
	} else if e.cur != nil {
		drop = p.retireLocked(e.cur)
	}
	e.fingerprint, e.opener, e.pin = fingerprint, open, pin
	p.mu.Unlock()
	closeAll(drop)
	return true
}

// Remove forgets key; its open repository is closed as soon as no one
// uses it. Removing a key that is not registered does nothing.
func (p *Pool) Remove(key string) {
	p.mu.Lock()
	var drop []*instance
	if e := p.entries[key]; e != nil {
		delete(p.entries, key)
		if e.cur != nil {
			drop = p.retireLocked(e.cur)
		}
	}
	p.mu.Unlock()
	closeAll(drop)
}

// Fingerprint returns the fingerprint key is registered with, and whether
// it is registered.
func (p *Pool) Fingerprint(key string) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.entries[key]
	if e == nil {
		return "", false
	}
	return e.fingerprint, true
}

// Acquire returns the repository of key, opening it when it is closed,
// and a release function to call once when done with it (and with what
// was read from it). The repository is not closed before release is
// called. Errors match ErrNotRegistered, repository.ErrClosed after
// Close, or are the Opener's (each Acquire of a closed repository tries
// to open it again) or ctx's while it waits for another's open.
func (p *Pool) Acquire(ctx context.Context, key string) (repository.Repository, func(), error) {
	p.mu.Lock()
	for {
		if p.closed {
			p.mu.Unlock()
			return nil, nil, fmt.Errorf("repopool: %s: %w", key, repository.ErrClosed)
		}
		e := p.entries[key]
		if e == nil {
			p.mu.Unlock()
			return nil, nil, fmt.Errorf("%w: %s", ErrNotRegistered, key)
		}
		if in := e.cur; in != nil {
			p.useLocked(in)
			p.mu.Unlock()
			return in.repo, p.releaser(in), nil
		}
		if ch := e.opening; ch != nil {
			// Another caller opens it: wait for its outcome, then look
			// again (it may have been closed or replaced since).
			p.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
			p.mu.Lock()
			if e.opening == nil && e.openErr != nil && e.cur == nil && p.entries[key] == e {
				err := e.openErr
				p.mu.Unlock()
				return nil, nil, err
			}
			continue
		}
		return p.openLocked(ctx, e)
	}
}

// openLocked opens e, which is closed and not being opened, with p.mu
// held; it returns with p.mu released.
func (p *Pool) openLocked(ctx context.Context, e *entry) (repository.Repository, func(), error) {
	ch := make(chan struct{})
	e.opening, e.openErr = ch, nil
	opener, fp := e.opener, e.fingerprint
	p.mu.Unlock()
	repo, err := opener(ctx)
	p.mu.Lock()
	e.opening = nil
	close(ch)
	if err != nil {
		e.openErr = err
		p.mu.Unlock()
		return nil, nil, err
	}
	in := &instance{repo: repo, e: e}
	p.open++
	if p.closed || p.entries[e.key] != e || e.fingerprint != fp {
		// Closed, removed or registered anew while it opened: this
		// caller uses what it opened, which no one else will.
		in.retired = true
	} else {
		e.cur = in
	}
	p.useLocked(in)
	drop := p.trimLocked()
	p.mu.Unlock()
	closeAll(drop)
	return repo, p.releaser(in), nil
}

// useLocked counts one more user of in.
func (p *Pool) useLocked(in *instance) {
	in.refs++
	in.lastUsed = p.now()
	if in.elem != nil {
		p.lru.Remove(in.elem)
		in.elem = nil
	}
}

// releaser returns the release function of one use of in.
func (p *Pool) releaser(in *instance) func() {
	var once sync.Once
	return func() { once.Do(func() { p.release(in) }) }
}

func (p *Pool) release(in *instance) {
	p.mu.Lock()
	in.refs--
	in.lastUsed = p.now()
	var drop []*instance
	switch {
	case in.refs > 0:
	case in.retired:
		drop = []*instance{p.closingLocked(in)}
	case !in.e.pin:
		in.elem = p.lru.PushBack(in)
		drop = p.trimLocked()
	}
	p.mu.Unlock()
	closeAll(drop)
}

// retireLocked detaches in from its entry: it is closed now when no one
// uses it (returned, for the caller to close after unlocking), or at its
// last release.
func (p *Pool) retireLocked(in *instance) []*instance {
	in.e.cur = nil
	in.retired = true
	if in.refs > 0 {
		return nil
	}
	return []*instance{p.closingLocked(in)}
}

// closingLocked takes in, which no one uses, out of the pool; the caller
// closes its repository after unlocking.
func (p *Pool) closingLocked(in *instance) *instance {
	if in.elem != nil {
		p.lru.Remove(in.elem)
		in.elem = nil
	}
	if in.e.cur == in {
		in.e.cur = nil
	}
	in.closed = true
	p.open--
	return in
}

// trimLocked takes out the least recently used unused repositories beyond
// maxOpen and returns them for closing.
func (p *Pool) trimLocked() []*instance {
	var drop []*instance
	for p.lru.Len() > p.maxOpen {
		drop = append(drop, p.closingLocked(p.lru.Front().Value.(*instance)))
	}
	return drop
}

// closeAll closes the repositories of ins, which the pool let go.
func closeAll(ins []*instance) {
	for _, in := range ins {
		_ = in.repo.Close()
	}
}

// Peek returns the repository of key only when it is open, with a release
// function as Acquire's; ok is false when it is closed (or being opened,
// or not registered). It counts as a use.
func (p *Pool) Peek(key string) (repo repository.Repository, release func(), ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.entries[key]
	if e == nil || e.cur == nil {
		return nil, nil, false
	}
	p.useLocked(e.cur)
	return e.cur.repo, p.releaser(e.cur), true
}

// Keys returns the keys of the open repositories, in no order.
func (p *Pool) Keys() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for k, e := range p.entries {
		if e.cur != nil {
			out = append(out, k)
		}
	}
	return out
}

// Stats are counts of a pool's repositories.
type Stats struct {
	Registered int // keys registered
	Open       int // repositories open, in use or not, pinned or not
	InUse      int // open repositories acquired and not yet released
}

// Stats returns the pool's counts now.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := Stats{Registered: len(p.entries), Open: p.open}
	for _, e := range p.entries {
		if e.cur != nil && e.cur.refs > 0 {
			s.InUse++
		}
	}
	return s
}

// CloseIdle closes the unpinned repositories no one has used for
// Options.IdleTimeout, and returns how many it closed.
func (p *Pool) CloseIdle() int {
	if p.idle < 0 {
		return 0
	}
	p.mu.Lock()
	var drop []*instance
	cutoff := p.now().Add(-p.idle)
	for el := p.lru.Front(); el != nil; {
		in := el.Value.(*instance)
		el = el.Next()
		if in.lastUsed.After(cutoff) {
			break // the rest were used later
		}
		drop = append(drop, p.closingLocked(in))
	}
	p.mu.Unlock()
	closeAll(drop)
	return len(drop)
}

// Run closes idle repositories (CloseIdle) every quarter of
// Options.IdleTimeout until ctx is done, then returns nil. With a negative
// IdleTimeout it only waits for ctx.
func (p *Pool) Run(ctx context.Context) error {
	if p.idle < 0 {
		<-ctx.Done()
		return nil
	}
	t := time.NewTicker(max(p.idle/4, time.Second))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			p.CloseIdle()
		}
	}
}

// Close closes every repository no one uses now, and each other one at its
// release; afterwards Acquire fails. It returns nil.
func (p *Pool) Close() error {
	p.mu.Lock()
	p.closed = true
	var drop []*instance
	for k, e := range p.entries {
		delete(p.entries, k)
		if e.cur != nil {
			drop = append(drop, p.retireLocked(e.cur)...)
		}
	}
	p.mu.Unlock()
	closeAll(drop)
	return nil
}

// Scope is the repositories of one unit of work (a reconcile, a request):
// each is acquired from the pool at its first use and kept until Release,
// so that what the work read from it stays readable throughout. It is
// safe for concurrent use.
type Scope struct {
	p    *Pool
	mu   sync.Mutex
	held map[string]scoped
	done bool
}

type scoped struct {
	repo    repository.Repository
	release func()
}

// Scope returns an empty scope of p.
func (p *Pool) Scope() *Scope { return &Scope{p: p, held: map[string]scoped{}} }

// Acquire returns the repository of key, acquired from the pool at the
// scope's first Acquire of key. Errors are the pool's Acquire's, or match
// repository.ErrClosed after Release.
func (s *Scope) Acquire(ctx context.Context, key string) (repository.Repository, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return nil, fmt.Errorf("repopool: scope released: %s: %w", key, repository.ErrClosed)
	}
	if h, ok := s.held[key]; ok {
		return h.repo, nil
	}
	// The pool is asked with s.mu held: the work's goroutines asking for
	// one key wait for one open.
	repo, release, err := s.p.Acquire(ctx, key)
	if err != nil {
		return nil, err
	}
	s.held[key] = scoped{repo: repo, release: release}
	return repo, nil
}

// Release releases every repository of the scope; it may be called more
// than once.
func (s *Scope) Release() {
	s.mu.Lock()
	held := s.held
	s.held, s.done = nil, true
	s.mu.Unlock()
	for _, h := range held {
		h.release()
	}
}
