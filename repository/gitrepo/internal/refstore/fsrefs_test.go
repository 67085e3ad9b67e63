package refstore

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// A ref looked up in packed-refs reads the same whether the file is
// scanned for its line (the first lookups of a process) or parsed whole
// (after scansBeforeParse of them).
func TestPackedRefsScanAndParse(t *testing.T) {
	dir := t.TempDir()
	h := func(c string) string { return strings.Repeat(c, 40) }
	packed := "# pack-refs with: peeled fully-peeled sorted \n" +
		h("1") + " refs/heads/main\n" +
		h("2") + " refs/tags/a/v1\n" +
		"^" + h("3") + "\n" +
		h("4") + " refs/tags/a/v10\n" +
		h("5") + " refs/tags/b/refs/tags/a/v1x\n" +
		h("6") + " refs/tags/z/v1\n"
	if err := os.WriteFile(filepath.Join(dir, "packed-refs"), []byte(packed), 0o644); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"refs/heads/main": h("1"), "refs/tags/a/v1": h("2"), "refs/tags/a/v10": h("4"),
		"refs/tags/z/v1": h("6"), "refs/tags/a/v": "", "refs/tags/a/v1x": "", "refs/heads/mai": "",
	}
	f := &FSRefs{GitDir: dir}
	for round := 0; round < 3; round++ {
		for name, w := range want {
			got, ok, err := f.Ref(plumbing.ReferenceName(name))
			if err != nil {
				t.Fatal(err)
			}
			if (w == "") == ok || (ok && got.String() != w) {
				t.Fatalf("round %d (scans %d, parsed %v): %s = %s, %v; want %q", round, f.scans, f.hashes != nil, name, got, ok, w)
			}
		}
	}
	if f.hashes == nil {
		t.Fatal("many lookups never parsed packed-refs")
	}
}

// A snapshot of the refs reads what ref and under read: loose refs over
// packed ones, loose-only refs, a damaged loose ref left out even when
// packed (and reported), refs outside the prefixes left out unless named;
// with no loose ref it shares the parsed packed-refs.
func TestRefSnapshot(t *testing.T) {
	dir := t.TempDir()
	h := func(c string) plumbing.Hash { return plumbing.NewHash(strings.Repeat(c, 40)) }
	packed := "# pack-refs with: peeled fully-peeled sorted \n" +
		h("1").String() + " refs/heads/main\n" +
		h("2").String() + " refs/remotes/origin/main\n" +
		h("3").String() + " refs/tags/a/v1\n" +
		"^" + h("4").String() + "\n" +
		h("5").String() + " refs/tags/a/v2\n" +
		h("6").String() + " refs/tags/b/v1\n"
	write := func(name, content string) {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("packed-refs", packed)
	f := &FSRefs{GitDir: dir}
	extra := []plumbing.ReferenceName{"refs/remotes/origin/main"}
	s, err := f.Snapshot([]string{"refs/heads/", "refs/tags/"}, nil, func(err error) { t.Fatal(err) })
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"refs/heads/main", "refs/tags/a/v1", "refs/tags/a/v2", "refs/tags/b/v1"}; !slices.Equal(s.Names, want) {
		t.Fatalf("names %v, want %v", s.Names, want)
	}
	s, err = f.Snapshot([]string{"refs/heads/", "refs/tags/", "refs/remotes/"}, nil, func(err error) { t.Fatal(err) })
	if err != nil {
		t.Fatal(err)
	}
	if &s.Names[0] != &f.names[0] {
		t.Fatal("a snapshot of packed refs alone copied them")
	}

	write("refs/tags/a/v2", h("7").String()+"\n")           // overrides the packed value
	write("refs/tags/c/v1", h("8").String()+"\n")           // loose only
	write("refs/tags/b/v1", "not a hash\n")                 // damaged: left out
	write("refs/heads/main.lock", h("9").String()+"\n")     // a lock file, not a ref
	write("refs/remotes/origin/main", h("a").String()+"\n") // named in extra
	var damaged []error
	s, err = f.Snapshot([]string{"refs/heads/", "refs/tags/"}, extra, func(err error) { damaged = append(damaged, err) })
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]plumbing.Hash{
		"refs/heads/main": h("1"), "refs/remotes/origin/main": h("a"), "refs/tags/a/v1": h("3"),
		"refs/tags/a/v2": h("7"), "refs/tags/c/v1": h("8"),
	}
	if len(s.Names) != len(want) || !slices.IsSorted(s.Names) {
		t.Fatalf("names %v", s.Names)
	}
	for n, w := range want {
		if got, ok := s.Get(plumbing.ReferenceName(n)); !ok || got != w {
			t.Fatalf("%s = %s, %v; want %s", n, got, ok, w)
		}
	}
	if _, ok := s.Get("refs/tags/b/v1"); ok || len(damaged) != 1 {
		t.Fatalf("the damaged ref: found %v, %d reported", ok, len(damaged))
	}
	if lo, hi := s.Prefixed("refs/tags/a/"); hi-lo != 2 || s.Names[lo] != "refs/tags/a/v1" {
		t.Fatalf("prefixed: [%d, %d)", lo, hi)
	}
	if lo, hi := s.Prefixed("refs/tags/z/"); lo != hi {
		t.Fatalf("prefixed of nothing: [%d, %d)", lo, hi)
	}
	// A narrow prefix selects its refs only, packed and loose; under
	// reads the same.
	s, err = f.Snapshot([]string{"refs/tags/a/"}, []plumbing.ReferenceName{"refs/heads/none"}, func(error) {})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"refs/tags/a/v1", "refs/tags/a/v2"}; !slices.Equal(s.Names, want) || s.Hashes[1] != h("7") {
		t.Fatalf("narrow snapshot: %v %v", s.Names, s.Hashes)
	}
	m, err := f.Under("refs/tags/", func(error) {})
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 3 || m["refs/tags/a/v2"] != h("7") || m["refs/tags/c/v1"] != h("8") {
		t.Fatalf("under: %v", m)
	}
}
