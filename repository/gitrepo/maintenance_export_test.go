package gitrepo

// SetAutoCheckEvery sets how many writes apart the automatic maintenance
// looks at the repository's shape, and returns what restores it.
func SetAutoCheckEvery(n int64) (restore func()) {
	old := autoCheckEvery
	autoCheckEvery = n
	return func() { autoCheckEvery = old }
}
