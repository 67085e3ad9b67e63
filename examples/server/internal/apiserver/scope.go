package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/configasdata/cad"
	"github.com/configasdata/cad/examples/internal/maintsched"
	"github.com/configasdata/cad/examples/internal/porchapi"
	"github.com/configasdata/cad/examples/internal/repopool"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
)

// The server keeps its registered repositories in a repopool.Pool: a
// registration (repoEntry) holds the spec and what the server knows of the
// repository, the pool opens it when a request or the poller needs it and
// closes it again when it has been unused for Options.RepositoryIdleTimeout
// or when more than Options.MaxOpenRepositories unused ones are open.
//
// Each HTTP request has a pool scope (withRepoScope): every repository it
// touches, through the engine's nsRepos or directly (acquire), is acquired
// once and kept open until its response is written, so what it read
// lazily (a revision's files) stays readable. Background work (the
// poller, variant syncs, maintenance, garbage collection) makes a scope
// per unit of work with withScope. The scope travels in the context
// because the engine asks nsRepos for repositories with the context of
// the call it serves; nothing else is kept there.

// scopeKey is the context key of a request's pool scope.
type scopeKey struct{}

// withScope returns ctx carrying a new scope of pool, and the function
// that releases it.
func withScope(ctx context.Context, pool *repopool.Pool) (context.Context, func()) {
	sc := pool.Scope()
	return context.WithValue(ctx, scopeKey{}, sc), sc.Release
}

// withRepoScope gives each request a scope of pool, released once h has
// returned. It sits inside apiserver's handler chain, below the timeout
// filter, so a request answered by the timeout keeps its repositories
// open until its handler is done with them.
func withRepoScope(pool *repopool.Pool, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, release := withScope(r.Context(), pool)
		defer release()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}

// acquire returns the open repository of e for the work of ctx, opening
// it when it is closed; it stays open until ctx's scope is released.
// Outside a scope (none should be) the repository stays acquired until
// ctx is done. Errors match repository.ErrUnavailable when e's
// repository cannot be opened or was unregistered meanwhile.
func (s *Server) acquire(ctx context.Context, e *repoEntry) (repository.Repository, error) {
	if err := e.openErr(); err != nil {
		return nil, unavailable(e, err)
	}
	var repo repository.Repository
	var err error
	if sc, ok := ctx.Value(scopeKey{}).(*repopool.Scope); ok {
		repo, err = sc.Acquire(ctx, e.key)
	} else {
		var release func()
		repo, release, err = s.pool.Acquire(ctx, e.key)
		if err == nil {
			s.log.Debug("repository acquired outside a scope", "namespace", e.ns, "name", e.name)
			context.AfterFunc(ctx, release)
		}
	}
	if err != nil {
		if errors.Is(err, repopool.ErrNotRegistered) {
			return nil, unavailable(e, errors.New("it was unregistered"))
		}
		return nil, unavailable(e, err)
	}
	e.noteOpened(repo)
	return repo, nil
}

func unavailable(e *repoEntry, err error) error {
	return repository.Errorf("open", e.name, cad.Key{}, errors.Join(repository.ErrUnavailable, err),
		"repository %q in namespace %q is not open: %v", e.name, e.ns, err)
}

// openErr returns why e's repository did not open when it was
// registered, nil when it opened. (A repository that opened may fail to
// open again later: acquire reports that.)
func (e *repoEntry) openErr() error { return e.err }

// noteOpened keeps what e needs of its open repository repo while it is
// closed: the versionCache of a git repository on disk.
func (e *repoEntry) noteOpened(repo repository.Repository) {
	e.vcMu.Lock()
	defer e.vcMu.Unlock()
	if e.vc != nil {
		return
	}
	if g, ok := repo.(*gitrepo.Repository); ok && g.GitDir() != "" {
		e.vc = newVersionCache(g.GitDir())
	}
}

// versions returns e's versionCache, nil when it has none.
func (e *repoEntry) versions() *versionCache {
	e.vcMu.Lock()
	defer e.vcMu.Unlock()
	return e.vc
}

