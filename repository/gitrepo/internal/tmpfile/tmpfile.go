// Package tmpfile creates the temporary files cad writes in a git
// directory and removes those their writers left when they died, by one
// rule (RemoveStale). Package gitrepo's DESIGN.md ("Temporary files")
// lists every kind and where it is.
//
// A writer creates its file with [Create], which names it as a cad
// temporary file and, on unix, takes an flock on it that the writer's open
// file holds until it is closed: after the file is renamed into place or
// removed, or when the process dies. [RemoveStale] removes a temporary
// file when no process holds its lock and it was last written over
// [Grace] ago (on unix); where there are no file locks, when it was last
// written over [GraceNoLock] ago. The grace covers the moment between
// creating a file and locking it, and the files of a cad older than this
// package, which did not lock theirs. Removing the file of a writer
// still alive is never worse than an error for that writer: its rename
// into place fails, and nothing it wrote is read.
//
// The names: in objects/pack, tmp_pack_cad_* and tmp_idx_cad_* (git's own
// tmp_ naming, so that git prune treats them as git's); in objects/??/,
// tmp_obj_cad_*; in the git directory, cad-<kind>-<random digits>.tmp.
// Files named by git or by other programs are never touched.
package tmpfile

import (
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The prefixes of the temporary files in the objects directories.
const (
	// PackPrefix starts a pack being written in objects/pack: a fetch's
	// staging, a write's pack, a maintenance run's.
	PackPrefix = "tmp_pack_cad_"
	// IdxPrefix starts the index of such a pack.
	IdxPrefix = "tmp_idx_cad_"
	// ObjPrefix starts a loose object being written in objects/??/.
	ObjPrefix = "tmp_obj_cad_"
)

// Grace is how long after its last write a temporary file whose lock is
// free is left alone (on unix). A variable for the tests.
var Grace = time.Minute

// GraceNoLock is how long after its last write a temporary file is left
// alone where there are no file locks. A variable for the tests.
var GraceNoLock = time.Hour

// Create creates a new temporary file in dir, named pattern with a random
// string in place of its last "*" (or at its end), as os.CreateTemp does,
// and locks it (on unix) until it is closed. pattern must make a name
// IsTemp accepts. It returns os.CreateTemp's error.
func Create(dir, pattern string) (*os.File, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	lock(f)
	return f, nil
}

// IsTemp reports whether name (a base name) is that of a cad temporary
// file: tmp_pack_cad_*, tmp_idx_cad_*, tmp_obj_cad_*, or
// cad-<kind>-<digits>.tmp (not cad-packed-refs.tmp, a file of the ref
// transactions' own that their recovery removes).
func IsTemp(name string) bool {
	for _, p := range []string{PackPrefix, IdxPrefix, ObjPrefix} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	base, ok := strings.CutSuffix(name, ".tmp")
	if !ok || !strings.HasPrefix(base, "cad-") {
		return false
	}
	digits := base[strings.LastIndexByte(base, '-')+1:]
	return digits != "" && strings.Trim(digits, "0123456789") == ""
}

// RemoveStale removes the temporary files in dir (not below it) whose
// writers are gone, by the rule in the package documentation. Errors are
// ignored: a file it cannot remove is tried again next time.
func RemoveStale(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.Type().IsRegular() && IsTemp(e.Name()) {
			removeIfStale(filepath.Join(dir, e.Name()))
		}
	}
}

// stale reports whether the file fi describes was last written long
// enough ago: its lock (when there are locks) decides the rest.
func stale(fi os.FileInfo, grace time.Duration) bool {
	return time.Since(fi.ModTime()) > grace
}
