package index

import (
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/configasdata/cad/repository/gitrepo/internal/gitobj"
)

// What the index records reads back the same, and a damaged line is
// skipped, not believed.
func TestObjIndexRoundTrip(t *testing.T) {
	dir := t.TempDir()
	x := NewObjIndex(dir)
	when := time.Date(2026, 3, 1, 12, 0, 0, 0, time.FixedZone("", 5*3600+1800))
	c := &gitobj.CommitInfo{
		Hash: plumbing.NewHash(strings.Repeat("a1", 20)), Tree: plumbing.NewHash(strings.Repeat("b2", 20)),
		Parents: []plumbing.Hash{plumbing.NewHash(strings.Repeat("c3", 20)), plumbing.NewHash(strings.Repeat("d4", 20))},
		Author:  object.Signature{Name: "Zoë \"Z\" Example", Email: "z@example.com", When: when},
		Message: "Approving package revision a/b/3\n\nkpt:{\"package\":\"a/b\",\"workspaceName\":\"w 1\",\"revision\":\"3\"}\n",
	}
	c.Annotations = gitobj.Annotations(c.Message)
	root := plumbing.NewHash(strings.Repeat("e5", 20))
	sub := gitobj.TreeEntry{Name: "b", Mode: filemode.Dir, Hash: plumbing.NewHash(strings.Repeat("f6", 20))}
	x.AddCommit(c)
	x.AddSubtree(root, "a/b", sub)
	root2 := plumbing.NewHash(strings.Repeat("07", 20))
	x.AddSubtree(root2, "a/b", sub)
	x.Flush()

	y := NewObjIndex(dir)
	got := y.Commit(c.Hash)
	if got == nil || got.Tree != c.Tree || len(got.Parents) != 2 || got.Parents[1] != c.Parents[1] ||
		got.Author.Name != c.Author.Name || got.Author.Email != c.Author.Email || !got.Author.When.Equal(when) ||
		got.Message != c.Message || len(got.Annotations) != 1 || got.Annotations[0].WorkspaceName != "w 1" {
		t.Fatalf("commit read back as %+v", got)
	}
	if _, off := got.Author.When.Zone(); off != 5*3600+1800 {
		t.Fatalf("time zone offset %d", off)
	}
	if e, ok := y.Subtree(root, "a/b"); !ok || e != sub {
		t.Fatalf("subtree read back as %+v, %v", e, ok)
	}

	// Damage: a changed byte in the first path record, and a last line
	// cut short, as a crash in the middle of a write leaves it.
	p := filepath.Join(dir, indexName)
	data, _ := os.ReadFile(p)
	lines := strings.SplitAfter(string(data), "\n")
	lines[1] = strings.Replace(lines[1], "a/b", "a/c", 1)
	damaged := strings.Join(lines, "") + "c " + strings.Repeat("9", 40) + " 12"
	if err := os.WriteFile(p, []byte(damaged), 0o644); err != nil {
		t.Fatal(err)
	}
	z := NewObjIndex(dir)
	if z.Commit(c.Hash) == nil {
		t.Fatal("an intact record was dropped")
	}
	if _, ok := z.Subtree(root, "a/c"); ok {
		t.Fatal("a record whose checksum does not match was believed")
	}
	if _, ok := z.Subtree(root, "a/b"); ok {
		t.Fatal("the damaged record still answers")
	}
	if _, ok := z.Subtree(root2, "a/b"); !ok {
		t.Fatal("the intact record after the damaged one was dropped")
	}
}

// A commit record is written byte for byte as the file's format says
// (doc.go): the fields, then a space and the CRC-32 of the body in eight
// hex digits; names, emails and messages that need quoting included.
func TestCommitRecordBytes(t *testing.T) {
	h := func(s string) plumbing.Hash { return plumbing.NewHash(strings.Repeat(s, 20)) }
	for _, c := range []*gitobj.CommitInfo{
		{Hash: h("a1"), Tree: h("b2")},
		{Hash: h("a1"), Tree: h("b2"), Parents: []plumbing.Hash{h("c3")},
			Author:  object.Signature{Name: "Ann \"the\" Author", Email: "ann@example.com", When: time.Unix(1767225600, 0).In(time.FixedZone("", -7*3600))},
			Message: "Approving package revision `p`/`3`\n\nkpt:{\"package\":\"p\"}\n"},
		{Hash: h("a1"), Tree: h("b2"), Parents: []plumbing.Hash{h("c3"), h("d4"), h("e5")},
			Author:  object.Signature{Name: "Zoë\tÅström", Email: "", When: time.Unix(-5, 0).UTC()},
			Message: "\x00\xff not UTF-8 \u2028"},
	} {
		parents := "-"
		if len(c.Parents) > 0 {
			var ps []string
			for _, p := range c.Parents {
				ps = append(ps, p.String())
			}
			parents = strings.Join(ps, ",")
		}
		_, offset := c.Author.When.Zone()
		body := fmt.Sprintf("c %s %s %s %s %s %d %d %s", c.Hash, c.Tree, parents,
			strconv.Quote(c.Author.Name), strconv.Quote(c.Author.Email), c.Author.When.Unix(), offset, strconv.Quote(c.Message))
		want := fmt.Sprintf("%s %08x\n", body, crc32.ChecksumIEEE([]byte(body)))
		x := NewObjIndex(t.TempDir())
		x.mu.Lock()
		x.load()
		x.mu.Unlock()
		x.AddCommit(c)
		if got := x.pending.String(); got != want {
			t.Fatalf("record\n%q\nwant\n%q", got, want)
		}
		back, ok := parseCommitRecord(body)
		if !ok || back.Hash != c.Hash || back.Message != c.Message || back.Author.Name != c.Author.Name || len(back.Parents) != len(c.Parents) {
			t.Fatalf("read back %+v, %v", back, ok)
		}
	}
}
