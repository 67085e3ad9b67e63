package refstore

import (
	"encoding/binary"
	"os"
	"syscall"
)

// PackedIdentity returns the identity of the file fi describes (as the
// loose-ref cache keeps packed-refs'): a byte 1 (an identity of no file
// is all zero), then device, inode, size, modification and change times,
// 8 bytes each, big-endian. A file written
// anew (as git and cad write packed-refs) has another, unless it gets a
// freed inode, the size and the change time (to the clock's tick) of the
// old. ok is false when fi has no stat data.
func PackedIdentity(fi os.FileInfo) ([41]byte, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return [41]byte{}, false
	}
	return statIdentity(st), true
}

// statIdentity is PackedIdentity of the file st describes.
func statIdentity(st *syscall.Stat_t) [41]byte {
	var id [41]byte
	id[0] = 1
	b := id[1:]
	binary.BigEndian.PutUint64(b[0:], uint64(st.Dev)) //nolint:unconvert // the types differ by platform
	binary.BigEndian.PutUint64(b[8:], uint64(st.Ino)) //nolint:unconvert // the types differ by platform
	binary.BigEndian.PutUint64(b[16:], uint64(st.Size))
	binary.BigEndian.PutUint64(b[24:], uint64(int64(st.Mtim.Sec)*1e9+int64(st.Mtim.Nsec))) //nolint:unconvert // the types differ by platform
	binary.BigEndian.PutUint64(b[32:], uint64(int64(st.Ctim.Sec)*1e9+int64(st.Ctim.Nsec))) //nolint:unconvert // the types differ by platform
	return id
}

// identityAt returns the identity of the file at path p, not following a
// symbolic link (PackedIdentity's, from an lstat), all zero when there is
// no file there; ok is false when it cannot be known.
func identityAt(p string) (id [41]byte, ok bool) {
	var st syscall.Stat_t
	for {
		err := syscall.Lstat(p, &st)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return id, notExist(err)
		}
		return statIdentity(&st), true
	}
}
