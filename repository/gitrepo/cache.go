package gitrepo

import (
	"container/list"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
)

// lru caches immutable things read from git (trees, commits, package
// lists and contents) by object id, bounded by an estimate of their size
// in bytes. It is safe for concurrent use. A nil *lru caches nothing.
type lru struct {
	mu    sync.Mutex
	max   int64
	size  int64
	ll    *list.List
	items map[cacheKey]*list.Element
}

// entryOverhead is the memory an entry costs beyond its value: the list
// element, the item and the map slot.
const entryOverhead = 160

type cacheKey struct {
	kind byte
	h    plumbing.Hash
}

type cacheItem struct {
	key  cacheKey
	val  any
	size int64
}

func newLRU(max int64) *lru {
	if max <= 0 {
		return nil
	}
	return &lru{max: max, ll: list.New(), items: map[cacheKey]*list.Element{}}
}

func (c *lru) get(kind byte, h plumbing.Hash) (any, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[cacheKey{kind, h}]; ok {
		c.ll.MoveToFront(e)
		return e.Value.(*cacheItem).val, true
	}
	return nil, false
}

func (c *lru) put(kind byte, h plumbing.Hash, val any, size int64) {
	size += entryOverhead
	if c == nil || size > c.max/4 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k := cacheKey{kind, h}
	if e, ok := c.items[k]; ok {
		c.ll.MoveToFront(e)
		return
	}
	c.items[k] = c.ll.PushFront(&cacheItem{key: k, val: val, size: size})
	c.size += size
	for c.size > c.max {
		e := c.ll.Back()
		it := e.Value.(*cacheItem)
		c.ll.Remove(e)
		delete(c.items, it.key)
		c.size -= it.size
	}
}
