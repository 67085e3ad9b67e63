//go:build unix && !linux

package gitobj

// DropPages does nothing on the unix systems other than linux: the
// syscall package offers madvise on few of them (not on darwin), and
// their kernels reclaim the pages of a mapping that is not touched.
func DropPages([]byte) {}
