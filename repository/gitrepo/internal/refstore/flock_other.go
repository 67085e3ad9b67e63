//go:build !unix

package refstore

import (
	"context"
	"os"
)

// CrossProcessLock is false here: there is no flock, so writes to a git
// directory on disk are refused (store.write), since other processes
// sharing it would not be kept out.
var CrossProcessLock = false

// FileLock is a no-op where flock is not available: processes sharing one
// git directory are not guarded against each other, so store.write
// refuses writes to one.
type FileLock struct{}

// NewFileLock and its methods do nothing.
func NewFileLock(string) *FileLock                 { return &FileLock{} }
func (*FileLock) Lock(context.Context, bool) error { return nil }
func (*FileLock) Unlock()                          {}
func (*FileLock) Close()                           {}

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
