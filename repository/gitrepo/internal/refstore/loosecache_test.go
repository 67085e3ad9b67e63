package refstore

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// A loose ref's value cached by a snapshot is read again when its file
// changes: rewritten in place with the same size (as a person's editor
// would), replaced by git update-ref, damaged, removed; and a ref written
// within racyRefAge of a snapshot is never cached.
func TestSnapshotLooseCache(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the cache needs change times (PackedIdentity), on Linux")
	}
	old := racyRefAge
	racyRefAge = 100 * time.Millisecond
	t.Cleanup(func() { racyRefAge = old })
	dir := t.TempDir()
	if out, err := exec.Command("git", "init", "--quiet", "--bare", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	gitOut := func(stdin string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	tree := gitOut("", "hash-object", "-t", "tree", "-w", "--stdin")
	commits := map[string]string{}
	// h returns the id of commit c (a commit git update-ref accepts).
	h := func(c string) string {
		if id, ok := commits[c]; ok {
			return id
		}
		commits[c] = gitOut("", "commit-tree", tree, "-m", c)
		return commits[c]
	}
	ref := "refs/heads/drafts/pkg/ws"
	path := filepath.Join(dir, filepath.FromSlash(ref))
	write := func(content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f := &FSRefs{GitDir: dir}
	var damaged []error
	snap := func() (string, bool) {
		t.Helper()
		damaged = nil
		s, err := f.Snapshot([]string{"refs/heads/"}, nil, func(err error) { damaged = append(damaged, err) })
		if err != nil {
			t.Fatal(err)
		}
		for i, n := range s.Names {
			if n == ref {
				return s.Hashes[i].String(), true
			}
		}
		return "", false
	}
	expect := func(what, want string) {
		t.Helper()
		for range 2 { // the second from the cache, when cached
			if got, ok := snap(); !ok || got != want {
				t.Fatalf("%s: %q, %v; want %s", what, got, ok, want)
			}
		}
	}
	settle := func() { time.Sleep(2 * racyRefAge) }

	write(h("1") + "\n")
	expect("new, racy", h("1"))
	settle()
	expect("settled", h("1"))
	if _, ok := f.seen[ref]; !ok {
		t.Fatal("a settled ref was not cached")
	}
	write(h("2") + "\n") // in place, same size
	expect("rewritten in place", h("2"))
	settle()
	expect("settled again", h("2"))
	gitOut("", "update-ref", ref, h("3"))
	expect("git update-ref", h("3"))
	settle()
	expect("settled after git", h("3"))
	write("garbage\n")
	if _, ok := snap(); ok || len(damaged) != 1 {
		t.Fatalf("a damaged ref: listed, or %d damage reports", len(damaged))
	}
	settle()
	write(h("4") + "\n")
	expect("repaired", h("4"))
	settle()
	expect("repaired, settled", h("4"))
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if got, ok := snap(); ok {
		t.Fatalf("a removed ref still listed: %s", got)
	}
	// A cached value under another name is never used.
	f.seenMu.Lock()
	f.seen["refs/heads/other"] = seenRef{hash: plumbing.NewHash(h("9"))}
	f.seenMu.Unlock()
	write(h("5") + "\n")
	expect("written again", h("5"))
}
