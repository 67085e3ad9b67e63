//go:build !unix

package refstore

import "os"

// LockFile does nothing here: another process may append the same
// cad-paths records at the same time, which costs only space.
func LockFile(*os.File) (unlock func()) { return func() {} }
