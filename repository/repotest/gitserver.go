package repotest

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// GitServerOptions configure NewGitServer. The zero value, and nil, mean an
// anonymous server.
type GitServerOptions struct {
	// User and Password, when User is set, are the HTTP basic credentials
	// the server requires of every request; others get 401 with a
	// WWW-Authenticate challenge. Default: no authentication.
	User, Password string
}

// GitServer is a git smart-HTTP server for tests: it serves every bare
// repository under Root with the git binary's git http-backend (fetch and
// push, receive-pack enabled, atomic pushes advertised) on a free port of
// 127.0.0.1. The repository Root/<name> is at URL + "/" + name. The server
// ends when the test that started it ends.
//
// It is safe for concurrent use: each request runs its own git process,
// and git serialises the ref updates of concurrent pushes.
type GitServer struct {
	// URL is the base URL, "http://127.0.0.1:<port>", without a trailing
	// slash.
	URL string
	// Root is the directory whose bare repositories are served.
	Root string

	requests atomic.Int64
	perRepo  *sync.Map // repository name -> *atomic.Int64; a pointer, so that a GitServer stays comparable
}

// NewGitServer starts a GitServer over the bare repositories under root
// and stops it with t.Cleanup. It skips the test, saying why, when the git
// binary or its http-backend is not installed, and fails it when no
// loopback port can be opened.
//
// Any git repository under root may be served, even one created after the
// server started, by git init --bare (see InitBare) or by a go-git
// PlainInit; receive-pack is enabled for all of them without per-repository
// configuration.
func NewGitServer(t testing.TB, root string, opts *GitServerOptions) *GitServer {
	t.Helper()
	var o GitServerOptions
	if opts != nil {
		o = *opts
	}
	backend := httpBackend(t)
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatalf("repotest: git server root %q: %v", root, err)
	}
	cgiHandler := &cgi.Handler{
		Path:   backend,
		Stderr: io.Discard,
		Env: append([]string{
			"GIT_PROJECT_ROOT=" + abs,
			"GIT_HTTP_EXPORT_ALL=1",
			// git http-backend enables receive-pack for an authenticated
			// user when http.receivepack is unset: this covers a git
			// older than 2.31, which ignores GIT_CONFIG_COUNT.
			"REMOTE_USER=" + remoteUser(o.User),
		}, gitEnv...),
	}
	s := &GitServer{Root: abs, perRepo: new(sync.Map)}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		if name := repoOfPath(r.URL.Path); name != "" {
			c, _ := s.perRepo.LoadOrStore(name, new(atomic.Int64))
			c.(*atomic.Int64).Add(1)
		}
		if o.User != "" {
			u, p, ok := r.BasicAuth()
			if !ok || u != o.User || p != o.Password {
				w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
		}
		cgiHandler.ServeHTTP(w, r)
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("repotest: git server: listen on loopback: %v", err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// Requests returns the number of HTTP requests the server has received,
// refused ones included: a witness of how many round trips a client makes.
func (s *GitServer) Requests() int64 {
	return s.requests.Load()
}

// RepoRequests returns the number of HTTP requests the server has
// received for the repository Root/name (name as given to RepoURL),
// refused ones included.
func (s *GitServer) RepoRequests(name string) int64 {
	if c, ok := s.perRepo.Load(strings.Trim(filepath.ToSlash(name), "/")); ok {
		return c.(*atomic.Int64).Load()
	}
	return 0
}

// repoOfPath returns the repository a smart-HTTP request's path names
// (what comes before /info/refs, /git-upload-pack or /git-receive-pack),
// "" for another path.
func repoOfPath(p string) string {
	for _, suffix := range []string{"/info/refs", "/git-upload-pack", "/git-receive-pack"} {
		if name, ok := strings.CutSuffix(p, suffix); ok {
			return strings.Trim(name, "/")
		}
	}
	return ""
}

// RepoURL returns the URL of the repository Root/name.
func (s *GitServer) RepoURL(name string) string {
	return s.URL + "/" + strings.TrimLeft(filepath.ToSlash(name), "/")
}

// InitBare creates an empty bare repository Root/name, whose HEAD names
// branch main, with the git binary, and returns its URL. It fails t when
// git fails, for instance because the repository exists.
func (s *GitServer) InitBare(t testing.TB, name string) string {
	t.Helper()
	dir := filepath.Join(s.Root, filepath.FromSlash(name))
	if _, err := os.Stat(dir); err == nil {
		t.Fatalf("repotest: InitBare: %s already exists", dir)
	}
	cmd := exec.Command("git", "init", "--quiet", "--bare", dir)
	cmd.Env = append(os.Environ(), gitEnv...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("repotest: git init --bare %s: %v\n%s", dir, err, out)
	}
	// Set HEAD without relying on init.defaultBranch or git init -b
	// (git 2.28 and later).
	if err := os.WriteFile(filepath.Join(dir, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		t.Fatalf("repotest: InitBare: %v", err)
	}
	return s.RepoURL(name)
}

// gitEnv isolates the git processes from the user's and the system's git
// configuration, enables receive-pack (push) over HTTP for every
// repository, which git http-backend otherwise allows only to
// authenticated users, and spares the test machine git's housekeeping: no
// automatic gc or maintenance after a push, no fsync (git 2.36 and later;
// older versions ignore the key).
var gitEnv = []string{
	"GIT_CONFIG_NOSYSTEM=1",
	"GIT_CONFIG_GLOBAL=" + os.DevNull,
	"GIT_CONFIG_COUNT=5",
	"GIT_CONFIG_KEY_0=http.receivepack",
	"GIT_CONFIG_VALUE_0=true",
	"GIT_CONFIG_KEY_1=receive.autogc",
	"GIT_CONFIG_VALUE_1=false",
	"GIT_CONFIG_KEY_2=gc.auto",
	"GIT_CONFIG_VALUE_2=0",
	"GIT_CONFIG_KEY_3=core.fsync",
	"GIT_CONFIG_VALUE_3=none",
	"GIT_CONFIG_KEY_4=maintenance.auto",
	"GIT_CONFIG_VALUE_4=false",
}

func remoteUser(user string) string {
	if user == "" {
		return "anonymous"
	}
	return user
}

// httpBackend returns the path of git http-backend, or skips t.
func httpBackend(t testing.TB) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skipf("repotest: git server needs the git binary: %v", err)
	}
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Skipf("repotest: git server: git --exec-path: %v", err)
	}
	p := filepath.Join(string(bytes.TrimSpace(out)), "git-http-backend")
	fi, err := os.Stat(p)
	if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		t.Skipf("repotest: git server needs git http-backend, not found at %s", p)
	}
	return p
}
