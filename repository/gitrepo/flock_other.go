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
