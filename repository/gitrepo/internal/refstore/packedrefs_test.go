package refstore

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// searchPacked finds every ref of a sorted packed-refs file by binary
// search, peeled lines and all, finds none that is not there, and reads
// an unsorted file line by line.
func TestSearchPacked(t *testing.T) {
	want := map[string]plumbing.Hash{}
	var names []string
	for i := range 300 {
		name := fmt.Sprintf("refs/tags/pkg-%03d/v%d", i/3, i%3+1)
		if i%50 == 0 {
			name = fmt.Sprintf("refs/heads/b%03d", i)
		}
		names = append(names, name)
		want[name] = plumbing.ComputeHash(plumbing.BlobObject, []byte(name))
	}
	slices.Sort(names)
	var sorted strings.Builder
	sorted.WriteString("# pack-refs with: peeled fully-peeled sorted \n")
	for i, n := range names {
		fmt.Fprintf(&sorted, "%s %s\n", want[n], n)
		if i%4 == 0 {
			fmt.Fprintf(&sorted, "^%s\n", plumbing.ComputeHash(plumbing.TagObject, []byte(n)))
		}
	}
	unsorted := strings.Replace(sorted.String(), " sorted ", " ", 1)
	lines := strings.SplitAfter(unsorted, "\n")
	slices.Reverse(lines[1:])
	for _, data := range []string{sorted.String(), strings.ReplaceAll(sorted.String(), "\n", "\r\n"), strings.Join(lines, "")} {
		for _, n := range names {
			if h, ok := searchPacked([]byte(data), n); !ok || h != want[n] {
				t.Fatalf("%s: %s, %v", n, h, ok)
			}
		}
		for _, n := range []string{"refs/heads/a", "refs/tags/pkg-000/v0", "refs/tags/pkg-050/v4", "refs/tags/zzz", "refs/tags/pkg-01"} {
			if _, ok := searchPacked([]byte(data), n); ok {
				t.Fatalf("found %s", n)
			}
		}
	}
}

// searchPackedAt, the block-by-block binary search of a large sorted
// packed-refs file, finds what searchPacked finds in the whole content:
// with peeled lines, CRLF line ends and lines longer than a block; a last
// line without a newline is damaged, as git reads it, and sends the
// caller to the parsed file.
func TestSearchPackedAt(t *testing.T) {
	var names []string
	want := map[string]plumbing.Hash{}
	for i := range 3000 {
		name := fmt.Sprintf("refs/tags/team-%02d/pkg-%04d/v%d", i%7, i/3, i%3+1)
		if i == 1500 || i == 2999 {
			name = "refs/tags/long/" + strings.Repeat("x", 5000+i)
		}
		names = append(names, name)
		want[name] = plumbing.ComputeHash(plumbing.BlobObject, []byte(name))
	}
	slices.Sort(names)
	names = slices.Compact(names)
	var sorted strings.Builder
	sorted.WriteString("# pack-refs with: peeled fully-peeled sorted \n")
	for i, n := range names {
		fmt.Fprintf(&sorted, "%s %s\n", want[n], n)
		if i%4 == 0 {
			fmt.Fprintf(&sorted, "^%s\n", plumbing.ComputeHash(plumbing.TagObject, []byte(n)))
		}
	}
	absent := []string{"refs/heads/a", "refs/tags/team-00/pkg-0000/v0", "refs/tags/team-03/pkg-0500/v9", "refs/tags/zzz", "refs/tags/team-0", "refs/tags/long/x"}
	for _, data := range []string{
		sorted.String(),
		strings.TrimSuffix(sorted.String(), "\n"),
		strings.ReplaceAll(sorted.String(), "\n", "\r\n"),
	} {
		body := int64(strings.IndexByte(data, '\n') + 1)
		r := strings.NewReader(data)
		cut := !strings.HasSuffix(data, "\n") // the last line cut short: damaged, as git reads it
		for i, n := range names {
			h, ok, clean, err := searchPackedAt(r, body, int64(len(data)), n)
			if cut && !clean {
				// A search that ends in the last lines meets the
				// unterminated one: not found, and the caller is sent to
				// the parsed file.
				if ok || err != nil {
					t.Fatalf("%.60s near an unterminated last line: %v, %v", n, ok, err)
				}
				continue
			}
			if cut && i == len(names)-1 {
				t.Fatalf("%.60s on an unterminated last line: %v, %v, %v", n, ok, clean, err)
			}
			if err != nil || !ok || !clean || h != want[n] {
				t.Fatalf("%.60s: %s, %v, %v", n, h, ok, err)
			}
		}
		for _, n := range absent {
			if _, ok, _, err := searchPackedAt(r, body, int64(len(data)), n); ok || err != nil {
				t.Fatalf("found %s (%v)", n, err)
			}
		}
	}

	// Through FSRefs, which reads a large sorted file this way and a
	// small or unsorted one whole.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "packed-refs"), []byte(sorted.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	f := &FSRefs{GitDir: dir}
	defer f.Close()
	for _, n := range names[:scansBeforeParse-1] {
		if h, ok, err := f.Ref(plumbing.ReferenceName(n)); err != nil || !ok || h != want[n] {
			t.Fatalf("%.60s: %s, %v, %v", n, h, ok, err)
		}
	}
	if f.scanFile == nil || f.scanned != nil || f.hashes != nil {
		t.Fatalf("a large sorted packed-refs was not searched block by block")
	}
}
