package apiserver

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/configasdata/cad/repository/gitrepo"
)

// racyWindow is how old every stamped file must be before a versionCache
// trusts its stamps: a change made within the file system's timestamp
// granularity of an earlier one could leave a file's modification time
// and size as they were. One second covers coarse kernel clocks and
// second-granular file systems.
const racyWindow = time.Second

// versionCache reads the Version of one git repository on disk cheaply
// while its refs do not change, whether the repository is open or not. It
// keeps the last token with a stamp (modification time and size) of
// packed-refs and of every directory and file under refs/. While every
// stamp is the same, cached returns the kept token after one lstat call
// per stamp, without opening a ref file, hashing or opening the
// repository. Any write, by this process or another one (cad, git,
// go-git), changes a stamp: git and cad put a ref file in place by
// renaming it, which changes its directory; a file rewritten in place
// changes its own stamp; packing refs rewrites packed-refs. Stamps are
// trusted only when every one is older than a second when taken (a change
// in the same clock tick as an earlier one could keep a stamp the same);
// until then every call reads the refs. It is kept per registration, so
// that closing and opening the repository again keeps it.
//
// A versionCache is safe for concurrent use.
type versionCache struct {
	dir string // the git directory

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

// newVersionCache returns the versionCache of the git directory dir.
func newVersionCache(dir string) *versionCache { return &versionCache{dir: dir} }

// cached returns the kept token when the refs' files did not change since
// it was read; ok is false otherwise (read it with Version).
func (c *versionCache) cached() (token string, ok bool) {
	c.mu.Lock()
	stamps, token := c.stamps, c.token
	c.mu.Unlock()
	if stamps != nil && unchanged(stamps) {
		return token, true
	}
	return "", false
}

// Version returns the Version of r, the open repository of the cache's
// git directory, from the kept token when the refs' files did not change
// since it was read. Its errors are gitrepo.Repository.Version's.
func (c *versionCache) Version(ctx context.Context, r *gitrepo.Repository) (string, error) {
	if ctx.Err() != nil || r.GitDir() != c.dir {
		return r.Version(ctx)
	}
	if token, ok := c.cached(); ok {
		return token, nil
	}
	at := time.Now()
	stamps, trusted := stampRefs(c.dir)
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

// stampRefs stamps packed-refs and everything under refs/ in the git
// directory dir; trusted is false when a file could not be stat'ed.
func stampRefs(dir string) (stamps []fileStamp, trusted bool) {
	trusted = true
	packed := filepath.Join(dir, "packed-refs")
	switch fi, err := os.Lstat(packed); {
	case err == nil:
		stamps = append(stamps, stampOf(packed, fi))
	case notExist(err):
		stamps = append(stamps, fileStamp{path: packed})
	default:
		trusted = false
	}
	root := filepath.Join(dir, "refs")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if notExist(err) && p == root {
				stamps = append(stamps, fileStamp{path: p})
				return nil
			}
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		stamps = append(stamps, stampOf(p, fi))
		return nil
	})
	if err != nil {
		trusted = false
	}
	return stamps, trusted
}

func stampOf(p string, fi fs.FileInfo) fileStamp {
	return fileStamp{path: p, exists: true, isDir: fi.IsDir(), size: fi.Size(), modTime: fi.ModTime()}
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

// notExist reports an error that means the path is not there.
func notExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}
