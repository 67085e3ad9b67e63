package refstore

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// writePackedRefs writes a sorted packed-refs of n tags, each at the
// hash made of c, but tag 0 at first.
func writePackedRefs(tb testing.TB, dir string, n int, c, first string) {
	tb.Helper()
	var b strings.Builder
	b.WriteString("# pack-refs with: peeled fully-peeled sorted \n")
	for i := range n {
		v := strings.Repeat(c, 40)
		if i == 0 {
			v = strings.Repeat(first, 40)
		}
		fmt.Fprintf(&b, "%s refs/tags/pkg-%06d/v1\n", v, i)
	}
	if err := os.WriteFile(filepath.Join(dir, "packed-refs"), []byte(b.String()), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// After another writer rewrites a packed-refs this process had parsed,
// the next lookups search the new file instead of parsing it again, and
// find its new values; enough lookups parse it again.
func TestPackedRewriteSearchedNotParsed(t *testing.T) {
	dir := t.TempDir()
	writePackedRefs(t, dir, 2000, "a", "b")
	f := &FSRefs{GitDir: dir}
	defer f.Close()
	lookup := func(i int) string {
		t.Helper()
		h, ok, err := f.Ref(plumbing.ReferenceName(fmt.Sprintf("refs/tags/pkg-%06d/v1", i)))
		if err != nil || !ok {
			t.Fatalf("pkg-%06d: %v, %v", i, ok, err)
		}
		return h.String()[:1]
	}
	for i := range scansBeforeParse + 1 {
		lookup(i)
	}
	if f.hashes == nil {
		t.Fatal("not parsed after many lookups")
	}
	writePackedRefs(t, dir, 2001, "c", "d") // another size: a change
	if got := lookup(0); got != "d" {
		t.Fatalf("after the rewrite: %s, want d", got)
	}
	if f.hashes != nil {
		t.Fatal("the rewritten packed-refs was parsed for one lookup")
	}
	for i := range scansBeforeParse + 1 {
		if got := lookup(i + 1); got != "c" {
			t.Fatalf("pkg-%06d: %s, want c", i+1, got)
		}
	}
	if f.hashes == nil {
		t.Fatal("not parsed again after many lookups")
	}
	if err := os.Remove(filepath.Join(dir, "packed-refs")); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := f.Ref("refs/tags/pkg-000001/v1"); ok || err != nil {
		t.Fatalf("packed-refs removed: %v, %v", ok, err)
	}
}

// BenchmarkPackedRewriteLookup looks one ref up among 50,000 packed
// refs in a process that had parsed packed-refs, after another writer
// rewrote it (outside the timing).
func BenchmarkPackedRewriteLookup(b *testing.B) {
	dir := b.TempDir()
	f := &FSRefs{GitDir: dir}
	defer f.Close()
	n := 0
	for b.Loop() {
		b.StopTimer()
		n++
		writePackedRefs(b, dir, 50000+n%2, "a", "b")
		if f.hashes == nil {
			if _, err := f.refsUnder(); err != nil {
				b.Fatal(err)
			}
			runtime.GC() // not the lookup's
		}
		b.StartTimer()
		if _, ok, err := f.Ref(plumbing.ReferenceName(fmt.Sprintf("refs/tags/pkg-%06d/v1", n%50000))); err != nil || !ok {
			b.Fatal(ok, err)
		}
	}
}

// refsUnder parses packed-refs, as a list does.
func (f *FSRefs) refsUnder() (int, error) {
	names, _, err := f.packed()
	return len(names), err
}
