package apiserver

import (
	"fmt"
	"testing"

	"github.com/configasdata/cad/examples/internal/porchapi"
)

func TestPRCache(t *testing.T) {
	c := newPRCache(3)
	key := func(i int) prCacheKey { return prCacheKey{ns: "default", repo: "r", key: fmt.Sprint(i), version: "v1"} }
	for i := range 4 {
		o := &porchapi.PackageRevision{}
		o.Name = fmt.Sprint("pr", i)
		c.put(key(i), o)
	}
	if _, ok := c.get(key(0)); ok {
		t.Fatal("the least recently used object stayed past the bound")
	}
	o, ok := c.get(key(3))
	if !ok || o.Name != "pr3" {
		t.Fatalf("get: %v, %v", o, ok)
	}
	// A copy: changing what get returned does not change the cache.
	o.Name = "changed"
	if o2, _ := c.get(key(3)); o2.Name != "pr3" {
		t.Fatalf("the cached object changed to %q", o2.Name)
	}
	// Another version of the same revision is another entry.
	other := key(3)
	other.version = "v2"
	if _, ok := c.get(other); ok {
		t.Fatal("a new version hit the old one's entry")
	}
}
