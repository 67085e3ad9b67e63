package gitrepo

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// errSyncUnsupported is never returned on Linux.
var errSyncUnsupported = errors.New("sync not supported")

// syncFS flushes the file system holding dir to disk with one syncfs(2),
// so that the objects a write stored are durable before a ref names them.
func syncFS(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := unix.Syncfs(int(d.Fd())); err != nil {
		return &os.PathError{Op: "syncfs", Path: dir, Err: err}
	}
	return nil
}
