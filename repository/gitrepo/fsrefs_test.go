package gitrepo

import (
	"os"
	"path/filepath"
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
		h("6") + " refs/tags/z/v1" // no newline at the end
	if err := os.WriteFile(filepath.Join(dir, "packed-refs"), []byte(packed), 0o644); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"refs/heads/main": h("1"), "refs/tags/a/v1": h("2"), "refs/tags/a/v10": h("4"),
		"refs/tags/z/v1": h("6"), "refs/tags/a/v": "", "refs/tags/a/v1x": "", "refs/heads/mai": "",
	}
	f := &fsRefs{gitDir: dir}
	for round := 0; round < 3; round++ {
		for name, w := range want {
			got, ok, err := f.ref(plumbing.ReferenceName(name))
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
