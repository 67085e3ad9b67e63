package index

import (
	"fmt"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// Lookups in a bucket of many records (every root starting with the same
// byte) find each record and nothing else, whether the bucket is read in
// one call or narrowed a record at a time.
func TestPathsFileLargeBucket(t *testing.T) {
	dir := t.TempDir()
	var recs []PathsRecord
	for i := range 300 {
		var root, tree plumbing.Hash
		root[0], root[1], root[2] = 0x42, byte(i), byte(i>>8)
		tree[0], tree[1] = byte(i), byte(i>>8)
		recs = append(recs, PathsRecord{Root: root, Path: fmt.Sprintf("team/pkg-%d", i%7), Tree: tree})
	}
	if err := WritePathsFile(dir, recs); err != nil {
		t.Fatal(err)
	}
	for _, n := range []uint32{1024, 16, 1, 0} {
		restore := SetPathBucketRead(n)
		for _, r := range recs {
			if got, ok := PathsLookup(dir, r.Root, r.Path); !ok || got != r.Tree {
				t.Fatalf("bucket read %d: %s under %s = %s, %v; want %s", n, r.Path, r.Root, got, ok, r.Tree)
			}
			if _, ok := PathsLookup(dir, r.Root, r.Path+"x"); ok {
				t.Fatalf("bucket read %d: a path never recorded was found", n)
			}
		}
		restore()
	}
}
