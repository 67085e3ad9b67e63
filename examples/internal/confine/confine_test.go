package confine

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/configasdata/cad/repository"
)

func TestRoots(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	outside := filepath.Join(base, "outside")
	require := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	require(os.MkdirAll(outside, 0o755))
	r, err := New("operator", []string{root}, map[string]string{"cache": filepath.Join(root, "cache")})
	require(err)
	require(os.Symlink(outside, filepath.Join(root, "link")))

	for _, ok := range []string{filepath.Join(root, "a.git"), "file://" + filepath.Join(root, "x", "b.git"), "https://example.com/r.git", "mem://x"} {
		if err := r.CheckGitURL(ok); err != nil {
			t.Errorf("CheckGitURL(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{
		filepath.Join(outside, "a.git"), "file://" + outside, filepath.Join(root, "..", "outside"),
		filepath.Join(root, "link", "a.git"), // a symbolic link out of the root
		filepath.Join(root, "cache", "x"),    // private
		"svn://example.com/r",                // unsupported
	} {
		if err := r.CheckGitURL(bad); !errors.Is(err, repository.ErrInvalidInput) {
			t.Errorf("CheckGitURL(%q) = %v, want ErrInvalidInput", bad, err)
		}
	}
	// No roots: no local repository at all.
	var none *Roots
	if err := none.CheckGitURL(filepath.Join(root, "a.git")); !errors.Is(err, repository.ErrInvalidInput) {
		t.Errorf("nil Roots allowed a local path: %v", err)
	}
	if err := none.CheckGitURL("https://example.com/r.git"); err != nil {
		t.Errorf("nil Roots refused a remote URL: %v", err)
	}
}
