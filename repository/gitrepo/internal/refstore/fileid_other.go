//go:build !unix

package refstore

import "os"

// fileID reports false: without an inode number a file's identity is not
// known, and every loose object is synced.
func fileID(os.FileInfo) (fileIdentity, bool) { return fileIdentity{}, false }
