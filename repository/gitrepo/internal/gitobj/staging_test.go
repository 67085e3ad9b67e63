package gitobj

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/configasdata/cad/repository/gitrepo/internal/tmpfile"
)

// stagingPack returns the bytes of a pack holding objs, written by
// WritePack into a directory of its own.
func stagingPack(t *testing.T, objs []PackObject) []byte {
	t.Helper()
	path, err := WritePack(t.TempDir(), objs, func(*os.File) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func stagingObjs() []PackObject {
	var objs []PackObject
	for _, s := range []string{"one\n", "two\n", "three\n"} {
		data := []byte(s)
		objs = append(objs, PackObject{Hash: plumbing.ComputeHash(plumbing.BlobObject, data), Type: plumbing.BlobObject, Data: data})
	}
	return objs
}

// tmpNames returns the staging files left in dir.
func tmpNames(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), StagePackPrefix) || strings.HasPrefix(e.Name(), StageIdxPrefix) {
			out = append(out, e.Name())
		}
	}
	return out
}

// A staged pack on disk is installed as pack-<id>.pack and .idx, which
// PackReader reads every object from, syncing both files and the
// directory, and Close leaves no temporary file; a second install of the
// same pack renames nothing and leaves no temporary file either.
func TestPackStagingInstallsOnDisk(t *testing.T) {
	objs := stagingObjs()
	pack := stagingPack(t, objs)
	gitDir := t.TempDir()
	dir := filepath.Join(gitDir, "objects", "pack")
	for round := 0; round < 2; round++ {
		s, err := NewPackStaging(gitDir)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Write(pack); err != nil {
			t.Fatal(err)
		}
		synced := 0
		if err := s.Prepare(func(*os.File) error { synced++; return nil }); err != nil {
			t.Fatal(err)
		}
		if synced != 2 {
			t.Fatalf("round %d: Prepare synced %d files, want 2", round, synced)
		}
		if n := len(tmpNames(t, dir)); n != 2 {
			t.Fatalf("round %d: %d staging files after Prepare, want 2", round, n)
		}
		dirSynced := 0
		if err := s.Install(memory.NewStorage(), func(string) error { dirSynced++; return nil }); err != nil {
			t.Fatal(err)
		}
		if want := 1 - round; dirSynced != want {
			t.Fatalf("round %d: Install synced the directory %d times, want %d", round, dirSynced, want)
		}
		s.Close()
		if left := tmpNames(t, dir); len(left) != 0 {
			t.Fatalf("round %d: staging files left: %v", round, left)
		}
		if _, err := s.Write([]byte("x")); err == nil {
			t.Fatalf("round %d: Write after Close succeeded", round)
		}
	}
	pr := NewPackReader(gitDir)
	defer pr.Close()
	for _, o := range objs {
		typ, data, err := pr.Object(o.Hash, nil)
		if err != nil || typ != o.Type || !bytes.Equal(data, o.Data) {
			t.Fatalf("object %s: %v %q %v, want %v %q", o.Hash, typ, data, err, o.Type, o.Data)
		}
	}
}

// A damaged pack fails Prepare and, closed, leaves nothing in objects/pack.
func TestPackStagingDamagedLeavesNothing(t *testing.T) {
	pack := stagingPack(t, stagingObjs())
	pack[len(pack)/2] ^= 0xff
	gitDir := t.TempDir()
	s, err := NewPackStaging(gitDir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(pack); err != nil {
		t.Fatal(err)
	}
	if err := s.Prepare(nil); err == nil {
		t.Fatal("Prepare of a damaged pack succeeded")
	}
	s.Close()
	ents, _ := os.ReadDir(filepath.Join(gitDir, "objects", "pack"))
	if len(ents) != 0 {
		t.Fatalf("left in objects/pack: %v", ents)
	}
}

// A staged pack in memory is copied object by object into the storage.
func TestPackStagingInMemory(t *testing.T) {
	objs := stagingObjs()
	s, err := NewPackStaging("")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Write(stagingPack(t, objs)); err != nil {
		t.Fatal(err)
	}
	if err := s.Prepare(nil); err != nil {
		t.Fatal(err)
	}
	ms := memory.NewStorage()
	if err := s.Install(ms, nil); err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if err := ms.HasEncodedObject(o.Hash); err != nil {
			t.Fatalf("object %s: %v", o.Hash, err)
		}
	}
}

// NewPackStaging removes stale staging files (tmpfile.RemoveStale) and keeps
// younger ones (a fetch under way) and other files.
func TestPackStagingRemovesStale(t *testing.T) {
	gitDir := t.TempDir()
	dir := filepath.Join(gitDir, "objects", "pack")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-tmpfile.Grace - time.Minute)
	files := map[string]bool{ // name: kept
		StagePackPrefix + "old":                    false,
		StageIdxPrefix + "old":                     false,
		StagePackPrefix + "new":                    true,
		StageIdxPrefix + "new":                     true,
		"tmp_pack_other":                           true,
		"pack-" + strings.Repeat("0", 40) + ".idx": true,
	}
	for name := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, "old") || !strings.Contains(name, "cad") {
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	s, err := NewPackStaging(gitDir)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	for name, kept := range files {
		_, err := os.Stat(filepath.Join(dir, name))
		if got := err == nil; got != kept {
			t.Errorf("%s: present %v, want %v", name, got, kept)
		}
	}
}

// WritePack with a nil sync writes a pack as with one (nil syncs
// nothing, as for PackStaging), which a PackReader reads back.
func TestWritePackNilSync(t *testing.T) {
	gitDir := t.TempDir()
	objs := stagingObjs()
	if _, err := WritePack(gitDir, objs, nil); err != nil {
		t.Fatal(err)
	}
	pr := NewPackReader(gitDir)
	defer pr.Close()
	for _, o := range objs {
		typ, data, err := pr.Object(o.Hash, nil)
		if err != nil || typ != o.Type || !bytes.Equal(data, o.Data) {
			t.Fatalf("object %s: %v %q %v, want %v %q", o.Hash, typ, data, err, o.Type, o.Data)
		}
	}
}
