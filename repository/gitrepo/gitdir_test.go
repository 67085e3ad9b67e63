package gitrepo_test

import (
	"context"
	"path/filepath"
	"testing"

	gogit "github.com/go-git/go-git/v5"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
)

// GitDir names the git directory of a repository on disk while it is
// open, and nothing for an in-memory one.
func TestGitDir(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "r.git")
	if _, err := gogit.PlainInit(dir, true); err != nil {
		t.Fatal(err)
	}
	r, err := gitrepo.Open(ctx, repository.Spec{Name: "r", Type: repository.TypeGit,
		Git: &repository.GitSpec{Repo: dir, CreateBranch: true}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.GitDir(); got != dir {
		t.Errorf("GitDir %q, want %q", got, dir)
	}
	r.Close()
	if got := r.GitDir(); got != "" {
		t.Errorf("GitDir after Close %q, want none", got)
	}
	m, err := gitrepo.Open(ctx, repository.Spec{Name: "m", Type: repository.TypeGit,
		Git: &repository.GitSpec{Repo: gitrepo.MemoryURL, CreateBranch: true}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if got := m.GitDir(); got != "" {
		t.Errorf("in-memory GitDir %q, want none", got)
	}
}
