package gitrepo

import (
	"fmt"
	"path"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// UnsupportedFileError reports an entry of a package's tree that a
// revision's files (revision.Files: paths and contents, no modes) cannot
// hold without changing it: a symbolic link (mode 120000). Read as a
// file it would hold its target's path, and written back it would become
// a regular file; so reading the files of a revision that holds one fails
// with this error, naming it, and nothing is ever written from it. It
// matches repository.ErrNotSupported. Listing such a revision, and its
// lifecycle changes, which copy trees, are not affected.
type UnsupportedFileError struct {
	Path string            // the entry's path in the package
	Mode filemode.FileMode // its git mode
}

// Error names the entry and its mode.
func (e *UnsupportedFileError) Error() string {
	what := "an entry of mode " + e.Mode.String()
	if e.Mode == filemode.Symlink {
		what = "a symbolic link (mode 120000)"
	}
	return fmt.Sprintf("%s is %s, which cad cannot read as a file without turning it into a regular file on write", e.Path, what)
}

// Is reports whether target is repository.ErrNotSupported.
func (e *UnsupportedFileError) Is(target error) bool { return target == repository.ErrNotSupported }

// keepGitlinks returns the package tree pkgTree, which putFiles stored
// from files, with the submodule entries (gitlinks, mode 160000) of the
// package directory full of the tree root put back: files cannot hold
// them (files skips them when reading), so a draft's commit, which
// replaces the whole package directory, keeps them as they were. A
// gitlink whose path the new files take (a file there, below it, or a
// file where one of its directories was) is dropped, with a warning.
func (v *view) keepGitlinks(root plumbing.Hash, full string, pkgTree plumbing.Hash, files revision.Files, warn func(string, ...any)) (plumbing.Hash, error) {
	if root.IsZero() {
		return pkgTree, nil
	}
	old, ok, err := v.subtree(root, full)
	if err != nil || !ok {
		return pkgTree, err
	}
	type gitlink struct {
		path string
		hash plumbing.Hash
	}
	var links []gitlink
	var walk func(h plumbing.Hash, prefix string) error
	walk = func(h plumbing.Hash, prefix string) error {
		entries, err := v.tree(h)
		if err != nil {
			return err
		}
		for _, e := range entries {
			switch e.Mode {
			case modeDir:
				if err := walk(e.Hash, path.Join(prefix, e.Name)); err != nil {
					return err
				}
			case filemode.Submodule:
				links = append(links, gitlink{path.Join(prefix, e.Name), e.Hash})
			}
		}
		return nil
	}
	if err := walk(old, ""); err != nil {
		return plumbing.ZeroHash, err
	}
	for _, l := range links {
		if taken(files, l.path) {
			warn("dropping submodule: the package's files take its path", "path", l.path, "commit", l.hash.String())
			continue
		}
		if pkgTree, err = v.replaceEntry(pkgTree, strings.Split(l.path, "/"), l.hash, filemode.Submodule); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	return pkgTree, nil
}

// taken reports whether files hold p, a path below it, or a file at one
// of its parent directories.
func taken(files revision.Files, p string) bool {
	if files.Has(p) || files.Subdir(p).Len() > 0 {
		return true
	}
	for d := path.Dir(p); d != "."; d = path.Dir(d) {
		if files.Has(d) {
			return true
		}
	}
	return false
}
