package gitrepo

import "github.com/configasdata/cad/repository/gitrepo/internal/index"

// SetWorkspaceSummaryMin sets how many tags a package has before its
// workspace lookups keep a summary, and returns a func restoring it.
func SetWorkspaceSummaryMin(n int) (restore func()) {
	old := wsSumMin
	wsSumMin = n
	return func() { wsSumMin = old }
}

// WorkspaceTagsRead returns how many tags the workspace lookups of r
// looked at so far.
func (r *Repository) WorkspaceTagsRead() int64 { return r.wsTagsRead.Load() }

// WorkspaceSummaryPath returns the path of package full's workspace
// summary in gitDir.
func WorkspaceSummaryPath(gitDir, full string) string { return index.WSSummaryPath(gitDir, full) }

// WorkspaceSummaryValid reports whether gitDir holds a valid workspace
// summary of package full.
func WorkspaceSummaryValid(gitDir, full string) bool {
	_, ok := index.ReadWSSummary(gitDir, full)
	return ok
}

// SetWorkspaceSummaryRewriteAfter sets how many changed loose tags a
// workspace lookup reads before it writes the summary again, and returns
// a func restoring it.
func SetWorkspaceSummaryRewriteAfter(n int) (restore func()) {
	old := wsSumRewriteAfter
	wsSumRewriteAfter = n
	return func() { wsSumRewriteAfter = old }
}
