//go:build unix

package gitobj

import (
	"errors"
	"os"
	"syscall"
)

// MapFile maps the first size bytes of f into memory, read-only; the
// pages are read from the file as they are touched.
func MapFile(f *os.File, size int64) ([]byte, error) {
	if size <= 0 || int64(int(size)) != size {
		return nil, errors.ErrUnsupported // read instead
	}
	return syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
}

// UnmapFile removes a mapping MapFile made.
func UnmapFile(b []byte) { _ = syscall.Munmap(b) }
