package gitobj

import (
	"bytes"
	"io"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// EncodeTree writes what go-git's encoder writes, for every mode.
func TestEncodeTreeAsGoGit(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	modes := []filemode.FileMode{filemode.Dir, filemode.Regular, filemode.Executable, filemode.Symlink, filemode.Submodule}
	for range 50 {
		var entries []TreeEntry
		tree := &object.Tree{}
		for i := range rng.Intn(30) {
			e := TreeEntry{Name: string(rune('a'+i)) + "x", Mode: modes[rng.Intn(len(modes))]}
			rng.Read(e.Hash[:])
			entries = append(entries, e)
			tree.Entries = append(tree.Entries, object.TreeEntry{Name: e.Name, Mode: e.Mode, Hash: e.Hash})
		}
		o := &plumbing.MemoryObject{}
		if err := tree.Encode(o); err != nil {
			t.Fatal(err)
		}
		rd, err := o.Reader()
		if err != nil {
			t.Fatal(err)
		}
		want, err := io.ReadAll(rd)
		if err != nil {
			t.Fatal(err)
		}
		if got := EncodeTree(entries); !bytes.Equal(got, want) {
			t.Fatalf("encodeTree:\n%q\ngo-git:\n%q", got, want)
		}
	}
}

// DecodeCommit reads what go-git's decoder reads of every commit shape:
// several parents, signed, merge tags, extra and unknown headers, an
// author out of place, no message, no blank line, a message without a
// final newline; and leaves to go-git what it would reject.
func TestDecodeCommitAsGoGit(t *testing.T) {
	tree := "tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n"
	p1 := "parent 1111111111111111111111111111111111111111\n"
	p2 := "parent 2222222222222222222222222222222222222222\n"
	author := "author A U Thor <a@example.com> 1767225600 +0100\n"
	committer := "committer Package Orchestration Service <porch@kpt.dev> 1767225601 +0000\n"
	sig := "gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAAB\n -----END PGP SIGNATURE-----\n"
	merge := "mergetag object 1111111111111111111111111111111111111111\n type commit\n tag v1\n\n"
	cases := map[string]string{
		"plain":           tree + p1 + author + committer + "\nApproving package revision a/1\n\nkpt:{\"package\":\"a\"}\n",
		"root":            tree + author + committer + "\nInitial\n",
		"merge":           tree + p1 + p2 + author + committer + "\nmerge\n",
		"signed":          tree + p1 + author + committer + sig + "\nsigned\n",
		"mergetag":        tree + p1 + p2 + author + committer + merge + "\nmsg\n",
		"encoding":        tree + author + committer + "encoding ISO-8859-1\nx-custom a\n b\n\nmsg\n",
		"no author":       tree + p1 + committer + "\nmsg\n",
		"author late":     tree + committer + author + "\nmsg\n",
		"late parent":     tree + author + p1 + committer + "\nmsg\n",
		"no message":      tree + author + committer,
		"empty message":   tree + author + committer + "\n",
		"no final eol":    tree + author + committer + "\nmsg",
		"no eol at all":   strings.TrimSuffix(tree, "\n"),
		"blank after":     tree + "\n\nmsg\n\n",
		"crlf":            tree + author + "x\r\n\r\n" + "\nmsg\n",
		"bad tree":        "tree 123\n" + author + "\nmsg\n",
		"no tree":         author + "\nmsg\n",
		"bad parent":      tree + "parent xyz\n" + author + "\nmsg\n",
		"bare parent":     tree + "parent\n" + author + "\nmsg\n",
		"bare author":     tree + "author\n" + committer + "\nmsg\n",
		"author at eof":   tree + strings.TrimSuffix(author, "\n"),
		"empty":           "",
		"tree double sp":  "tree  4b825dc642cb6eb9a060e54bf8d69288fbee4904\n\nmsg\n",
		"message headers": tree + author + "\ntree 1111111111111111111111111111111111111111\nparent x\n",
	}
	for name, raw := range cases {
		o := &plumbing.MemoryObject{}
		o.SetType(plumbing.CommitObject)
		o.Write([]byte(raw))
		c := &object.Commit{}
		gerr := c.Decode(o)
		h := plumbing.ComputeHash(plumbing.CommitObject, []byte(raw))
		ci, ok := DecodeCommit(h, []byte(raw))
		if gerr != nil {
			if ok {
				t.Errorf("%s: go-git rejects it (%v), decodeCommit read it", name, gerr)
			}
			continue
		}
		if !ok {
			continue // left to go-git, which reads it
		}
		if ci.Tree != c.TreeHash || !slices.Equal(ci.Parents, c.ParentHashes) || ci.Message != c.Message ||
			ci.Author.Name != c.Author.Name || ci.Author.Email != c.Author.Email || !ci.Author.When.Equal(c.Author.When) || ci.Hash != h {
			t.Errorf("%s: decodeCommit %v %v %q %v; go-git %v %v %q %v", name, ci.Tree, ci.Parents, ci.Message, ci.Author, c.TreeHash, c.ParentHashes, c.Message, c.Author)
		}
	}
}
