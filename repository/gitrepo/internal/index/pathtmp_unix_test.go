//go:build unix

package index

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/configasdata/cad/repository/gitrepo/internal/tmpfile"
)

// A cad-paths temporary file a killed writer left (its lock free, last
// written over tmpfile.Grace ago) is removed by the next rebuild; one a
// live writer holds locked, however old, and one written within the
// grace and not locked, are left.
func TestPathFileTempsOfDeadWritersRemoved(t *testing.T) {
	dir := t.TempDir()
	dead := filepath.Join(dir, "cad-paths-111.tmp")
	if err := os.WriteFile(dead, []byte("half a cad-paths file"), 0o644); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(dir, "cad-paths-222.tmp")
	if err := os.WriteFile(fresh, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	live := filepath.Join(dir, "cad-paths-333.tmp")
	if err := os.WriteFile(live, []byte("being written"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-tmpfile.Grace - time.Minute)
	for _, p := range []string{dead, live} {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(live)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	if err := WritePathsFile(dir, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Fatalf("the dead writer's temporary file is still there: %v", err)
	}
	for _, p := range []string{fresh, live} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s was removed: %v", filepath.Base(p), err)
		}
	}
	if _, ok := PathsCount(dir); !ok {
		t.Fatal("no cad-paths written")
	}
	left, _ := filepath.Glob(filepath.Join(dir, "cad-paths-*.tmp"))
	if len(left) != 2 {
		t.Fatalf("temporary files left: %v", left)
	}
}
