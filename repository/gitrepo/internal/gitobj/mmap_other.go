//go:build !unix

package gitobj

import (
	"errors"
	"os"
)

// MapFile is not available here: pack indexes are read with ReadAt.
func MapFile(*os.File, int64) ([]byte, error) { return nil, errors.ErrUnsupported }

// UnmapFile does nothing here.
func UnmapFile([]byte) {}

// DropPages does nothing here.
func DropPages([]byte) {}
