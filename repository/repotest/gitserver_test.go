package repotest_test

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/configasdata/cad/repository/repotest"
)

// gitCmd runs the git CLI in dir, isolated from the user's configuration,
// and returns its trimmed output.
func gitCmd(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=/bin/false",
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com")
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func mustGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := gitCmd(t, dir, args...)
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// TestGitServer pushes to and fetches from a served bare repository with
// the git CLI, atomically, and checks what landed in the bare repository.
func TestGitServer(t *testing.T) {
	root := t.TempDir()
	s := repotest.NewGitServer(t, root, nil)
	if !strings.HasPrefix(s.URL, "http://127.0.0.1:") {
		t.Fatalf("URL %q is not on 127.0.0.1", s.URL)
	}
	url := s.InitBare(t, "blueprints.git")
	if url != s.URL+"/blueprints.git" || s.RepoURL("/blueprints.git") != url {
		t.Fatalf("InitBare URL %q, RepoURL %q", url, s.RepoURL("/blueprints.git"))
	}
	bare := filepath.Join(root, "blueprints.git")
	if head := mustGit(t, bare, "symbolic-ref", "HEAD"); head != "refs/heads/main" {
		t.Fatalf("HEAD %s", head)
	}

	work := filepath.Join(t.TempDir(), "work")
	mustGit(t, "", "clone", "--quiet", url, work)
	if err := os.WriteFile(filepath.Join(work, "README.md"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustGit(t, work, "add", "README.md")
	mustGit(t, work, "commit", "--quiet", "-m", "first")
	mustGit(t, work, "tag", "pkg/v1")
	mustGit(t, work, "push", "--quiet", "--atomic", "origin", "HEAD:refs/heads/main", "refs/tags/pkg/v1")
	head := mustGit(t, work, "rev-parse", "HEAD")
	if got := mustGit(t, bare, "rev-parse", "refs/heads/main", "refs/tags/pkg/v1"); got != head+"\n"+head {
		t.Fatalf("bare refs %q, want main and pkg/v1 at %s", got, head)
	}

	if s.Requests() == 0 {
		t.Fatal("Requests() is 0 after a clone and a push")
	}
	// A clone is two requests (advertisement, upload-pack) and a push two
	// (advertisement, receive-pack), all of this repository's.
	if got := s.RepoRequests("/blueprints.git"); got != 4 || got != s.Requests() {
		t.Fatalf("RepoRequests(blueprints.git) = %d, Requests() = %d, want 4 each", got, s.Requests())
	}
	if got := s.RepoRequests("other.git"); got != 0 {
		t.Fatalf("RepoRequests(other.git) = %d, want 0", got)
	}
	// A second clone fetches what was pushed.
	other := filepath.Join(t.TempDir(), "other")
	mustGit(t, "", "clone", "--quiet", url, other)
	if got := mustGit(t, other, "rev-parse", "HEAD"); got != head {
		t.Fatalf("fetched HEAD %s, want %s", got, head)
	}
	// A push that does not fast-forward is refused.
	mustGit(t, other, "commit", "--quiet", "--amend", "-m", "rewritten")
	if out, err := gitCmd(t, other, "push", "--quiet", "origin", "HEAD:refs/heads/main"); err == nil {
		t.Fatalf("non-fast-forward push accepted: %s", out)
	}
	// A repository that does not exist is 404.
	resp, err := http.Get(s.RepoURL("nope.git") + "/info/refs?service=git-upload-pack")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown repository: %s", resp.Status)
	}
}

func TestGitServerAuth(t *testing.T) {
	root := t.TempDir()
	s := repotest.NewGitServer(t, root, &repotest.GitServerOptions{User: "nephio", Password: "secret"})
	url := s.InitBare(t, "private.git")

	resp, err := http.Get(url + "/info/refs?service=git-upload-pack")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
		t.Fatalf("anonymous request: %s, challenge %q", resp.Status, resp.Header.Get("WWW-Authenticate"))
	}
	if out, err := gitCmd(t, "", "ls-remote", strings.Replace(url, "http://", "http://nephio:wrong@", 1)); err == nil {
		t.Fatalf("wrong password accepted: %s", out)
	}
	authed := strings.Replace(url, "http://", "http://nephio:secret@", 1)
	work := filepath.Join(t.TempDir(), "work")
	mustGit(t, "", "clone", "--quiet", authed, work)
	mustGit(t, work, "commit", "--quiet", "--allow-empty", "-m", "first")
	mustGit(t, work, "push", "--quiet", "origin", "HEAD:refs/heads/main")
	if got, want := mustGit(t, filepath.Join(root, "private.git"), "rev-parse", "main"), mustGit(t, work, "rev-parse", "HEAD"); got != want {
		t.Fatalf("pushed main %s, want %s", got, want)
	}
}
