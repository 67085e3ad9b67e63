//go:build unix

package refstore

import (
	"os"
	"syscall"
)

// fileID returns the identity of the file fi describes.
func fileID(fi os.FileInfo) (fileIdentity, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileIdentity{}, false
	}
	return fileIdentity{dev: uint64(st.Dev), ino: uint64(st.Ino), size: fi.Size(), mtime: fi.ModTime().UnixNano()}, true //nolint:unconvert // the types differ by platform
}
