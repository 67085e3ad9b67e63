//go:build unix && !linux

package refstore

import (
	"os"
	"syscall"
)

// setLockCmd is F_SETLK: a POSIX record lock, which belongs to the
// process (see lockFiles).
var setLockCmd = syscall.F_SETLK

// legacyFlock is false here: where flock and record locks are one set of
// locks (the BSDs and macOS implement both on the same lists), an flock
// beside a record lock of the same process would conflict with it. So
// whether an older cad's flock on cad.lock keeps this one out depends on
// the system; see "The cross-process lock" in the package documentation.
var legacyFlock = false

// flocksApart is false here: see legacyFlock.
func flocksApart(*os.File) bool { return false }
