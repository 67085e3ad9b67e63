//go:build !unix

package refstore

import "context"

// CrossProcessLock is false here: there are no advisory file locks cad
// uses, so writes to a git directory on disk are refused (package
// gitrepo's store.write), since other processes sharing it would not be
// kept out.
var CrossProcessLock = false

// FileLock is a no-op here: processes sharing one git directory are not
// guarded against each other, so package gitrepo refuses writes to one.
type FileLock struct{}

// NewFileLock returns a lock that does nothing.
func NewFileLock(string, LockRole) *FileLock { return &FileLock{} }

// Lock does nothing and returns nil.
func (*FileLock) Lock(context.Context, bool) error { return nil }

// Unlock does nothing.
func (*FileLock) Unlock() {}

// Close does nothing.
func (*FileLock) Close() {}

// LegacyFlockIn is false here: there are no locks.
func LegacyFlockIn(string) bool { return false }
