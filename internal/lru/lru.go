// Package lru is cad's one least-recently-used cache: a map bounded by a
// total cost (bytes, or 1 per entry for a count bound) that, when a put
// takes it over the bound, drops the entries used least recently until it
// fits again. Every bounded cache of the module (git objects, OCI
// manifests, chart archives, compiled CEL programs, the example server's
// caches) is one of these, so eviction is written and tested once.
//
// A get or a put of a key makes it the most recently used. An entry whose
// cost alone exceeds the cache's MaxEntry is not kept (it would push out
// everything else), so a put may be a no-op; callers must treat the cache
// as a hint, never as a store.
//
// A *Cache is safe for concurrent use. A nil *Cache keeps nothing: Get
// misses and Put does nothing, so a disabled cache needs no checks.
package lru

import (
	"container/list"
	"sync"
)

// Cache is a least-recently-used cache from K to V bounded by total cost.
// Create it with New.
type Cache[K comparable, V any] struct {
	mu       sync.Mutex
	max      int64
	maxEntry int64
	cost     int64
	ll       *list.List // of *entry[K, V], most recently used first
	items    map[K]*list.Element
}

type entry[K comparable, V any] struct {
	key  K
	val  V
	cost int64
}

// New returns a cache that holds entries of total cost at most max and
// keeps no entry costing more than maxEntry (0 means max). It returns nil,
// a cache that keeps nothing, when max <= 0.
func New[K comparable, V any](max, maxEntry int64) *Cache[K, V] {
	if max <= 0 {
		return nil
	}
	if maxEntry <= 0 || maxEntry > max {
		maxEntry = max
	}
	return &Cache[K, V]{max: max, maxEntry: maxEntry, ll: list.New(), items: map[K]*list.Element{}}
}

// Get returns the value kept for k and true, making k the most recently
// used, or the zero V and false when k is not kept.
func (c *Cache[K, V]) Get(k K) (V, bool) {
	var zero V
	if c == nil {
		return zero, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[k]
	if !ok {
		return zero, false
	}
	c.ll.MoveToFront(el)
	return el.Value.(*entry[K, V]).val, true
}

// Put keeps v for k at the given cost (negative counts as 0), replacing
// any value kept for k, and drops the least recently used entries until
// the total cost is within the bound. It reports whether v is kept: false
// when its cost exceeds the cache's maxEntry (and then any old value for
// k is dropped too) or the cache is nil.
func (c *Cache[K, V]) Put(k K, v V, cost int64) bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.put(k, v, cost)
}

func (c *Cache[K, V]) put(k K, v V, cost int64) bool {
	if cost < 0 {
		cost = 0
	}
	if el, ok := c.items[k]; ok {
		c.remove(el)
	}
	if cost > c.maxEntry {
		return false
	}
	c.items[k] = c.ll.PushFront(&entry[K, V]{key: k, val: v, cost: cost})
	c.cost += cost
	for c.cost > c.max {
		c.remove(c.ll.Back())
	}
	return true
}

// Add keeps v for k as Put does unless k is already kept, in which case it
// only makes k the most recently used and returns the value kept. It
// returns the value now kept for k (v when it was not kept before, even if
// its cost kept it out of the cache).
func (c *Cache[K, V]) Add(k K, v V, cost int64) V {
	if c == nil {
		return v
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[k]; ok {
		c.ll.MoveToFront(el)
		return el.Value.(*entry[K, V]).val
	}
	c.put(k, v, cost)
	return v
}

// AddCold keeps v for k, as the least recently used entry, only when it
// fits without dropping any other entry and k is not kept already; it
// reports whether k is kept now. For a value read once in a pass over
// many (a list's commits): the pass fills the cache's room and no more,
// and what is used more often pushes its values out first.
func (c *Cache[K, V]) AddCold(k K, v V, cost int64) bool {
	if c == nil {
		return false
	}
	if cost < 0 {
		cost = 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[k]; ok {
		return true
	}
	if cost > c.maxEntry || c.cost+cost > c.max {
		return false
	}
	c.items[k] = c.ll.PushBack(&entry[K, V]{key: k, val: v, cost: cost})
	c.cost += cost
	return true
}

// Remove drops the value kept for k, if any.
func (c *Cache[K, V]) Remove(k K) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[k]; ok {
		c.remove(el)
	}
}

// Clear drops every entry.
func (c *Cache[K, V]) Clear() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ll.Init()
	clear(c.items)
	c.cost = 0
}

// Len returns the number of entries kept.
func (c *Cache[K, V]) Len() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.items)
}

// Cost returns the total cost of the entries kept.
func (c *Cache[K, V]) Cost() int64 {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cost
}

func (c *Cache[K, V]) remove(el *list.Element) {
	e := el.Value.(*entry[K, V])
	c.ll.Remove(el)
	delete(c.items, e.key)
	c.cost -= e.cost
}
