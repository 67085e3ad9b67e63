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

// stampRepo returns a bare repository made by git and a function that
// runs git in it and returns its trimmed output.
func stampRepo(t *testing.T) (dir string, gitOut func(args ...string) string) {
	t.Helper()
	dir = t.TempDir()
	gitOut = func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t", "GIT_CONFIG_GLOBAL=/dev/null")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	gitOut("init", "--quiet", "--bare")
	return dir, gitOut
}

// A Stamp is made only of files older than racyRefAge, and it shows every
// change of a ref it covers after it: a branch rewritten in place with
// the same size, a new tag in a new directory, packed-refs written anew.
func TestStamp(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("a Stamp needs change times (PackedIdentity), on Linux")
	}
	dir, gitOut := stampRepo(t)
	tree := gitOut("hash-object", "-t", "tree", "-w", "--stdin")
	c1 := gitOut("commit-tree", tree, "-m", "1")
	c2 := gitOut("commit-tree", tree, "-m", "2")
	gitOut("update-ref", "refs/heads/main", c1)
	gitOut("update-ref", "refs/tags/p/v1", c1)
	f := &FSRefs{GitDir: dir}
	prefixes, extra, byDir := []string{"refs/heads/", "refs/tags/"}, []plumbing.ReferenceName{"refs/cad/metadata"}, []string{"refs/tags/"}
	stamp := func() *Stamp {
		t.Helper()
		_, s, err := f.SnapshotStamped(prefixes, extra, byDir, func(err error) { t.Errorf("damaged: %v", err) })
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if s := stamp(); s != nil {
		t.Fatal("a Stamp of files written just now, within the racy window")
	}
	if f.Unchanged(nil) {
		t.Fatal("Unchanged(nil) is true")
	}
	defer SetRacyRefAge(-time.Hour)()
	for _, c := range []struct {
		name   string
		change func()
	}{
		{"a branch rewritten in place, same size", func() {
			if err := os.WriteFile(filepath.Join(dir, "refs", "heads", "main"), []byte(c2+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"a new tag in a new directory", func() { gitOut("update-ref", "refs/tags/q/v1", c1) }},
		{"a loose tag replaced", func() { gitOut("update-ref", "refs/tags/q/v1", c2) }},
		{"the metadata ref created", func() { gitOut("update-ref", "refs/cad/metadata", c1) }},
		{"git pack-refs", func() { gitOut("pack-refs", "--all") }},
		{"a packed tag deleted", func() { gitOut("update-ref", "-d", "refs/tags/p/v1") }},
	} {
		s := stamp()
		if s == nil || !f.Unchanged(s) {
			t.Fatalf("before %s: no Stamp, or one that does not hold", c.name)
		}
		time.Sleep(20 * time.Millisecond) // past the file system clock's tick
		c.change()
		if f.Unchanged(s) {
			t.Errorf("%s: the Stamp still holds", c.name)
		}
	}
}

// Digest changes with every change of a ref directly below its prefix,
// loose or packed, and not with a change elsewhere.
func TestDigest(t *testing.T) {
	dir, gitOut := stampRepo(t)
	tree := gitOut("hash-object", "-t", "tree", "-w", "--stdin")
	c1 := gitOut("commit-tree", tree, "-m", "1")
	c2 := gitOut("commit-tree", tree, "-m", "2")
	gitOut("update-ref", "refs/tags/p/v1", c1)
	gitOut("update-ref", "refs/tags/q/v1", c1)
	f := &FSRefs{GitDir: dir}
	digest := func() [32]byte {
		t.Helper()
		d, err := f.Digest("refs/tags/p/")
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	prev := digest()
	for _, c := range []struct {
		name    string
		changed bool
		change  func()
	}{
		{"another package's tag", false, func() { gitOut("update-ref", "refs/tags/q/v2", c1) }},
		{"a new loose tag", true, func() { gitOut("update-ref", "refs/tags/p/v2", c1) }},
		{"a loose tag moved", true, func() { gitOut("update-ref", "refs/tags/p/v2", c2) }},
		{"the tags packed", true, func() { gitOut("pack-refs", "--all") }},
		{"a packed tag moved (loose over it)", true, func() { gitOut("update-ref", "refs/tags/p/v1", c2) }},
		{"packed again", true, func() { gitOut("pack-refs", "--all") }},
		{"a packed tag deleted", true, func() { gitOut("update-ref", "-d", "refs/tags/p/v2") }},
		{"another package's packed tag deleted", false, func() { gitOut("update-ref", "-d", "refs/tags/q/v2") }},
	} {
		c.change()
		d := digest()
		if c.changed == (d == prev) {
			t.Errorf("%s: digest changed %v, want %v", c.name, d != prev, c.changed)
		}
		prev = d
	}
}

// A packed-refs written anew with the size and modification time of the
// one parsed (another writer in the same tick of the clock, here set
// back by hand) is parsed again: its inode and change time differ.
func TestPackedRewriteSameSizeAndTime(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs change times (PackedIdentity), on Linux")
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "packed-refs")
	h1, h2 := strings.Repeat("1", 40), strings.Repeat("2", 40)
	write := func(h string, mod time.Time) {
		t.Helper()
		if err := os.WriteFile(p+".new", []byte("# pack-refs with: peeled fully-peeled sorted \n"+h+" refs/tags/p/v1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p+".new", mod, mod); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(p+".new", p); err != nil {
			t.Fatal(err)
		}
	}
	mod := time.Now().Add(-time.Hour).Truncate(time.Second)
	write(h1, mod)
	f := &FSRefs{GitDir: dir}
	for range scansBeforeParse + 1 { // past the block scans: parsed
		if h, ok, err := f.Ref("refs/tags/p/v1"); err != nil || !ok || h.String() != h1 {
			t.Fatalf("Ref = %s, %v, %v; want %s", h, ok, err, h1)
		}
	}
	write(h2, mod)
	if h, ok, err := f.Ref("refs/tags/p/v1"); err != nil || !ok || h.String() != h2 {
		t.Fatalf("after packed-refs was written anew: Ref = %s, %v, %v; want %s", h, ok, err, h2)
	}
}
