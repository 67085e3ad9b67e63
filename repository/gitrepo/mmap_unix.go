//go:build unix

package gitrepo

import (
	"errors"
	"os"
	"syscall"
)

// mapFile maps the first size bytes of f into memory, read-only; the
// pages are read from the file as they are touched.
func mapFile(f *os.File, size int64) ([]byte, error) {
	if size <= 0 || int64(int(size)) != size {
		return nil, errors.ErrUnsupported // read instead
	}
	return syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
}

func unmapFile(b []byte) { _ = syscall.Munmap(b) }
