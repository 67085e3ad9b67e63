package gitobj

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/configasdata/cad/repository"
)

// A loose object cad writes is one git reads, compressed at zlib's
// fastest level as git writes loose objects, and writing it again
// changes nothing.
func TestWriteLooseAsGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed as a witness")
	}
	dir := filepath.Join(t.TempDir(), "r.git")
	if out, err := exec.Command("git", "init", "--quiet", "--bare", dir).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	data := bytes.Repeat([]byte("apiVersion: v1\nkind: ConfigMap\n"), 100)
	h := plumbing.ComputeHash(plumbing.BlobObject, data)
	if err := WriteLoose(dir, h, plumbing.BlobObject, data); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "objects", h.String()[:2], h.String()[2:])
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) < 2 || raw[0] != 0x78 || raw[1] != 0x01 {
		t.Fatalf("zlib header % x, want 78 01 (best speed)", raw[:2])
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o444 {
		t.Fatalf("mode %v", st.Mode())
	}
	cmd := exec.Command("git", "cat-file", "blob", h.String())
	cmd.Dir = dir
	if got, err := cmd.Output(); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("git cat-file: %v", err)
	}
	fsck := exec.Command("git", "fsck", "--strict")
	fsck.Dir = dir
	if out, err := fsck.CombinedOutput(); err != nil {
		t.Fatalf("git fsck: %v\n%s", err, out)
	}
	if err := WriteLoose(dir, h, plumbing.BlobObject, data); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(path); !bytes.Equal(again, raw) {
		t.Fatal("written again")
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "objects", h.String()[:2], "tmp_obj_*")); len(left) > 0 {
		t.Fatalf("left %v", left)
	}
}

// A tree of storedTreeMin bytes or more is stored uncompressed (a smaller
// one and a large blob deflated); git reads it and fsck accepts it.
func TestWriteLooseLargeTreeStored(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r.git")
	if out, err := exec.Command("git", "init", "--quiet", "--bare", dir).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	blobData := []byte("apiVersion: v1\nkind: ConfigMap\n")
	blob := plumbing.ComputeHash(plumbing.BlobObject, blobData)
	if err := WriteLoose(dir, blob, plumbing.BlobObject, blobData); err != nil {
		t.Fatal(err)
	}
	tree := func(n int) []byte {
		var es []TreeEntry
		for i := range n {
			es = append(es, TreeEntry{Name: fmt.Sprintf("pkg-%05d", i), Mode: filemode.Regular, Hash: blob})
		}
		return EncodeTree(es)
	}
	bigBlob := bytes.Repeat([]byte("apiVersion: v1\nkind: ConfigMap\n"), 4000)
	for _, c := range []struct {
		t      plumbing.ObjectType
		data   []byte
		stored bool
	}{
		{plumbing.TreeObject, tree(100), false},
		{plumbing.TreeObject, tree(3000), true},
		{plumbing.BlobObject, bigBlob, false},
	} {
		if c.stored != (len(c.data) >= storedTreeMin && c.t == plumbing.TreeObject) {
			t.Fatalf("a %s of %d bytes: the case is wrong", c.t, len(c.data))
		}
		h := plumbing.ComputeHash(c.t, c.data)
		if err := WriteLoose(dir, h, c.t, c.data); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(filepath.Join(dir, "objects", h.String()[:2], h.String()[2:]))
		if err != nil {
			t.Fatal(err)
		}
		if stored := fi.Size() > int64(len(c.data)); stored != c.stored {
			t.Errorf("a %s of %d bytes: %d bytes on disk, stored %v; want %v", c.t, len(c.data), fi.Size(), stored, c.stored)
		}
		cmd := exec.Command("git", "cat-file", c.t.String(), h.String())
		cmd.Dir = dir
		if got, err := cmd.Output(); err != nil || !bytes.Equal(got, c.data) {
			t.Fatalf("git cat-file %s: %v", h, err)
		}
		if typ, got, err := ReadLoose(filepath.Join(dir, "objects"), h); err != nil || typ != c.t || !bytes.Equal(got, c.data) {
			t.Fatalf("ReadLoose %s: %v", h, err)
		}
	}
	fsck := exec.Command("git", "fsck", "--strict")
	fsck.Dir = dir
	if out, err := fsck.CombinedOutput(); err != nil {
		t.Fatalf("git fsck: %v\n%s", err, out)
	}
}

