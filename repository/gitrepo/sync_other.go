//go:build !linux

package gitrepo

import "errors"

// errSyncUnsupported: a directory cannot be synced on this system.
var errSyncUnsupported = errors.New("sync not supported")

// syncFS does nothing where syncfs(2) does not exist: objects are synced
// by the system in its own time, and refs and the journal still are
// (each file is synced before it is renamed).
func syncFS(string) error { return nil }
