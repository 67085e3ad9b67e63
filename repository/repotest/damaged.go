package repotest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
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

// testDamage checks that damage stays where it is: with one published
// revision damaged (Harness.Damage), List returns the others with an
// *repository.Error wrapping a *repository.DamageError that names it
// (never an empty list, never a nil error), Range yields the same and the
// damage last, a list of another package is whole, and Get of the
// damaged revision fails.
func (s *suite) testDamage(t *testing.T) {
	if s.h.Damage == nil {
		t.Skip("the backend's storage cannot be damaged (Harness.Damage is nil)")
	}
	r := s.open(t)
	publish(t, r, "good", "ws1", "g")
	bad := publish(t, r, "bad", "ws1", "b").Meta().Key
	named := s.h.Damage(t, r, bad)

	revs, err := r.List(ctx(t), repository.ListOptions{})
	d := repository.Damage(err)
	if !errors.Is(err, repository.ErrDamaged) || d == nil || !strings.Contains(err.Error(), named) {
		t.Fatalf("List: %v, want an error matching ErrDamaged naming %q", err, named)
	}
	var re *repository.Error
	if !errors.As(err, &re) || re.Op != "list" {
		t.Fatalf("List: %T %v, want a *repository.Error of op list", err, err)
	}
	got := keys(revs, false)
	if len(got) != 1 || got[0].Package != "good" {
		t.Fatalf("List = %v, want good's revision only", got)
	}
	var ranged []revision.PackageRevision
	var rerr error
	for pr, err := range repository.Range(ctx(t), r, repository.ListOptions{}) {
		if err != nil {
			rerr = err
			break
		}
		ranged = append(ranged, pr)
	}
	if g := keys(ranged, false); len(g) != 1 || g[0].Package != "good" || !errors.Is(rerr, repository.ErrDamaged) {
		t.Fatalf("Range = %v, %v; want good's revision, then the damage", g, rerr)
	}
	if revs, err := r.List(ctx(t), repository.ListOptions{Package: "good"}); err != nil || len(keys(revs, false)) != 1 {
		t.Fatalf("List of good: %d, %v; want its revision, whole", len(revs), err)
	}
	if revs, err := r.List(ctx(t), repository.ListOptions{Package: "bad"}); len(keys(revs, false)) != 0 || !errors.Is(err, repository.ErrDamaged) {
		t.Fatalf("List of bad: %d, %v; want none and ErrDamaged, not an empty package", len(revs), err)
	}
	if _, err := r.Get(ctx(t), bad); err == nil || errors.Is(err, repository.ErrNotFound) {
		t.Fatalf("Get of the damaged %s: %v, want an error other than ErrNotFound", bad, err)
	}
}
