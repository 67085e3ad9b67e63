//go:build !unix

package gitrepo

import (
	"context"
	"os"
)

// fileLock is a no-op where flock is not available: processes sharing one
// git directory are then not guarded against each other, only goroutines.
type fileLock struct{}

func newFileLock(string) *fileLock                 { return &fileLock{} }
func (*fileLock) lock(context.Context, bool) error { return nil }
func (*fileLock) unlock()                          {}
func (*fileLock) close()                           {}

// lockFile does nothing here: another process may append the same
// cad-index records at the same time, which costs only space.
func lockFile(*os.File) (unlock func()) { return func() {} }

// renameOpen renames the open file f to newpath. Where an open file
// cannot be renamed it is closed first (closing again later is harmless).
func renameOpen(f *os.File, newpath string) error {
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), newpath)
}

// removeIfAbandoned does nothing here, where no lock tells a live writer
// from a dead one: removeStaleTemps removes a temporary file an hour
// after it was last written.
func removeIfAbandoned(string) {}
