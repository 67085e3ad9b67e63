package gitrepo

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// racyWindow is how old every stamped file must be before a VersionCache
// trusts its stamps: a change made within the file system's timestamp
// granularity of an earlier one could leave a file's modification time
// and size as they were. One second covers coarse kernel clocks and
// second-granular file systems.
const racyWindow = time.Second

// VersionCache reads the Version of one Repository cheaply while its refs
// do not change. For a repository on disk it keeps the last token with a
// stamp (modification time and size) of every file and directory the
// refs live in: packed-refs, the refs directory, the directories under
// refs/heads, refs/tags and refs/cad and the loose ref files in them.
// While every stamp is the same, Version returns the kept token after
// one lstat call per stamp (four for a repository whose refs are all
// packed, one more per loose ref and directory), without opening a ref
// file or hashing. Any write,
// by this process or another one (cad, git, go-git), changes a stamp:
// git and cad put a ref file in place by renaming it, which changes its
// directory; a file rewritten in place changes its own stamp; packing
// refs rewrites packed-refs. Stamps are trusted only when every one is
// older than a second when taken (a change in the same clock tick as an
// earlier one could keep a stamp the same); until then every call reads
// the refs. cad's transaction journal needs no stamp: a read completes a
// transaction a dead process left, which renames ref files, and a live
// one renames them before it ends.
// Remote and in-memory repositories read the refs on every call.
//
// A VersionCache is safe for concurrent use.
type VersionCache struct {
	r *Repository

	mu     sync.Mutex
	stamps []fileStamp // trusted stamps; nil when none
	token  string
}

type fileStamp struct {
	path    string
	exists  bool
	isDir   bool
	size    int64
	modTime time.Time
}

// NewVersionCache returns a VersionCache over r.
func NewVersionCache(r *Repository) *VersionCache {
	return &VersionCache{r: r}
}

// Version returns r's Version (see Repository.Version), from the kept
// token when the refs' files did not change since it was read. Its errors
// are Repository.Version's.
func (c *VersionCache) Version(ctx context.Context) (string, error) {
	r := c.r
	if r.remote != nil || r.st.fsrefs == nil || r.st.gitDir == "" || r.closed.Load() || ctx.Err() != nil {
		return r.Version(ctx)
	}
	c.mu.Lock()
	stamps, token := c.stamps, c.token
	c.mu.Unlock()
	if stamps != nil && unchanged(stamps) {
		return token, nil
	}
	at := time.Now()
	stamps, trusted := c.stampRefs()
	token, err := r.Version(ctx)
	if err != nil {
		return "", err
	}
	for _, s := range stamps {
		if s.exists && s.modTime.After(at.Add(-racyWindow)) {
			trusted = false
		}
	}
	c.mu.Lock()
	if trusted {
		c.stamps, c.token = stamps, token
	} else {
		c.stamps, c.token = nil, ""
	}
	c.mu.Unlock()
	return token, nil
}

// stampRefs stamps the files of the refs Version reads; trusted is false
// when a file could not be stat'ed.
func (c *VersionCache) stampRefs() (stamps []fileStamp, trusted bool) {
	dir := c.r.st.gitDir
	trusted = true
	add := func(p string) (exists bool) {
		fi, err := os.Lstat(p)
		switch {
		case err == nil:
			stamps = append(stamps, fileStamp{path: p, exists: true, isDir: fi.IsDir(), size: fi.Size(), modTime: fi.ModTime()})
			return true
		case notExist(err):
			stamps = append(stamps, fileStamp{path: p})
		default:
			trusted = false
		}
		return false
	}
	add(filepath.Join(dir, "packed-refs"))
	add(filepath.Join(dir, "refs"))
	// refs/cad when it exists: its creation changes refs.
	switch _, err := os.Lstat(filepath.Join(dir, "refs", "cad")); {
	case err == nil:
		add(filepath.Join(dir, "refs", "cad"))
		add(filepath.Join(dir, filepath.FromSlash(string(metadataRef))))
	case !notExist(err):
		trusted = false
	}
	for _, sub := range []string{"heads", "tags"} {
		root := filepath.Join(dir, "refs", sub)
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if notExist(err) && p == root {
					stamps = append(stamps, fileStamp{path: p})
					return nil
				}
				return err
			}
			add(p)
			return nil
		})
		if err != nil {
			trusted = false
		}
	}
	return stamps, trusted
}

// unchanged reports whether every stamped file is as stamped.
func unchanged(stamps []fileStamp) bool {
	for _, s := range stamps {
		fi, err := os.Lstat(s.path)
		if err != nil {
			if !s.exists && notExist(err) {
				continue
			}
			return false
		}
		if !s.exists || fi.IsDir() != s.isDir || fi.Size() != s.size || !fi.ModTime().Equal(s.modTime) {
			return false
		}
	}
	return true
}
