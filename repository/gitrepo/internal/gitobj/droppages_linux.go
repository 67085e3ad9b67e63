package gitobj

import "syscall"

// DropPages tells the kernel the process is done with the pages of the
// mapping b for now: they leave its resident set (the file's pages stay
// in the page cache, so touching them again costs a page fault, not a
// read).
func DropPages(b []byte) {
	if len(b) > 0 {
		_ = syscall.Madvise(b, syscall.MADV_DONTNEED)
	}
}
