//go:build !unix

package gitrepo

import "context"

// fileLock is a no-op where flock is not available: processes sharing one
// git directory are then not guarded against each other, only goroutines.
type fileLock struct{}

func newFileLock(string) *fileLock                 { return &fileLock{} }
func (*fileLock) lock(context.Context, bool) error { return nil }
func (*fileLock) unlock()                          {}
func (*fileLock) close()                           {}
