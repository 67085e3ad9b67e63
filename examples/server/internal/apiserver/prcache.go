package apiserver

import (
	"sync"

	"github.com/configasdata/cad/examples/internal/porchapi"
	"github.com/configasdata/cad/internal/lru"
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
	max  int
	objs *lru.Cache[prCacheKey, *porchapi.PackageRevision] // nil when max is 0

	mu sync.Mutex
	// listings are the repositories' listings (listsnap.go), guarded by
	// mu; none when max is 0.
	listings map[listingKey]*repoListing
}

type prCacheKey struct {
	ns, repo, key, version string
	published              string // a placeholder's publisher can change with its version
	latest, deployment     bool
}

// defaultPRCacheSize bounds the cache: a few KB an object.
const defaultPRCacheSize = 20000

func newPRCache(max int) *prCache {
	return &prCache{max: max, objs: lru.New[prCacheKey, *porchapi.PackageRevision](int64(max), 1)}
}

// get returns a copy of the cached object for k.
func (c *prCache) get(k prCacheKey) (*porchapi.PackageRevision, bool) {
	obj, ok := c.objs.Get(k)
	if !ok {
		return nil, false
	}
	o := *obj
	return &o, true
}

// put caches a copy of obj for k.
func (c *prCache) put(k prCacheKey, obj *porchapi.PackageRevision) {
	o := *obj
	c.objs.Put(k, &o, 1)
}
