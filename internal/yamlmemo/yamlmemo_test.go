package yamlmemo

import (
	"fmt"
	"testing"
)

// TestBounded: the memo keeps at most Entries contents, dropping the
// least recently used, and an entry is found only under the bounds it
// was stored with.
func TestBounded(t *testing.T) {
	Reset()
	defer Reset()
	lim := Limits{1, 2, 3, 4, 5, 6}
	sum := func(i int) Sum { return SumOf(fmt.Appendf(nil, "content %d", i)) }
	Store(sum(0), lim, Counts{Documents: 1, Nodes: 7})
	if c, ok := Lookup(sum(0), lim); !ok || c != (Counts{1, 7}) {
		t.Fatalf("Lookup = %v, %v; want {1 7}, true", c, ok)
	}
	other := lim
	other[2]++
	if _, ok := Lookup(sum(0), other); ok {
		t.Fatal("found under other bounds")
	}
	for i := 1; i <= Entries; i++ {
		Store(sum(i), lim, Counts{})
	}
	if _, ok := Lookup(sum(0), lim); ok {
		t.Fatalf("the oldest of %d entries is still kept; the bound is %d", Entries+1, Entries)
	}
	if _, ok := Lookup(sum(Entries), lim); !ok {
		t.Fatal("the newest entry is not kept")
	}
	if n := memo.Len(); n != Entries {
		t.Fatalf("%d entries kept, want %d", n, Entries)
	}
}
