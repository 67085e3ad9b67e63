package refstore

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// packedLineAt finds where the first ref at or after a name starts in a
// large sorted packed-refs by its binary search as a scan of every line
// finds it: for names at the start, in the middle and at the end of the
// file, between refs and past them all, with peeled lines; a file cut
// short inside a line is no answer.
func TestPackedLineAtAsScan(t *testing.T) {
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
	body := int64(strings.IndexByte(content, '\n') + 1)
	// scan is where a pass over every line finds the first ref at or
	// after target.
	scan := func(content, target string) int64 {
		at := body
		for _, l := range strings.SplitAfter(content[body:], "\n") {
			if l != "" && l[0] != '^' && strings.TrimSuffix(l[41:], "\n") >= target {
				return at
			}
			at += int64(len(l))
		}
		return int64(len(content))
	}
	targets := []string{"refs/heads/", "refs/heads/drafts/team-00/pkg-000/", "refs/tags/team-00/pkg-000/", "refs/tags/team-03/pkg-031/",
		"refs/tags/team-06/pkg-055/", "refs/tags/team-06/pkg-055/sub/", "refs/tags/team-06/pkg-059/", "refs/tags/team-03/pkg-030/v17", "refs/tags/none/", "refs/a/", "refs/zz/"}
	r := strings.NewReader(content)
	for _, target := range targets {
		at, _, ok, err := packedLineAt(r, body, int64(len(content)), target)
		if !ok || err != nil {
			t.Fatalf("%s: not found (%v)", target, err)
		}
		if want := scan(content, target); at != want {
			t.Fatalf("%s: at %d, a scan finds it at %d", target, at, want)
		}
	}
	short := content[:len(content)-3]
	if _, _, ok, _ := packedLineAt(strings.NewReader(short), body, int64(len(short)), "refs/zz/"); ok {
		t.Fatal("a packed-refs cut short was read whole")
	}
}
