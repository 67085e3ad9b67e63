package gitobj

import (
	"github.com/go-git/go-git/v5/plumbing"

	lrucache "github.com/configasdata/cad/internal/lru"
)

// LRU caches immutable things read from git (trees, commits, package
// lists and contents) by object id, bounded by an estimate of their size
// in bytes, over the module's one LRU (internal/lru). It is safe for
// concurrent use. A nil *LRU caches nothing.
type LRU struct {
	c *lrucache.Cache[cacheKey, any]
}

// entryOverhead is the memory an entry costs beyond its value: the list
// element, the item and the map slot.
const entryOverhead = 160

type cacheKey struct {
	kind byte
	h    plumbing.Hash
}

// NewLRU returns a cache of at most max bytes that keeps no entry over a
// quarter of it; nil (nothing cached) when max <= 0.
func NewLRU(max int64) *LRU {
	if max <= 0 {
		return nil
	}
	return &LRU{c: lrucache.New[cacheKey, any](max, max/4)}
}

// Get returns what is kept of object h of the given kind, and whether
// anything is.
func (c *LRU) Get(kind byte, h plumbing.Hash) (any, bool) {
	if c == nil {
		return nil, false
	}
	return c.c.Get(cacheKey{kind, h})
}

// PutCold keeps val as Put does, but only when it fits without dropping
// another entry, and as the entry to drop first (lru.Cache.AddCold): for
// what a pass over many objects reads once.
func (c *LRU) PutCold(kind byte, h plumbing.Hash, val any, size int64) {
	if c == nil {
		return
	}
	c.c.AddCold(cacheKey{kind, h}, val, size+entryOverhead)
}

// Put keeps val, of about size bytes, unless an entry for the same object
// is kept already (objects are immutable: the kept one is as good).
func (c *LRU) Put(kind byte, h plumbing.Hash, val any, size int64) {
	if c == nil {
		return
	}
	c.c.Add(cacheKey{kind, h}, val, size+entryOverhead)
}
