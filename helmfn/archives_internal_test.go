package helmfn

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"
)

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// TestArchiveCacheEvictsLeastRecentlyUsed: past its bound the cache drops
// the archive used longest ago; a digest is found with or without the
// sha256: prefix.
func TestArchiveCacheEvictsLeastRecentlyUsed(t *testing.T) {
	c := newArchiveCache(40) // four archives of 10 bytes
	var ds []string
	for i := range 5 {
		b := []byte(fmt.Sprintf("archive-%02d", i))
		d := digestOf(b)
		ds = append(ds, d)
		if !c.put(d, nil, b) {
			t.Fatalf("archive %d does not match its own digest", i)
		}
		if i == 3 {
			if _, ok := c.get(ds[0], nil); !ok { // 0 becomes the most recent
				t.Fatal("archive 0 missing before the bound was reached")
			}
		}
	}
	if _, ok := c.get(ds[1], nil); ok {
		t.Error("archive 1, the least recently used, was kept past the bound")
	}
	for _, i := range []int{0, 2, 3, 4} {
		if _, ok := c.get(ds[i], nil); !ok {
			t.Errorf("archive %d was dropped", i)
		}
	}
	if _, ok := c.get(ds[0][len("sha256:"):], nil); !ok {
		t.Error("a bare hex digest does not find the archive")
	}
	if c.put(ds[0], nil, []byte("other content")) {
		t.Error("content that does not match the digest was accepted")
	}
	if _, ok := c.get("md5:abc", nil); ok {
		t.Error("a digest that is not SHA-256 found something")
	}
}
