package index

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// testWSSummary is a summary of package "team/p" with loose tags and
// tags in three workspaces.
func testWSSummary() *WSSummary {
	s := &WSSummary{Full: "team/p"}
	s.State.Packed[0] = 1
	for i := 1; i < 41; i++ {
		s.State.Packed[i] = byte(i)
	}
	s.Lines[0] = 1
	s.Lines[5] = 7
	s.State.Loose = []WSLoose{{Ver: "v3", H: plumbing.NewHash(strings.Repeat("ab", 20))}, {Ver: "v4", H: plumbing.NewHash(strings.Repeat("cd", 20))}}
	for _, e := range []struct{ ws, ver string }{{"a", "v1"}, {"b", "v2"}, {"a", "v3"}, {"c", "v4"}, {"main", "main"}} {
		s.Entries = append(s.Entries, WSSumEntry{WS: WSHash8(e.ws), Ver: e.ver})
	}
	slices.SortFunc(s.Entries, CompareWSSumEntry)
	return s
}

// A summary written reads back as written: its state, its lines, the
// tags of each workspace; a summary that is damaged anywhere, cut short,
// longer, or read for another package reads as none.
func TestWSSummaryFormat(t *testing.T) {
	dir := t.TempDir()
	s := testWSSummary()
	WriteWSSummary(dir, s)
	got, ok := ReadWSSummary(dir, "team/p")
	if !ok {
		t.Fatal("the summary written does not read back")
	}
	if got.Full != s.Full || got.State.Packed != s.State.Packed || got.Lines != s.Lines || !slices.Equal(got.State.Loose, s.State.Loose) {
		t.Fatalf("read %+v, wrote %+v", got, s)
	}
	if all, ok := got.All(); !ok || !slices.Equal(all, s.Entries) {
		t.Fatalf("tags read %v %v, written %v", all, ok, s.Entries)
	}
	if named, ok := got.Named(WSHash8("a")); !ok || !slices.Equal(named, []string{"v1", "v3"}) {
		t.Fatalf("workspace a: %v %v", named, ok)
	}
	if named, ok := got.Named(WSHash8("none")); !ok || len(named) != 0 {
		t.Fatalf("a workspace no tag has: %v %v", named, ok)
	}
	if _, ok := ReadWSSummary(dir, "team/q"); ok {
		t.Fatal("another package's summary path read as a summary")
	}
	p := WSSummaryPath(dir, "team/p")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := decodeWSSummary(b, "team/other"); ok {
		t.Fatal("a summary was read as another package's")
	}
	for i := range b {
		d := slices.Clone(b)
		d[i] ^= 0x10
		if _, ok := decodeWSSummary(d, "team/p"); ok {
			t.Fatalf("a summary damaged at byte %d reads", i)
		}
	}
	for n := range len(b) {
		if _, ok := decodeWSSummary(b[:n], "team/p"); ok {
			t.Fatalf("a summary cut to %d bytes of %d reads", n, len(b))
		}
	}
	if _, ok := decodeWSSummary(append(slices.Clone(b), 0), "team/p"); ok {
		t.Fatal("a summary with a byte more reads")
	}
	// A name too long for the layout: nothing is written, the old file
	// stays.
	long := testWSSummary()
	long.Entries = append(long.Entries, WSSumEntry{WS: [8]byte{0xff}, Ver: strings.Repeat("v", 256)})
	WriteWSSummary(dir, long)
	if after, err := os.ReadFile(p); err != nil || string(after) != string(b) {
		t.Fatalf("a summary that does not fit the layout changed the file: %v", err)
	}
}

// A write removes the temporary files of writers dead an hour or more,
// and no other.
func TestWSSummaryStaleTemps(t *testing.T) {
	dir := t.TempDir()
	tmp := filepath.Join(dir, wsSumDirName, "tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	dead, live := filepath.Join(tmp, "tmp-dead"), filepath.Join(tmp, "tmp-live")
	for _, p := range []string{dead, live} {
		if err := os.WriteFile(p, []byte("half"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(dead, old, old); err != nil {
		t.Fatal(err)
	}
	WriteWSSummary(dir, testWSSummary())
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Fatalf("a dead writer's temporary file is left: %v", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Fatalf("a live writer's temporary file was removed: %v", err)
	}
	if names, _ := filepath.Glob(filepath.Join(tmp, "tmp-*")); len(names) != 1 {
		t.Fatalf("temporary files left: %v", names)
	}
}
