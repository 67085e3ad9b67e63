package index

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"slices"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// WsRecords.Get finds the record of every object a package's records
// hold, ids that share their first 8 bytes included, and no other.
func TestWsRecordsGet(t *testing.T) {
	var rs WsRecords
	var ids []plumbing.Hash
	for i := range 3000 {
		sum := sha256.Sum256(fmt.Appendf(nil, "object %d", i))
		h := plumbing.Hash(sum[:20])
		if i%100 == 0 && len(ids) > 0 {
			copy(h[:8], ids[len(ids)-1][:8]) // the same first 8 bytes as another
		}
		ids = append(ids, h)
		rs = append(rs, wsRec{obj: [16]byte(h[:16]), ws: WsHash(fmt.Sprint("ws", i))})
	}
	slices.SortFunc(rs, func(a, b wsRec) int { return bytes.Compare(a.obj[:], b.obj[:]) })
	for i, h := range ids {
		got, ok := rs.Get(h)
		if !ok || got != WsHash(fmt.Sprint("ws", i)) {
			t.Fatalf("object %d: %v, %v", i, got, ok)
		}
		h[15]++ // an id no record has
		if _, ok := rs.Get(h); ok {
			t.Fatalf("object %d changed: found", i)
		}
	}
	if _, ok := WsRecords(nil).Get(ids[0]); ok {
		t.Fatal("found in no records")
	}
}
