package lru

import (
	"fmt"
	"sync"
	"testing"
)

func TestEvictsLeastRecentlyUsed(t *testing.T) {
	c := New[string, int](3, 0)
	c.Put("a", 1, 1)
	c.Put("b", 2, 1)
	c.Put("c", 3, 1)
	if _, ok := c.Get("a"); !ok { // a is now the most recently used
		t.Fatal("a missing")
	}
	c.Put("d", 4, 1) // evicts b, the least recently used
	if _, ok := c.Get("b"); ok {
		t.Fatal("b kept; it was the least recently used")
	}
	for k, want := range map[string]int{"a": 1, "c": 3, "d": 4} {
		if v, ok := c.Get(k); !ok || v != want {
			t.Fatalf("%s: %v %v, want %d", k, v, ok, want)
		}
	}
	if c.Len() != 3 || c.Cost() != 3 {
		t.Fatalf("len %d cost %d, want 3 3", c.Len(), c.Cost())
	}
}

func TestCostBound(t *testing.T) {
	c := New[int, string](100, 40)
	for i := range 10 {
		if !c.Put(i, "x", 30) {
			t.Fatalf("put %d refused", i)
		}
		if c.Cost() > 100 {
			t.Fatalf("after put %d cost %d > 100", i, c.Cost())
		}
	}
	if c.Len() != 3 || c.Cost() != 90 {
		t.Fatalf("len %d cost %d, want 3 entries costing 90", c.Len(), c.Cost())
	}
	// An entry over maxEntry is refused and changes nothing else.
	if c.Put(100, "big", 41) {
		t.Fatal("entry over maxEntry kept")
	}
	if c.Len() != 3 || c.Cost() != 90 {
		t.Fatalf("refused put changed the cache: len %d cost %d", c.Len(), c.Cost())
	}
	// Replacing a key re-costs it; growing it over maxEntry drops it.
	c.Put(9, "y", 10)
	if c.Cost() != 70 {
		t.Fatalf("cost %d after re-costing 9, want 70", c.Cost())
	}
	c.Put(9, "z", 50)
	if _, ok := c.Get(9); ok || c.Cost() != 60 {
		t.Fatalf("key re-put over maxEntry: kept %v, cost %d, want dropped and 60", ok, c.Cost())
	}
}

func TestAddKeepsTheFirstValue(t *testing.T) {
	c := New[string, int](10, 0)
	if got := c.Add("k", 1, 1); got != 1 {
		t.Fatalf("first Add %d", got)
	}
	if got := c.Add("k", 2, 1); got != 1 {
		t.Fatalf("second Add returned %d, want the kept 1", got)
	}
	c.Remove("k")
	if _, ok := c.Get("k"); ok || c.Cost() != 0 {
		t.Fatal("Remove kept the entry")
	}
	c.Put("a", 1, 2)
	c.Put("b", 2, 3)
	c.Clear()
	if _, ok := c.Get("a"); ok || c.Len() != 0 || c.Cost() != 0 {
		t.Fatal("Clear kept entries")
	}
	c.Put("c", 3, 10)
	if v, ok := c.Get("c"); !ok || v != 3 {
		t.Fatal("cache unusable after Clear")
	}
}

func TestNilCacheKeepsNothing(t *testing.T) {
	c := New[string, int](0, 0)
	if c != nil {
		t.Fatal("New(0) is not nil")
	}
	if c.Put("a", 1, 1) {
		t.Fatal("nil cache kept a value")
	}
	if _, ok := c.Get("a"); ok || c.Len() != 0 || c.Cost() != 0 || c.Add("a", 2, 1) != 2 {
		t.Fatal("nil cache is not empty")
	}
	c.Remove("a")
}

func TestConcurrentUseStaysBounded(t *testing.T) {
	c := New[string, int](50, 0)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				k := fmt.Sprint(g, "/", i%70)
				if v, ok := c.Get(k); ok && v != i%70 {
					t.Errorf("%s = %d", k, v)
				}
				c.Put(k, i%70, 1)
			}
		})
	}
	wg.Wait()
	if c.Len() > 50 || c.Cost() != int64(c.Len()) {
		t.Fatalf("len %d cost %d, want at most 50 and equal", c.Len(), c.Cost())
	}
}

// AddCold keeps a value only where there is room, drops nothing for it,
// and puts it where it is dropped first.
func TestAddColdFillsOnlyTheRoom(t *testing.T) {
	c := New[string, int](10, 0)
	c.Put("hot", 1, 4)
	if !c.AddCold("a", 2, 3) || !c.AddCold("b", 3, 3) {
		t.Fatal("cold values not kept where there is room")
	}
	if c.AddCold("c", 4, 1) {
		t.Fatal("a cold value kept past the bound")
	}
	if _, ok := c.Get("hot"); !ok {
		t.Fatal("a cold value pushed a kept one out")
	}
	if !c.AddCold("a", 9, 3) {
		t.Fatal("a kept key not reported kept")
	}
	if v, _ := c.Get("a"); v != 2 {
		t.Fatalf("AddCold replaced a kept value: %d", v)
	}
	// b is the least recently used: a new value pushes it out first.
	c.Put("new", 5, 3)
	if _, ok := c.Get("b"); ok {
		t.Fatal("the cold value outlived the others")
	}
	for _, k := range []string{"hot", "a", "new"} {
		if _, ok := c.Get(k); !ok {
			t.Fatalf("%s dropped before the cold value", k)
		}
	}
	var nilCache *Cache[string, int]
	if nilCache.AddCold("x", 1, 1) {
		t.Fatal("a nil cache kept a value")
	}
}
