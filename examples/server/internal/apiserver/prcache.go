package apiserver

import (
	"container/list"
	"sync"

	"github.com/configasdata/cad/examples/internal/porchapi"
)

// prCache keeps the PackageRevision objects the server built, keyed by
// everything they are built from: the repository, the revision's key and
// Version (which changes with its content, lifecycle and revision data),
// whether it is the latest, and the repository's deployment flag. A list
// then reads only the refs and the revisions' metadata; the files of a
// revision are read once per version, not once per request. It holds at
// most max objects, the least recently used going first. Safe for
// concurrent use; the objects are shared and must not be modified.
type prCache struct {
	mu  sync.Mutex
	max int
	ll  *list.List // of *prCacheEntry, most recent first
	m   map[prCacheKey]*list.Element
	// listings are the repositories' listings (listsnap.go), guarded by
	// mu; none when max is 0.
	listings map[listingKey]*repoListing
}

type prCacheKey struct {
	ns, repo, key, version string
	published              string // a placeholder's publisher can change with its version
	latest, deployment     bool
}

type prCacheEntry struct {
	key prCacheKey
	obj *porchapi.PackageRevision
}

// defaultPRCacheSize bounds the cache: a few KB an object.
const defaultPRCacheSize = 20000

func newPRCache(max int) *prCache {
	return &prCache{max: max, ll: list.New(), m: map[prCacheKey]*list.Element{}}
}

// get returns a copy of the cached object for k.
func (c *prCache) get(k prCacheKey) (*porchapi.PackageRevision, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.m[k]
	if !ok {
		return nil, false
	}
	c.ll.MoveToFront(el)
	o := *el.Value.(*prCacheEntry).obj
	return &o, true
}

// put caches a copy of obj for k.
func (c *prCache) put(k prCacheKey, obj *porchapi.PackageRevision) {
	o := *obj
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.m[k]; ok {
		el.Value.(*prCacheEntry).obj = &o
		c.ll.MoveToFront(el)
		return
	}
	c.m[k] = c.ll.PushFront(&prCacheEntry{key: k, obj: &o})
	for c.ll.Len() > c.max {
		old := c.ll.Back()
		c.ll.Remove(old)
		delete(c.m, old.Value.(*prCacheEntry).key)
	}
}
