package repository_test

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

func TestErrorWrapsSentinelAndCause(t *testing.T) {
	cause := &fs.PathError{Op: "open", Path: "x", Err: fs.ErrNotExist}
	err := repository.Errorf("get", "blueprints", revision.Key{Package: "p", Workspace: "ws"}, repository.ErrNotFound, "reading tree: %w", cause)
	if !errors.Is(err, repository.ErrNotFound) {
		t.Fatal("does not match its sentinel")
	}
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		t.Fatal("does not expose its native cause")
	}
	var re *repository.Error
	if !errors.As(err, &re) || re.Op != "get" || re.Repository != "blueprints" {
		t.Fatalf("not a *repository.Error with context: %#v", err)
	}
	want := `get in repository "blueprints" p@ws: not found: reading tree: open x: file does not exist`
	if err.Error() != want {
		t.Fatalf("message\n%s\nwant\n%s", err, want)
	}
	// A cause that already names the sentinel is not repeated.
	err = repository.Errorf("commit", "r", revision.Key{}, repository.ErrConflict, "%w: ref moved", repository.ErrConflict)
	if strings.Count(err.Error(), "conflict") != 1 {
		t.Fatalf("sentinel repeated: %s", err)
	}
}

func TestInvalidInputIsRevisionErrInvalid(t *testing.T) {
	err := revision.ValidatePath("../x")
	if !errors.Is(err, repository.ErrInvalidInput) {
		t.Fatal("a revision.PathError does not match repository.ErrInvalidInput")
	}
	if !errors.Is(revision.CheckTransition(revision.LifecycleDraft, revision.LifecyclePublished), repository.ErrInvalidTransition) {
		t.Fatal("a TransitionError does not match repository.ErrInvalidTransition")
	}
}

func TestSpecDecodesPorchRepository(t *testing.T) {
	// The spec of a Porch Repository object, as kubectl shows it.
	porch := `{"description":"blueprints","type":"git","deployment":true,
	 "git":{"repo":"https://example.invalid/blueprints.git","branch":"","directory":"/pkgs/","createBranch":true,
	        "secretRef":{"name":"git-auth"},"author":"Ann","email":"ann@example.invalid"}}`
	var s repository.Spec
	if err := json.Unmarshal([]byte(porch), &s); err != nil {
		t.Fatal(err)
	}
	s.Name = "blueprints"
	s = s.Defaulted()
	if s.Git.Branch != "main" || s.Git.Directory != "pkgs" || !s.Git.CreateBranch || s.Git.SecretRef.Name != "git-auth" || !s.Deployment {
		t.Fatalf("decoded %+v %+v", s, *s.Git)
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestSpecValidate(t *testing.T) {
	git := &repository.GitSpec{Repo: "/tmp/x"}
	bad := []repository.Spec{
		{Name: "", Type: repository.TypeGit, Git: git},
		{Name: "Bad_Name", Type: repository.TypeGit, Git: git},
		{Name: "ok"},
		{Name: "ok", Type: "svn"},
		{Name: "ok", Type: repository.TypeGit},
		{Name: "ok", Type: repository.TypeOCI},
		{Name: "ok", Type: repository.TypeGit, Git: &repository.GitSpec{Repo: "/x", Directory: "a/../.."}},
	}
	for _, s := range bad {
		if err := s.Validate(); !errors.Is(err, repository.ErrInvalidInput) {
			t.Errorf("Validate(%+v) = %v, want ErrInvalidInput", s, err)
		}
	}
}

func TestListOptionsMatches(t *testing.T) {
	m := revision.Meta{Key: revision.Key{Package: "a/b", Workspace: "ws", Revision: 2}, Lifecycle: revision.LifecyclePublished}
	yes := []repository.ListOptions{{}, {Package: "a/b"}, {Workspace: "ws"}, {Revision: 2}, {Lifecycles: []revision.Lifecycle{revision.LifecycleDraft, revision.LifecyclePublished}}}
	no := []repository.ListOptions{{Package: "a"}, {Workspace: "x"}, {Revision: 1}, {Lifecycles: []revision.Lifecycle{revision.LifecycleDraft}}}
	for _, o := range yes {
		if !o.Matches(m) {
			t.Errorf("%+v does not match", o)
		}
	}
	for _, o := range no {
		if o.Matches(m) {
			t.Errorf("%+v matches", o)
		}
	}
}

// TestCheckBranchName checks branch names against git check-ref-format
// --branch, the git CLI being the independent witness, and that a spec
// naming a bad branch is refused by Validate.
func TestCheckBranchName(t *testing.T) {
	names := []string{
		"main", "feature/x", "release-1.0", "a.b", "users/me/topic", "v1", "@x", "x@y", "ü",
		"../../x", "..", "a..b", "/x", "x/", "a//b", ".x", "a/.b", "x.lock", "a.lock/b", "x.",
		"a b", "a~b", "a^b", "a:b", "a?b", "a*b", "a[b", `a\b`, "a@{b", "@", "-x", "a\tb", "a\x7fb", "",
	}
	gitBin, err := exec.LookPath("git")
	if err != nil && os.Getenv("CI") == "true" {
		t.Fatal("git is needed as the witness: ", err)
	}
	outside := t.TempDir()
	for _, name := range names {
		err := repository.CheckBranchName(name)
		if err != nil && !errors.Is(err, repository.ErrInvalidInput) {
			t.Errorf("CheckBranchName(%q) = %v, want ErrInvalidInput", name, err)
		}
		if gitBin != "" {
			// Outside any repository, so that git does not expand "@".
			cmd := exec.Command(gitBin, "check-ref-format", "--branch", name)
			cmd.Dir = outside
			gitOK := cmd.Run() == nil
			if gitOK != (err == nil) {
				t.Errorf("CheckBranchName(%q) = %v; git check-ref-format --branch accepts it: %v", name, err, gitOK)
			}
		}
		s := repository.Spec{Name: "ok", Type: repository.TypeGit, Git: &repository.GitSpec{Repo: "/x", Branch: name}}
		verr := s.Validate()
		switch {
		case name == "": // the default branch
			if verr != nil {
				t.Errorf("Validate with no branch = %v", verr)
			}
		case (err == nil) != (verr == nil):
			t.Errorf("branch %q: CheckBranchName = %v but Validate = %v", name, err, verr)
		}
	}
}
