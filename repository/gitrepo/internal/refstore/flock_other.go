//go:build !unix

package gitrepo

import (
	"context"
	"os"
)

// crossProcessLock is false here: there is no flock, so writes to a git
// directory on disk are refused (store.write), since other processes
// sharing it would not be kept out.
var crossProcessLock = false

// fileLock is a no-op where flock is not available: processes sharing one
// git directory are not guarded against each other, so store.write
// refuses writes to one.
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
