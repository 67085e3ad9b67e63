package peakmem

import (
	"os"
	"syscall"
)

// maxRSS returns the ended child's peak resident bytes as getrusage
// reports them (ru_maxrss, in kilobytes on Linux), or 0.
func maxRSS(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok && ru != nil {
		return int64(ru.Maxrss) * 1024
	}
	return 0
}
