package fdcheck_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/configasdata/cad/examples/internal/fdcheck"
)

// A file held open under one child of root shows that child, and only
// while it is open.
func TestHeldDirs(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("no /proc/self/fd")
	}
	root := t.TempDir()
	for _, d := range []string{"a/deep", "b"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Create(filepath.Join(root, "a", "deep", "file"))
	if err != nil {
		t.Fatal(err)
	}
	held, err := fdcheck.HeldDirs(root)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(held) != "map[a:true]" {
		t.Fatalf("held %v, want a", held)
	}
	f.Close()
	if held, _ = fdcheck.HeldDirs(root); len(held) != 0 {
		t.Fatalf("held %v after close", held)
	}
}

func ExampleHeldDirs() {
	root, _ := os.MkdirTemp("", "fdcheck")
	defer os.RemoveAll(root)
	os.Mkdir(filepath.Join(root, "repo"), 0o755)
	f, _ := os.Create(filepath.Join(root, "repo", "cad.lock"))
	defer f.Close()
	held, _ := fdcheck.HeldDirs(root)
	fmt.Println(held)
	// Output: map[repo:true]
}