// register registers the repository of r in the pool (replacing an
// earlier registration of the same name, whose repository is closed once
// its requests are done) and opens it once, so that its status says
// whether it opens; the pool closes it again when it is not used. A
// refused spec or a failure to open is recorded in the entry.
func (s *Server) register(ctx context.Context, r *porchapi.Repository) *repoEntry {
	spec := porchapi.RepositoryToSpec(r)
	gen := entryGen.Add(1)
	e := &repoEntry{ns: r.Namespace, name: r.Name, spec: spec, gen: gen,
		key: r.Namespace + "/" + r.Name + "#" + strconv.FormatUint(gen, 10)}
	if err := spec.Validate(); err != nil {
		e.err = err
	} else if err := s.checkRepositorySpec(spec); err != nil {
		e.err = err
	} else {
		ns := r.Namespace
		s.pool.Set(e.key, "", func(ctx context.Context) (repository.Repository, error) {
			octx, cancel := context.WithTimeout(ctx, defaultOpenTimeout)
			defer cancel()
			repo, err := s.opts.Open(octx, ns, spec)
			if err != nil {
				return nil, err
			}
			return repo, nil
		}, pinned(spec))
		repo, release, err := s.pool.Acquire(ctx, e.key)
		if err != nil {
			s.pool.Remove(e.key)
			e.err = err
		} else {
			e.noteOpened(repo)
			release()
		}
	}
	if e.err != nil {
		s.log.Warn("repository did not open", "namespace", e.ns, "name", e.name, "err", e.err)
	}
	s.mu.Lock()
	old := s.repos[nsName{e.ns, e.name}]
	s.repos[nsName{e.ns, e.name}] = e
	s.mu.Unlock()
	if old != nil {
		s.pool.Remove(old.key)
	}
	return e
}

// pinned reports whether the repository of spec stays open for as long as
// it is registered: one that holds no descriptors and would be fetched
// anew in full when opened again (an OCI repository, a git repository in
// memory).
func pinned(spec repository.Spec) bool {
	if spec.Type != repository.TypeGit || spec.Git == nil {
		return true
	}
	return spec.Git.Repo == gitrepo.MemoryURL
}

// unregister forgets a repository; it is closed once its requests are
// done.
func (s *Server) unregister(ns, name string) {
	s.mu.Lock()
	e := s.repos[nsName{ns, name}]
	delete(s.repos, nsName{ns, name})
	s.mu.Unlock()
	if e != nil {
		s.pool.Remove(e.key)
	}
	s.dropListing(ns, name)
}

// maintainLoop is the schedule of the registered repositories'
// maintenance. A closed repository is opened for its run (through the
// pool, so at most the bound stay open) and closed again by the pool.
func (s *Server) maintainLoop() *maintsched.Loop {
	return &maintsched.Loop{
		Interval: s.opts.MaintainInterval,
		Logger:   s.log,
		Repos: func() []maintsched.Repo {
			var out []maintsched.Repo
			for _, e := range s.entries("") {
				if e.openErr() == nil {
					out = append(out, maintsched.Repo{Namespace: e.ns, Name: e.name, Repository: pooledMaintainer{s: s, e: e}})
				}
			}
			return out
		},
		Report: func(r maintsched.Repo, err error) {
			// The entry may have been replaced meanwhile: its
			// successor has its own outcome.
			m := r.Repository.(pooledMaintainer)
			if e, ok := s.entry(r.Namespace, r.Name); ok && e == m.e {
				s.noteMaintenance(e, err)
			}
		},
	}
}

// pooledMaintainer is a registered repository in a maintenance pass: its
// run acquires the repository from the pool (opening it when it is
// closed) and releases it at the end. Only Name and MaintainStorage are
// called on it: the rest of repository.Repository is a nil interface's.
type pooledMaintainer struct {
	repository.Repository
	s *Server
	e *repoEntry
}

func (m pooledMaintainer) Name() string { return m.e.name }

// MaintainStorage maintains the repository; it does nothing for a
// repository that is not a repository.Maintainer. Errors match
// repository.ErrClosed when the registration is gone, and are the
// repository's otherwise.
func (m pooledMaintainer) MaintainStorage(ctx context.Context) error {
	ctx, release := withScope(ctx, m.s.pool)
	defer release()
	repo, err := m.s.acquire(ctx, m.e)
	if err != nil {
		return fmt.Errorf("maintain %s/%s: %w", m.e.ns, m.e.name, errors.Join(repository.ErrClosed, err))
	}
	if _, ok := repo.(repository.Maintainer); !ok {
		return nil
	}
	return repository.Maintain(ctx, repo)
}
