// Package fdcheck tells which files a process holds open, for the tests of
// the binaries' bounds on open repositories. It reads /proc/self/fd, so
// it works on Linux only.
package fdcheck

import (
	"os"
	"path/filepath"
	"strings"
)

// HeldDirs returns the direct children of root (repositories, in the
// tests) that this process holds a descriptor of: a file descriptor whose
// target is at or below one of them. Errors are those of reading
// /proc/self/fd (fs.ErrNotExist off Linux).
func HeldDirs(root string) (map[string]bool, error) {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		if rel, ok := strings.CutPrefix(target, root+string(filepath.Separator)); ok {
			out[strings.SplitN(rel, string(filepath.Separator), 2)[0]] = true
		}
	}
	return out, nil
}
