package gitrepo

import (
	"path/filepath"
	"strings"

	"github.com/configasdata/cad/internal/lru"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo/internal/refstore"
)

// CachedVersion returns the Version token of the local repository on
// disk that spec describes, as a Repository would compute it now, without
// opening the repository: from the token the last Version of that
// repository and branch in this process computed, while the Stamp of the
// ref files it read holds (one lstat per file; see Repository.Version).
// So a caller that keeps repositories closed while idle can poll them
// without opening the unchanged ones.
//
// ok is false when the token cannot be known that way: a spec that is not
// of a local git repository (a remote, one in memory, an invalid spec), no
// Version computed in this process since the last change of its refs (or
// forgotten: the memo holds the tokens of the maxVersionMemo repositories
// used last), files changed within the racy window when it was computed,
// a journal of an unfinished write pending, or a relative path. Then open
// the repository and call Version. It is safe for concurrent use.
func CachedVersion(spec repository.Spec) (token string, ok bool) {
	if spec.Type != repository.TypeGit || spec.Git == nil || classifyURL(spec.Git.Repo) != urlLocal {
		return "", false
	}
	key, ok := versionMemoKey(spec.Git.Repo, spec.Defaulted().Git.Branch)
	if !ok {
		return "", false
	}
	e, ok := versionMemo.Get(key)
	if !ok || refstore.JournalPending(e.gitDir) || !e.stamp.Holds() {
		return "", false
	}
	return e.token, true
}

// maxVersionMemo bounds the repositories whose Version tokens the memo
// keeps (a Stamp is some 150 bytes a file: a few kilobytes a repository).
const maxVersionMemo = 4096

// versionMemo is the process-wide memo of the last Version token on disk
// per local repository and branch (versionMemoKey), with the Stamp of the
// refs it hashes: what CachedVersion answers from and what a Repository
// opened anew starts from. An entry is only as good as its Stamp, which
// every reader checks, so entries written in any order by Repositories of
// the same repository are all safe.
var versionMemo = lru.New[string, memoEntry](maxVersionMemo, 1)

// versionMemoKey returns the memo key of the local repository at url
// (a path or file:// URL) and branch; ok is false for a relative path,
// whose repository depends on the working directory (and whose Stamp
// would hold relative paths): its tokens are not kept.
func versionMemoKey(url, branch string) (string, bool) {
	p := strings.TrimPrefix(url, "file://")
	if !filepath.IsAbs(p) {
		return "", false
	}
	return filepath.Clean(p) + "\x00" + branch, true
}

// memoEntry is a Version token with the Stamp of the refs it hashes and
// the git directory they are in (whose journal a reader looks for).
type memoEntry struct {
	gitDir string
	token  string
	stamp  *refstore.Stamp
}
