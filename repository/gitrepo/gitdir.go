package gitrepo

// GitDir returns the git directory of a repository on disk whose refs
// are files (a local path, not a remote's CacheDir clone), while it is
// open; "" for a remote or in-memory repository and after Close. A caller
// may watch the files under it (packed-refs, refs/) to tell cheaply
// whether the refs may have changed; it must not write there.
func (r *Repository) GitDir() string {
	if r.remote != nil || r.st.fsrefs == nil || r.closed.Load() {
		return ""
	}
	return r.st.gitDir
}
