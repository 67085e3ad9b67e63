//go:build !unix

package refstore

import "os"

// LockFile does nothing here: another process may append the same
// cad-index records at the same time, which costs only space.
func LockFile(*os.File) (unlock func()) { return func() {} }

// RenameOpen renames the open file f to newpath. Where an open file
// cannot be renamed it is closed first (closing again later is harmless).
func RenameOpen(f *os.File, newpath string) error {
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), newpath)
}

// RemoveIfAbandoned does nothing here, where no lock tells a live writer
// from a dead one: removeStaleTemps removes a temporary file an hour
// after it was last written.
func RemoveIfAbandoned(string) {}
