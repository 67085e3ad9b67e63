package gitrepo_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
)

// upstreamRepo builds, with the git CLI, a bare repository holding package
// net/istio: v1 as the annotated tag net/istio/v1, then a second commit on
// main, plus a branch net/istio/dev. It returns the bare repository and the
// commits of v1 and of main.
func upstreamRepo(t *testing.T) (bare, v1, head string) {
	t.Helper()
	bare = newBare(t)
	work := t.TempDir()
	git(t, work, "init", "--quiet", "-b", "main")
	write := func(p, s string) {
		t.Helper()
		p = filepath.Join(work, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("net/istio/Kptfile", "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: istio\n")
	write("net/istio/deploy.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: istiod\n")
	write("net/istio/sub/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n")
	write("other/Kptfile", "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: other\n")
	if err := os.Symlink("deploy.yaml", filepath.Join(work, "net/istio/link.yaml")); err != nil {
		t.Fatal(err)
	}
	git(t, work, "add", "-A")
	git(t, work, "commit", "--quiet", "-m", "v1")
	git(t, work, "tag", "-a", "-m", "v1", "net/istio/v1")
	v1 = git(t, work, "rev-parse", "HEAD")
	write("net/istio/deploy.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: istiod\nspec:\n  replicas: 2\n")
	git(t, work, "commit", "--quiet", "-am", "v2")
	git(t, work, "branch", "net/istio/dev")
	head = git(t, work, "rev-parse", "HEAD")
	git(t, work, "push", "--quiet", bare, "main", "net/istio/dev", "net/istio/v1")
	return bare, v1, head
}

func TestFetcher(t *testing.T) {
	ctx := context.Background()
	bare, v1, head := upstreamRepo(t)
	var f gitrepo.Fetcher

	files, commit, err := f.Fetch(ctx, repository.GitUpstream{Repo: bare, Directory: "net/istio", Ref: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	if commit != v1 {
		t.Errorf("commit %s, want v1 %s", commit, v1)
	}
	if got, want := files.Paths(), []string{"Kptfile", "deploy.yaml", "sub/cm.yaml"}; !slices.Equal(got, want) {
		t.Errorf("files %v, want %v (the subtree, no symlink)", got, want)
	}
	if d, _ := files.Get("deploy.yaml"); strings.Contains(string(d), "replicas") {
		t.Errorf("v1 has v2 content:\n%s", d)
	}

	// "dev" resolves to the package-scoped branch net/istio/dev; "main"
	// to the branch main; "/net/istio/" is the same directory.
	for _, ref := range []string{"dev", "main", "refs/heads/main"} {
		files, commit, err = f.Fetch(ctx, repository.GitUpstream{Repo: "file://" + bare, Directory: "/net/istio/", Ref: ref})
		if err != nil {
			t.Fatalf("%s: %v", ref, err)
		}
		if commit != head {
			t.Errorf("%s: commit %s, want %s", ref, commit, head)
		}
		if d, _ := files.Get("deploy.yaml"); !strings.Contains(string(d), "replicas: 2") {
			t.Errorf("%s: deploy.yaml:\n%s", ref, d)
		}
	}

	for name, up := range map[string]repository.GitUpstream{
		"no ref":      {Repo: bare, Directory: "net/istio", Ref: "v9"},
		"no dir":      {Repo: bare, Directory: "net/nope", Ref: "main"},
		"no repo":     {Repo: filepath.Join(t.TempDir(), "missing.git"), Directory: "net/istio", Ref: "main"},
		"bad auth":    {Repo: bare, Directory: "net/istio", Ref: "main", Auth: &repository.Credentials{Password: "s3cret", BearerToken: "t0ken"}},
		"bad ssh key": {Repo: bare, Directory: "net/istio", Ref: "main", Auth: &repository.Credentials{SSHPrivateKey: []byte("s3cret")}},
		"empty url":   {Repo: "", Ref: "main"},
	} {
		_, _, err := f.Fetch(ctx, up)
		want := repository.ErrNotFound
		if name == "bad auth" || name == "bad ssh key" || name == "empty url" {
			want = repository.ErrInvalidInput
		}
		if !errors.Is(err, want) {
			t.Errorf("%s: err %v, want %v", name, err, want)
		}
		if err != nil && (strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "t0ken")) {
			t.Errorf("%s: error leaks a secret: %v", name, err)
		}
	}
}

func TestFetcherHTTPAuth(t *testing.T) {
	ctx := context.Background()
	bare, v1, _ := upstreamRepo(t)
	srv := gitServer(t, filepath.Dir(bare), "user", "s3cret-pass")
	url := srv.URL + "/" + filepath.Base(bare)

	f := gitrepo.Fetcher{Auth: &githttp.BasicAuth{Username: "user", Password: "wrong-pass"}}
	if _, _, err := f.Fetch(ctx, repository.GitUpstream{Repo: url, Directory: "net/istio", Ref: "v1"}); err == nil {
		t.Fatal("wrong default credentials: no error")
	} else if strings.Contains(err.Error(), "wrong-pass") {
		t.Fatalf("error leaks the password: %v", err)
	}
	// The upstream's credentials win over the Fetcher's.
	_, commit, err := f.Fetch(ctx, repository.GitUpstream{Repo: url, Directory: "net/istio", Ref: "v1",
		Auth: &repository.Credentials{Username: "user", Password: "s3cret-pass"}})
	if err != nil {
		t.Fatal(err)
	}
	if commit != v1 {
		t.Errorf("commit %s, want %s", commit, v1)
	}
}