// ReadLoose reads what git (and WriteLoose) stores loose, says
// ErrNotLoose for an object that is not there, and ErrCorrupt for a file
// that is not the object its name says.
func TestReadLoose(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r.git")
	if out, err := exec.Command("git", "init", "--quiet", "--bare", dir).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	cmd := exec.Command("git", "hash-object", "-w", "--stdin")
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader([]byte("written by git\n"))
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	objDir := filepath.Join(dir, "objects")
	h := plumbing.NewHash(string(bytes.TrimSpace(out)))
	typ, data, err := ReadLoose(objDir, h)
	if err != nil || typ != plumbing.BlobObject || string(data) != "written by git\n" {
		t.Fatalf("ReadLoose: %v %q %v", typ, data, err)
	}
	other := plumbing.ComputeHash(plumbing.BlobObject, []byte("other"))
	if _, _, err := ReadLoose(objDir, other); !errors.Is(err, ErrNotLoose) {
		t.Fatalf("missing object: %v", err)
	}
	// The file of h renamed to other's name: its content hashes to h.
	p := func(h plumbing.Hash) string { return filepath.Join(objDir, h.String()[:2], h.String()[2:]) }
	os.MkdirAll(filepath.Dir(p(other)), 0o755)
	if err := os.Link(p(h), p(other)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadLoose(objDir, other); !errors.Is(err, repository.ErrCorrupt) {
		t.Fatalf("misnamed object: %v", err)
	}
	garbage := plumbing.ComputeHash(plumbing.BlobObject, []byte("garbage"))
	os.MkdirAll(filepath.Dir(p(garbage)), 0o755)
	os.WriteFile(p(garbage), []byte("not zlib"), 0o444)
	if _, _, err := ReadLoose(objDir, garbage); !errors.Is(err, repository.ErrCorrupt) {
		t.Fatalf("garbage: %v", err)
	}
}

// LooseSize reads a loose object's type and size from its header, as git
// wrote it; a missing object is fs.ErrNotExist, a damaged one ErrCorrupt.
func TestLooseSize(t *testing.T) {
	gitDir := filepath.Join(t.TempDir(), "repo.git")
	gitCLI(t, "", "init", "--quiet", "--bare", gitDir)
	content := strings.Repeat("some content\n", 1000)
	cmd := exec.Command("git", "hash-object", "-w", "--stdin")
	cmd.Dir, cmd.Stdin = gitDir, strings.NewReader(content)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	h := plumbing.NewHash(strings.TrimSpace(string(out)))
	if typ, n, err := LooseSize(filepath.Join(gitDir, "objects"), h); err != nil || typ != plumbing.BlobObject || n != int64(len(content)) {
		t.Fatalf("LooseSize = %s, %d, %v; want a blob of %d", typ, n, err, len(content))
	}
	if _, _, err := LooseSize(filepath.Join(gitDir, "objects"), plumbing.NewHash("0123456789012345678901234567890123456789")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("LooseSize of a missing object: %v", err)
	}
	p := filepath.Join(gitDir, "objects", h.String()[:2], h.String()[2:])
	_ = os.Chmod(p, 0o644) // git leaves it read-only
	if err := os.WriteFile(p, []byte("not zlib"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LooseSize(filepath.Join(gitDir, "objects"), h); !errors.Is(err, repository.ErrCorrupt) {
		t.Fatalf("LooseSize of a damaged object: %v", err)
	}
}
