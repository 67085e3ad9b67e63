package repotest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The refs of the repository DamagedGitRepo creates.
const (
	// DamagedGood is the good package: published as revision 1 (tag
	// good/v1) and on branch main.
	DamagedGood = "good"
	// DamagedUnclosedRef is a tag whose commit's Kptfile is
	// "metadata: [unclosed", which no YAML parser reads.
	DamagedUnclosedRef = "refs/tags/unclosed/v1"
	// DamagedBombRef is a tag whose commit's Kptfile is a YAML alias
	// bomb (each level nine aliases of the one before), which the YAML
	// bounds refuse.
	DamagedBombRef = "refs/tags/bomb/v1"
	// DamagedMissingRef is a tag naming an object that does not exist.
	DamagedMissingRef = "refs/tags/missing/v1"
)

// AliasBomb is a Kptfile that is a YAML alias bomb: ten levels of nine
// aliases, 9^10 (about 3.5 billion) nodes once expanded, in 600 bytes.
func AliasBomb() string {
	var b strings.Builder
	b.WriteString("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: bomb\n")
	b.WriteString("l0: &l0 [x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 10; i++ {
		p := "*l" + string(rune('0'+i-1))
		b.WriteString("l" + string(rune('0'+i)) + ": &l" + string(rune('0'+i)) + " [" +
			strings.Repeat(p+", ", 8) + p + "]\n")
	}
	return b.String()
}

// DamagedGitRepo creates, with the git CLI, a bare repository under
// t.TempDir() with branch main and returns its path. It holds the package
// DamagedGood (published as good/v1 and on main) and three damaged tags
// beside it: DamagedUnclosedRef, DamagedBombRef and DamagedMissingRef.
// The damaged packages are not on main, so they have no placeholder. It
// skips the test when the git binary is not installed.
func DamagedGitRepo(t testing.TB) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("the git binary is not installed")
	}
	root := t.TempDir()
	bare := filepath.Join(root, "damaged.git")
	work := filepath.Join(root, "work")
	runGit(t, root, "init", "--quiet", "--bare", "-b", "main", bare)
	runGit(t, root, "init", "--quiet", "-b", "main", work)
	write := func(name, content string) {
		t.Helper()
		p := filepath.Join(work, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("good/Kptfile", "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: good\n")
	write("good/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: good\ndata:\n  k: v\n")
	runGit(t, work, "add", "-A")
	runGit(t, work, "commit", "--quiet", "-m", "good")
	runGit(t, work, "tag", "good/v1")
	// The damaged packages on a side branch that is deleted afterwards:
	// only their tags hold them.
	runGit(t, work, "checkout", "--quiet", "-b", "side")
	write("unclosed/Kptfile", "metadata: [unclosed\n")
	runGit(t, work, "add", "-A")
	runGit(t, work, "commit", "--quiet", "-m", "unclosed")
	runGit(t, work, "tag", "unclosed/v1")
	write("bomb/Kptfile", AliasBomb())
	runGit(t, work, "add", "-A")
	runGit(t, work, "commit", "--quiet", "-m", "bomb")
	runGit(t, work, "tag", "bomb/v1")
	runGit(t, work, "checkout", "--quiet", "main")
	runGit(t, work, "push", "--quiet", bare, "main", "good/v1", "unclosed/v1", "bomb/v1")
	// A tag naming an object that does not exist (a loose ref, as a
	// crashed writer or a careless copy leaves it).
	missing := filepath.Join(bare, DamagedMissingRef)
	if err := os.MkdirAll(filepath.Dir(missing), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(missing, []byte(strings.Repeat("ab", 20)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return bare
}

// runGit runs the git CLI in dir with no user configuration.
func runGit(t testing.TB, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}
