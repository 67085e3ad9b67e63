//go:build !linux

package refstore

import "os"

// PackedIdentity reports false (see the linux version): without a
// file's change time a rewritten packed-refs cannot be told from the old
// one, and every workspace lookup passes over the package's tags.
func PackedIdentity(os.FileInfo) ([41]byte, bool) { return [41]byte{}, false }

// identityAt reports false (see the linux version): no Stamp is made.
func identityAt(string) ([41]byte, bool) { return [41]byte{}, false }
