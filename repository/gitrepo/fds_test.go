package gitrepo_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// openIn returns the files under dir that this process holds open.
func openIn(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	var out []string
	for _, e := range es {
		if l, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && strings.HasPrefix(l, dir+string(filepath.Separator)) {
			out = append(out, strings.TrimPrefix(l, dir+string(filepath.Separator)))
		}
	}
	return out
}

// An open Repository that listed and read revisions holds cad.lock and
// cad-paths open, and no pack or index, which it reads through their
// mappings; Close releases everything.
func TestIdleDescriptors(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("mappings and /proc/self/fd: Linux")
	}
	ctx := context.Background()
	dir := copyDir(t, fixture(t, 100, 10))
	r := mustOpen(t, benchSpec(dir), nil)
	if _, err := r.List(ctx, repository.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	pr, err := r.Get(ctx, revision.Key{Package: pkgName(1), Revision: 3})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pr.Files(ctx); err != nil {
		t.Fatal(err)
	}
	for _, f := range openIn(t, dir) {
		if f != "cad.lock" && f != "cad-paths" {
			t.Errorf("an idle Repository holds %s open", f)
		}
	}
	r.Close()
	if open := openIn(t, dir); len(open) > 0 {
		t.Errorf("a closed Repository holds %v open", open)
	}
}
