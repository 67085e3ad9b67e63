package refstore

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// PackedLines finds a prefix's lines in a large sorted packed-refs by its
// binary search as a scan of every line finds them: for prefixes at the
// start, in the middle and at the end of the file, for none, with peeled
// lines; a damaged line among a package's lines changes its hash, not
// those of packages far from it.
func TestPackedLinesAsScan(t *testing.T) {
	var names []string
	for p := range 60 {
		for v := 1; v <= 40; v++ {
			names = append(names, fmt.Sprintf("refs/tags/team-%02d/pkg-%03d/v%d", p%7, p, v))
		}
		names = append(names, fmt.Sprintf("refs/tags/team-%02d/pkg-%03d/sub/v1", p%7, p), fmt.Sprintf("refs/heads/drafts/team-%02d/pkg-%03d/ws", p%7, p))
	}
	slices.Sort(names)
	var b strings.Builder
	b.WriteString("# pack-refs with: peeled fully-peeled sorted \n")
	for i, n := range names {
		fmt.Fprintf(&b, "%040x %s\n", i+1, n)
		if i%5 == 0 {
			fmt.Fprintf(&b, "^%040x\n", i+100000)
		}
	}
	content := b.String()
	if len(content) < 64<<10 {
		t.Fatalf("packed-refs of %d bytes: too small for the binary search", len(content))
	}
	// scan is what PackedLines should hash: the lines of refs under
	// prefix, each with its peeled line.
	scan := func(content, prefix string) [32]byte {
		var sel strings.Builder
		in := false
		for _, l := range strings.SplitAfter(content, "\n") {
			switch {
			case l == "" || l[0] == '#':
			case l[0] == '^':
				if in {
					sel.WriteString(l)
				}
			default:
				in = strings.HasPrefix(strings.TrimSuffix(l[41:], "\n"), prefix)
				if in {
					sel.WriteString(l)
				}
			}
		}
		return sha256.Sum256([]byte(sel.String()))
	}
	dir := t.TempDir()
	write := func(c string) {
		if err := os.WriteFile(filepath.Join(dir, "packed-refs"), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(content)
	prefixes := []string{"refs/heads/", "refs/heads/drafts/team-00/pkg-000/", "refs/tags/team-00/pkg-000/", "refs/tags/team-03/pkg-031/",
		"refs/tags/team-06/pkg-055/", "refs/tags/team-06/pkg-055/sub/", "refs/tags/team-06/pkg-059/", "refs/tags/team-03/pkg-030/", "refs/tags/none/", "refs/a/", "refs/zz/"}
	for _, p := range prefixes {
		_, got, ok := PackedLines(dir, p)
		if !ok {
			t.Fatalf("%s: not found", p)
		}
		if want := scan(content, p); got != want {
			t.Fatalf("%s: the lines found are not those of a scan", p)
		}
	}
	// A damaged line among a package's lines: no answer for that
	// package, the same answers for those far from it.
	i := strings.Index(content, " refs/tags/team-03/pkg-031/v17\n")
	start := strings.LastIndexByte(content[:i], '\n') + 1
	damaged := content[:start] + "zz" + content[start+2:]
	write(damaged)
	if _, got, ok := PackedLines(dir, "refs/tags/team-03/pkg-031/"); ok && got == scan(content, "refs/tags/team-03/pkg-031/") {
		t.Fatal("a damaged line of the package hashes as the line it replaced")
	}
	for _, p := range []string{"refs/tags/team-00/pkg-000/", "refs/tags/team-06/pkg-055/"} {
		if _, got, ok := PackedLines(dir, p); !ok || got != scan(damaged, p) {
			t.Fatalf("%s: %v, or not the lines of a scan, beside a damaged line elsewhere", p, ok)
		}
	}
	// Not sorted, or cut short: no answer.
	write(strings.Replace(content, " sorted ", " ", 1))
	if _, _, ok := PackedLines(dir, "refs/tags/team-00/pkg-000/"); ok {
		t.Fatal("an unsorted packed-refs was searched")
	}
	write(content[:len(content)-3])
	if _, _, ok := PackedLines(dir, "refs/tags/team-06/pkg-059/sub/"); ok {
		t.Fatal("a packed-refs cut short was read whole")
	}
}
