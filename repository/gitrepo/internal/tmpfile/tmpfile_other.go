//go:build !unix

package tmpfile

import "os"

// lock does nothing here, where there are no file locks.
func lock(*os.File) {}

// removeIfStale removes temporary file p when it was last written over
// GraceNoLock ago: with no lock, its age is all that tells a dead writer.
func removeIfStale(p string) {
	if fi, err := os.Stat(p); err == nil && stale(fi, GraceNoLock) {
		_ = os.Remove(p)
	}
}

// RenameOpen renames the open temporary file f to newpath. Where an open
// file cannot be renamed it is closed first (closing again later is
// harmless).
func RenameOpen(f *os.File, newpath string) error {
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), newpath)
}
