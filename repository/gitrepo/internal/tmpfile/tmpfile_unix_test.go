//go:build unix

package tmpfile

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestIsTemp(t *testing.T) {
	for name, want := range map[string]bool{
		"tmp_pack_cad_fetch_123":   true,
		"tmp_idx_cad_maint_9":      true,
		"tmp_pack_cad_x":           true, // cad v0.1.0's staging
		"tmp_obj_cad_77":           true,
		"cad-paths-123456.tmp":     true,
		"cad-packed-refs.tmp":      false, // the ref transactions' own
		"cad-paths-.tmp":           false,
		"cad-paths":                false,
		"tmp_pack_123":             false, // git's
		"tmp_obj_abc":              false, // git's
		"pack-0123.pack":           false,
		"cad.lock":                 false,
		"cad-journal":              false,
		"refs-cad-paths-12.tmp":    false,
		"cad-paths-12.tmp.partial": false,
	} {
		if got := IsTemp(name); got != want {
			t.Errorf("IsTemp(%q) = %v, want %v", name, got, want)
		}
	}
}

// RemoveStale removes a temporary file whose lock is free and which was
// last written over Grace ago, and leaves one a live writer holds (however
// old), one written within Grace, and files that are not cad's
// temporary files.
func TestRemoveStale(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-Grace - time.Minute)
	plant := func(name string, age time.Time) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, age, age); err != nil {
			t.Fatal(err)
		}
		return p
	}
	dead := plant("cad-paths-1.tmp", old)
	deadPack := plant(PackPrefix+"x", old)
	fresh := plant(ObjPrefix+"y", time.Now())
	gits := plant("tmp_pack_1", old)
	packedRefs := plant("cad-packed-refs.tmp", old)
	live, err := Create(dir, IdxPrefix+"live_")
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	if err := os.Chtimes(live.Name(), old, old); err != nil {
		t.Fatal(err)
	}
	RemoveStale(dir)
	for p, kept := range map[string]bool{dead: false, deadPack: false, fresh: true, gits: true, packedRefs: true, live.Name(): true} {
		if _, err := os.Stat(p); (err == nil) != kept {
			t.Errorf("%s: kept %v, want %v (%v)", filepath.Base(p), err == nil, kept, err)
		}
	}
	live.Close() // its writer is gone
	RemoveStale(dir)
	if _, err := os.Stat(live.Name()); !os.IsNotExist(err) {
		t.Fatalf("a dead writer's old file was left: %v", err)
	}
}
