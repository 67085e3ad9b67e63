package gitrepo

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/configasdata/cad/repository"
)

// maxAlternateDepth is how deep alternates of alternates are followed,
// as git follows them: the repository's own objects/info/alternates is
// read at depth 0, an alternate's at depth 1, and a file read at a depth
// above 5 is refused (git ignores it, with an error, so that its objects
// are missing).
const maxAlternateDepth = 5

// alternates returns the object directories the objects of the git
// directory gitDir borrow from, as git reads objects/info/alternates: a
// path per line (blank lines and lines starting with # ignored, a line
// starting with a double quote read as a quoted string), relative paths
// relative to the object directory whose file names them, each
// directory's own alternates after it, depth first, every directory once
// (the repository's own objects/ never). It returns an error matching
// repository.ErrCorrupt when a line names a directory that does not
// exist, as the repository's objects are then missing, and one matching
// repository.ErrNotSupported when the alternates nest deeper than git
// reads them.
func alternates(gitDir string) ([]string, error) {
	own := filepath.Join(gitDir, "objects")
	seen := map[string]bool{canonicalDir(own): true}
	var out []string
	var walk func(objDir string, depth int) error
	walk = func(objDir string, depth int) error {
		file := filepath.Join(objDir, "info", "alternates")
		data, err := os.ReadFile(file)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: %w", repository.ErrUnavailable, err)
		}
		dirs, err := alternateLines(objDir, data)
		if err != nil {
			return fmt.Errorf("%w: %s: %w", repository.ErrCorrupt, file, err)
		}
		if len(dirs) > 0 && depth > maxAlternateDepth {
			return fmt.Errorf("%w: %s: alternates nested more than %d deep, which git does not read either", repository.ErrNotSupported, file, maxAlternateDepth)
		}
		for _, d := range dirs {
			if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
				return fmt.Errorf("%w: %s names the object directory %s, which does not exist: the objects this repository borrows from it are missing", repository.ErrCorrupt, file, d)
			}
			key := canonicalDir(d)
			if seen[key] {
				continue
			}
			seen[key] = true
			out = append(out, d)
			if err := walk(d, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(own, 0); err != nil {
		return nil, err
	}
	return out, nil
}

// alternateLines returns the object directories an alternates file of
// the object directory objDir names, absolute and cleaned.
func alternateLines(objDir string, data []byte) ([]string, error) {
	var out []string
	for _, line := range bytes.Split(data, []byte{'\n'}) {
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		p := string(line)
		if line[0] == '"' {
			// git writes a path with unusual characters C-quoted; Go's
			// quoted strings read the same escapes.
			uq, err := strconv.Unquote(p)
			if err != nil {
				return nil, fmt.Errorf("line %q: %w", p, err)
			}
			p = uq
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(objDir, p)
		}
		out = append(out, filepath.Clean(p))
	}
	return out, nil
}

// canonicalDir returns dir with its symbolic links resolved, to tell
// whether two paths name one directory.
func canonicalDir(dir string) string {
	if p, err := filepath.EvalSymlinks(dir); err == nil {
		return p
	}
	return filepath.Clean(dir)
}
