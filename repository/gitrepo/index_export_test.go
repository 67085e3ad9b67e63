package gitrepo

import "github.com/configasdata/cad/repository/gitrepo/internal/index"

// IndexOff names the persistent indexes SetIndexOff turns off.
type IndexOff struct {
	// Paths: cad-paths' path records are neither looked up nor added.
	Paths bool
	// Workspaces: cad-paths' workspace records are neither looked up nor
	// added.
	Workspaces bool
}

// SetIndexOff turns the indexes off names off for the Repositories'
// lookups from now on, and returns a function that restores them: what a
// benchmark compares an index with.
func SetIndexOff(off IndexOff) (restore func()) {
	return index.SetOff(off.Paths, off.Workspaces)
}
