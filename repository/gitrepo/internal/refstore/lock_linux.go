package refstore

import (
	"os"
	"syscall"
)

// setLockCmd is F_OFD_SETLK: the lock belongs to the open file
// description, as an flock does, rather than to the process. (The process
// shares one description among its FileLocks all the same, as the other
// systems must.) A variable so that tests run the other systems' F_SETLK.
var setLockCmd = 37 // F_OFD_SETLK, the same on every Linux architecture

// legacyFlock: the store's role is also taken as an flock on the whole of
// cad.lock, which is what cad v0.1.0 took for it, so that a process of
// v0.1.0 and one of this version sharing a repository keep their readers
// and writers apart. A variable for the tests.
var legacyFlock = true

// localFS are the file systems (statfs magic numbers) on which Linux keeps
// flock and record locks apart: ext2/3/4, xfs, btrfs, tmpfs, overlayfs,
// zfs, f2fs. A network file system may carry out an flock as a record
// lock on the whole file, which would conflict with this process's and
// others' bytes of cad.lock (two processes each holding one role and
// waiting for the store's would wait for each other for ever).
var localFS = map[int64]bool{0xEF53: true, 0x58465342: true, 0x9123683E: true, 0x01021994: true, 0x794C7630: true, 0x2FC12FC1: true, 0xF2F52010: true}

// flocksApart reports whether the legacy flock is taken on the open
// cad.lock f: legacyFlock is set and f is on a file system of localFS.
func flocksApart(f *os.File) bool {
	if !legacyFlock {
		return false
	}
	var st syscall.Statfs_t
	if err := syscall.Fstatfs(int(f.Fd()), &st); err != nil {
		return false
	}
	return localFS[int64(st.Type)] //nolint:unconvert // the type differs by architecture
}
