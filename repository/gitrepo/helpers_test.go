package gitrepo_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/configasdata/cad/repository/repotest"
)

// git runs the git CLI in dir, as an independent witness, and returns its
// trimmed output.
func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	return strings.TrimRight(gitRaw(t, dir, args...), "\n")
}

// gitRaw is git without trimming the output.
func gitRaw(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// newBare creates an empty bare repository with default branch main.
func newBare(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo.git")
	git(t, "", "init", "--quiet", "--bare", "-b", "main", dir)
	git(t, dir, "config", "http.receivepack", "true")
	return dir
}

// gitServer serves the bare repositories under root with git http-backend
// over loopback HTTP; with user set, it requires those basic credentials.
func gitServer(t testing.TB, root, user, pass string) *repotest.GitServer {
	t.Helper()
	return repotest.NewGitServer(t, root, &repotest.GitServerOptions{User: user, Password: pass})
}
