// Package confine keeps the local git repositories a process opens for
// its clients under allowed root directories: a client that names a
// repository by a local path or a file:// URL reaches only what lies under
// a root (symbolic links resolved), never the rest of the process's
// filesystem. The reference server (--repository-root) and the operator
// share it.
package confine

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
)

// Roots are the directories under which local repositories may be opened.
// The zero value and nil allow no local repository. A Roots is safe for
// concurrent use: it is not modified after New.
type Roots struct {
	who     string
	dirs    []string
	private map[string]string // name → resolved directory
}

// New returns the Roots over dirs, each made absolute, created when
// missing and with its symbolic links resolved. who names the process in
// messages ("server", "operator"). private names directories (by a name
// for messages) that are refused even under a root: the process's own
// stores. It returns an error when a root cannot be created or resolved.
func New(who string, dirs []string, private map[string]string) (*Roots, error) {
	r := &Roots{who: who, private: map[string]string{}}
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, fmt.Errorf("repository root %s: %w", d, err)
		}
		if err := os.MkdirAll(abs, 0o755); err != nil {
			return nil, fmt.Errorf("repository root: %w", err)
		}
		real, err := filepath.EvalSymlinks(abs)
		if err != nil {
			return nil, fmt.Errorf("repository root: %w", err)
		}
		r.dirs = append(r.dirs, real)
	}
	for name, d := range private {
		real, err := realPath(d)
		if err != nil {
			return nil, fmt.Errorf("private directory %s: %w", d, err)
		}
		r.private[name] = real
	}
	return r, nil
}

// Dirs returns the resolved roots.
func (r *Roots) Dirs() []string {
	if r == nil {
		return nil
	}
	return append([]string(nil), r.dirs...)
}

// CheckPath returns nil when local path p (symbolic links resolved) lies
// under a root and in no private directory, and otherwise an error
// matching repository.ErrInvalidInput that says why.
func (r *Roots) CheckPath(p string) error {
	real, err := realPath(p)
	if err != nil {
		return fmt.Errorf("%w: local repository %q: %v", repository.ErrInvalidInput, p, err)
	}
	who := "process"
	if r != nil {
		who = r.who
		names := make([]string, 0, len(r.private))
		for name := range r.private {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if within(real, r.private[name]) {
				return fmt.Errorf("%w: local repository %q is inside the %s's private %s directory", repository.ErrInvalidInput, p, who, name)
			}
		}
		for _, root := range r.dirs {
			if within(real, root) {
				return nil
			}
		}
	}
	if r == nil || len(r.dirs) == 0 {
		return fmt.Errorf("%w: local repository %q: the %s has no repository roots, so it opens no local repository (start it with --repository-root DIR, a directory that holds the repository)",
			repository.ErrInvalidInput, p, who)
	}
	return fmt.Errorf("%w: local repository %q is outside the %s's repository roots (%s); a %s opens local repositories only under them",
		repository.ErrInvalidInput, p, who, strings.Join(r.dirs, ", "), who)
}

// CheckGitURL returns nil for a git.repo value u that gitrepo.Open reads
// as a remote or in-memory repository, CheckPath's answer for a local
// path or file:// URL (judged exactly as gitrepo.Open reads it), and an
// error matching repository.ErrInvalidInput for an unsupported URL.
func (r *Roots) CheckGitURL(u string) error {
	p, local, err := gitrepo.LocalPath(u)
	if err != nil {
		return err
	}
	if local {
		return r.CheckPath(p)
	}
	return nil
}

// realPath returns p absolute with the symbolic links of its longest
// existing prefix resolved.
func realPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	rest := ""
	for cur := abs; ; {
		if real, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(real, rest), nil
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return abs, nil
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+string(filepath.Separator))
}
