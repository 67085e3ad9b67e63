package gitrepo

import (
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/configasdata/cad/repository/gitrepo/internal/index"
	"github.com/configasdata/cad/repository/gitrepo/internal/refstore"
)

// SetFaultHook sets the hook called at every step of a ref transaction on
// disk (internal/refstore), for the crash tests of package gitrepo_test.
// SetDeferTrees sets whether lists and Get leave registered tags' package
// trees to the first read (deferTrees).
func SetDeferTrees(on bool) (restore func()) {
	old := deferTrees
	deferTrees = on
	return func() { deferTrees = old }
}

func SetFaultHook(f func(step string)) { refstore.FaultHook = f }

// The hooks into cad-paths of package internal/index (hooks.go), for the
// tests of package gitrepo_test.
type PathsRecord = index.PathsRecord

var (
	PathsLookup        = index.PathsLookup
	PathsCount         = index.PathsCount
	WritePathsFile     = index.WritePathsFile
	SetPathBucketRead  = index.SetPathBucketRead
	SetPathTailMax     = index.SetPathTailMax
	PathsTail          = index.PathsTail
	WorkspacePrefix    = index.WorkspacePrefix
	AddWorkspaceRecord = index.AddWorkspaceRecord
)

// PathsHeaderSize is the size of cad-paths's header, PathsRecordSize of
// one of its records.
const (
	PathsHeaderSize = index.PathsHeaderSize
	PathsRecordSize = index.PathsRecordSize
)

// SetDenyWrite makes writes to the git directories deny returns true for
// fail with a permission error, as for a reader that may not write; nil
// restores writes.
func SetDenyWrite(deny func(gitDir string) bool) { denyWrite = deny }

// SetTransport makes r's pushes and fetches reach its remote through
// the transport c returns, and returns a function that restores go-git's.
func SetTransport(r *Repository, c func(*transport.Endpoint) (transport.Transport, error)) (restore func()) {
	r.remote.newClient.Store(&c)
	return func() { r.remote.newClient.Store(nil) }
}

// SetCrossProcessLock sets whether the cross-process lock is taken to
// work, as on unix (true) or elsewhere (false), and returns a function
// that restores it.
func SetCrossProcessLock(works bool) (restore func()) {
	old := refstore.CrossProcessLock
	refstore.CrossProcessLock = works
	return func() { refstore.CrossProcessLock = old }
}

// LegacyFlockIn reports whether cad.lock in gitDir is also flocked for the
// store's role, as cad v0.1.0 locks it (refstore.LegacyFlockIn).
func LegacyFlockIn(gitDir string) bool { return refstore.LegacyFlockIn(gitDir) }

// SetRacyRefAge sets how old a ref file's change must be for refstore to
// trust its identity (refstore.SetRacyRefAge); a negative age trusts
// files changed just now.
func SetRacyRefAge(d time.Duration) (restore func()) { return refstore.SetRacyRefAge(d) }

// ForgetVersions empties the process-wide memo of Version tokens
// (versionMemo), so that the next Version of a new Repository computes its
// token from the refs.
func ForgetVersions() { versionMemo.Clear() }
