package refstore

import "os"

// SortedHeader reports whether line, packed-refs' first line, says the
// file is sorted (git's "# pack-refs with: ... sorted" trait).
func SortedHeader(line []byte) bool { return sortedHeader(line) }

// SyncFile syncs fl to disk as the store's Sync mode asks (not at all
// with SyncNone).
func (f *FSRefs) SyncFile(fl *os.File) error { return f.syncFile(fl) }

// SyncDir syncs directory dir as the store's Sync mode asks (only with
// SyncAll).
func (f *FSRefs) SyncDir(dir string) error { return f.syncDir(dir) }

// Fault calls FaultHook, when set, at step: a test's crash point.
func Fault(step string) { fault(step) }
