package apiserver

import (
	"context"
	"encoding/json"
	"slices"
	"sync"

	"github.com/configasdata/cad/examples/internal/porchapi"
	"github.com/configasdata/cad/repository"
)

// repoListing is what a list of one repository gives, kept while the
// repository's refs stay as they were: its revisions with their latest
// flags and their served objects. A repository's Version (a digest of its
// refs) says whether it still holds; when it changed, the next list builds
// the listing again, and the objects of revisions that did not change
// come from the object cache. Requests that come while a listing is being
// built wait for it and share it, so concurrent lists of a repository do
// the work once. The objects are shared and must not be modified.
type repoListing struct {
	mu      sync.Mutex // held while the listing is checked or built
	version string     // the repository's Version it was built at; "" for none
	// repo is the open repository the revisions were listed from: a
	// listing of an earlier opening is built again (its revisions read
	// through a repository since closed), from the object cache.
	repo   repository.Repository
	revs   []listedRevision
	damage error // the list's *repository.DamageError, nil when whole
}

// listingKey names a registration: its listing outlives the closing and
// opening again of its repository.
type listingKey struct {
	ns, name string
	gen      uint64
}

// listing returns the listing of the repository of e, by its Version,
// and false when the repository has no Version or the cache is off. The
// repository is acquired in ctx's scope, except with objsOnly (the
// caller uses the listed revisions' objects, never their revisions) for
// a git repository on disk whose refs did not change since its listing
// was built: then it is not opened at all.
func (s *Server) listing(ctx context.Context, e *repoEntry, objsOnly bool) ([]listedRevision, bool, error) {
	if s.prs.max <= 0 {
		return nil, false, nil
	}
	if vc := e.versions(); objsOnly && vc != nil {
		if v, ok := vc.cached(); ok {
			l := s.prs.listingOf(listingKey{e.ns, e.name, e.gen})
			l.mu.Lock()
			hit, revs, damage := l.version == v, l.revs, l.damage
			l.mu.Unlock()
			if hit {
				return revs, true, damage
			}
		}
	}
	repo, err := s.acquire(ctx, e)
	if err != nil {
		return nil, true, err
	}
	if _, ok := repo.(repository.Versioner); !ok {
		return nil, false, nil
	}
	l := s.prs.listingOf(listingKey{e.ns, e.name, e.gen})
	l.mu.Lock()
	defer l.mu.Unlock()
	version, _, err := s.version(ctx, e)
	if err != nil {
		return nil, true, err
	}
	if l.version == version && l.repo == repo {
		return l.revs, true, l.damage
	}
	revs, damage := s.listRepository(ctx, e, "")
	if damage != nil && repository.Damage(damage) == nil {
		return nil, true, damage
	}
	objs := make([]*porchapi.PackageRevision, len(revs))
	err = loadAll(ctx, revs, func(ctx context.Context, i int, lr listedRevision) error {
		o, err := s.prObject(ctx, lr.ns, lr.e, lr.rev, lr.latest)
		objs[i] = o
		return err
	})
	if err != nil {
		return nil, true, err
	}
	if l.version == version {
		// The same state read through a new opening: the objects
		// already served (and their memoised JSON) stay.
		byName := make(map[string]*porchapi.PackageRevision, len(l.revs))
		for _, lr := range l.revs {
			byName[lr.obj.Name] = lr.obj
		}
		for i := range objs {
			if o := byName[objs[i].Name]; o != nil && o.ResourceVersion == objs[i].ResourceVersion && porchapi.IsLatest(o) == porchapi.IsLatest(objs[i]) {
				objs[i] = o
			}
		}
	}
	for i := range revs {
		revs[i].obj = objs[i]
	}
	// Built from a list read after version: at that state or newer, so
	// the next request that sees a newer Version builds it again.
	kept := make(map[*porchapi.PackageRevision]bool, len(revs))
	for _, lr := range revs {
		kept[lr.obj] = true
	}
	s.jsons.forget(slices.DeleteFunc(slices.Clone(l.revs), func(lr listedRevision) bool { return kept[lr.obj] }))
	s.jsons.register(revs)
	l.version, l.repo, l.revs, l.damage = version, repo, revs, damage
	return revs, true, damage
}

// listingOf returns the listing kept for k, a new empty one the first
// time. Listings of repositories no longer served are dropped.
func (c *prCache) listingOf(k listingKey) *repoListing {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.listings == nil {
		c.listings = map[listingKey]*repoListing{}
	}
	l := c.listings[k]
	if l == nil {
		for old := range c.listings {
			if old.ns == k.ns && old.name == k.name {
				delete(c.listings, old) // the repository was opened again
			}
		}
		l = &repoListing{}
		c.listings[k] = l
	}
	return l
}

// dropListing forgets the listing of repository name in ns, and the JSON
// of its objects, when the repository is no longer served.
func (s *Server) dropListing(ns, name string) {
	c := s.prs
	c.mu.Lock()
	var dropped []*repoListing
	for k, l := range c.listings {
		if k.ns == ns && k.name == name {
			delete(c.listings, k)
			dropped = append(dropped, l)
		}
	}
	c.mu.Unlock()
	for _, l := range dropped {
		l.mu.Lock()
		s.jsons.forget(l.revs)
		l.revs, l.version = nil, ""
		l.mu.Unlock()
	}
}

// jsonMemo keeps the JSON of the objects of the repositories' listings
// (registered by listing, forgotten when a listing is built again): those
// objects are shared by every list until their repository changes, so
// each is encoded once, not once per request. Other objects are encoded
// every time and not kept. Bounded: when registering a listing would pass
// max objects, the memo forgets every other listing's objects, which are
// then encoded per request again until their listing is built again (a
// server whose listings hold more than max objects memoises only the
// latest). Safe for concurrent use.
type jsonMemo struct {
	mu  sync.Mutex
	max int
	m   map[*porchapi.PackageRevision][]byte // nil: registered, not encoded yet
}

func newJSONMemo(max int) *jsonMemo {
	return &jsonMemo{max: max, m: map[*porchapi.PackageRevision][]byte{}}
}

// register makes the objects of a listing memoised.
func (j *jsonMemo) register(objs []listedRevision) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.m)+len(objs) > j.max {
		clear(j.m)
	}
	for _, lr := range objs {
		if lr.obj != nil {
			if _, ok := j.m[lr.obj]; !ok {
				j.m[lr.obj] = nil
			}
		}
	}
}

// forget drops the objects of a listing that is replaced.
func (j *jsonMemo) forget(objs []listedRevision) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, lr := range objs {
		delete(j.m, lr.obj)
	}
}

// encode returns the JSON of v, from the memo for a registered object.
func (j *jsonMemo) encode(v any) ([]byte, error) {
	pr, ok := v.(*porchapi.PackageRevision)
	if !ok {
		return json.Marshal(v)
	}
	j.mu.Lock()
	b, registered := j.m[pr]
	j.mu.Unlock()
	if b != nil {
		return b, nil
	}
	b, err := json.Marshal(pr)
	if err != nil || !registered {
		return b, err
	}
	j.mu.Lock()
	if _, still := j.m[pr]; still {
		j.m[pr] = b
	}
	j.mu.Unlock()
	return b, nil
}
