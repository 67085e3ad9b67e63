//go:build !unix

package gitrepo

import (
	"errors"
	"os"
)

// mapFile is not available here: pack indexes are read with ReadAt.
func mapFile(*os.File, int64) ([]byte, error) { return nil, errors.ErrUnsupported }

func unmapFile([]byte) {}

func dropPages([]byte) {}
