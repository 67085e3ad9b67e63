package gitrepo_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
)

func wantErr(t *testing.T, err error, sentinel error, what string) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Fatalf("%s: got %v, want an error matching %v", what, err, sentinel)
	}
	var re *repository.Error
	if !errors.As(err, &re) {
		t.Fatalf("%s: %v is not a *repository.Error", what, err)
	}
}

func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	open := func(spec repository.Spec, opts *gitrepo.Options) error {
		r, err := gitrepo.Open(ctx, spec, opts)
		if err == nil {
			r.Close()
		}
		return err
	}
	t.Run("missing branch", func(t *testing.T) {
		spec := gitSpec(newBare(t))
		spec.Git.CreateBranch = false
		wantErr(t, open(spec, nil), repository.ErrNotFound, "Open without the branch")
		spec = gitSpec(gitrepo.MemoryURL)
		spec.Git.CreateBranch = false
		wantErr(t, open(spec, nil), repository.ErrNotFound, "Open mem:// without the branch")
	})
	t.Run("missing local repository", func(t *testing.T) {
		wantErr(t, open(gitSpec(filepath.Join(t.TempDir(), "nope")), nil), repository.ErrNotFound, "Open of a missing path")
	})
	t.Run("bad spec", func(t *testing.T) {
		spec := gitSpec(gitrepo.MemoryURL)
		spec.Type = repository.TypeOCI
		wantErr(t, open(spec, nil), repository.ErrInvalidInput, "Open of an oci spec")
		spec = gitSpec(gitrepo.MemoryURL)
		spec.Git.Branch = "bad..branch"
		wantErr(t, open(spec, nil), repository.ErrInvalidInput, "Open with a bad branch name")
		spec = gitSpec("ftp://example.com/x")
		wantErr(t, open(spec, nil), repository.ErrInvalidInput, "Open of an ftp URL")
		wantErr(t, open(gitSpec(t.TempDir()), &gitrepo.Options{Storage: nil, CacheDir: ""}), repository.ErrNotFound, "Open of a directory that is no repository")
	})
	t.Run("unreachable", func(t *testing.T) {
		start := time.Now()
		err := open(gitSpec("http://127.0.0.1:1/repo.git"), nil)
		wantErr(t, err, repository.ErrUnavailable, "Open of a closed port")
		t.Log(err)
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("a closed port took %v", d)
		}
	})
	t.Run("remote missing branch", func(t *testing.T) {
		dir := newBare(t)
		srv := gitServer(t, filepath.Dir(dir), "", "")
		spec := gitSpec(srv.URL + "/" + filepath.Base(dir))
		spec.Git.CreateBranch = false
		wantErr(t, open(spec, nil), repository.ErrNotFound, "Open of a remote without the branch")
	})
	t.Run("remote missing repository", func(t *testing.T) {
		dir := newBare(t)
		srv := gitServer(t, filepath.Dir(dir), "", "")
		err := open(gitSpec(srv.URL+"/nope.git"), nil)
		if !errors.Is(err, repository.ErrNotFound) && !errors.Is(err, repository.ErrUnavailable) {
			t.Fatalf("Open of a missing remote repository: %v", err)
		}
	})
}

// TestCredentials checks that wrong credentials fail with ErrUnavailable
// and that no password or token reaches an error or a log line.
func TestCredentials(t *testing.T) {
	ctx := context.Background()
	dir := newBare(t)
	const user, pass = "porch", "s3cret-Passw0rd"
	srv := gitServer(t, filepath.Dir(dir), user, pass)
	host := strings.TrimPrefix(srv.URL, "http://")
	repoURL := srv.URL + "/" + filepath.Base(dir)

	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	check := func(what string, err error, secrets ...string) {
		t.Helper()
		wantErr(t, err, repository.ErrUnavailable, what)
		t.Logf("%s: %v", what, err)
		for _, s := range secrets {
			if strings.Contains(err.Error(), s) {
				t.Fatalf("%s: the error shows a credential: %v", what, err)
			}
			if strings.Contains(logs.String(), s) {
				t.Fatalf("%s: the log shows a credential:\n%s", what, logs.String())
			}
		}
	}
	_, err := gitrepo.Open(ctx, gitSpec(repoURL), &gitrepo.Options{Logger: logger})
	check("no credentials", err)
	_, err = gitrepo.Open(ctx, gitSpec("http://"+user+":wrong-Passw0rd@"+host+"/"+filepath.Base(dir)), &gitrepo.Options{Logger: logger})
	check("wrong password in the URL", err, "wrong-Passw0rd")
	_, err = gitrepo.Open(ctx, gitSpec("http://tok3n-in-user-name@"+host+"/"+filepath.Base(dir)), &gitrepo.Options{Logger: logger})
	check("token as URL user", err, "tok3n-in-user-name")
	_, err = gitrepo.Open(ctx, gitSpec(repoURL), &gitrepo.Options{Logger: logger, Auth: &githttp.BasicAuth{Username: user, Password: "wrong-Passw0rd"}})
	check("wrong password in Auth", err, "wrong-Passw0rd")
	_, err = gitrepo.Open(ctx, gitSpec(repoURL), &gitrepo.Options{Logger: logger, Auth: &githttp.TokenAuth{Token: "wrong-t0ken-value"}})
	check("wrong token", err, "wrong-t0ken-value")
	if !errors.Is(err, transport.ErrAuthenticationRequired) {
		t.Fatalf("the error does not wrap go-git's cause: %v", err)
	}

	// The right credentials, in the URL and in Auth, read and write.
	for _, c := range []struct {
		url  string
		auth *githttp.BasicAuth
	}{
		{"http://" + user + ":" + pass + "@" + host + "/" + filepath.Base(dir), nil},
		{repoURL, &githttp.BasicAuth{Username: user, Password: pass}},
	} {
		opts := &gitrepo.Options{Logger: logger}
		if c.auth != nil {
			opts.Auth = c.auth
		}
		r, err := gitrepo.Open(ctx, gitSpec(c.url), opts)
		if err != nil {
			t.Fatalf("Open with the right credentials: %v", err)
		}
		ws := "ws-url"
		if c.auth != nil {
			ws = "ws-auth"
		}
		d, err := r.CreateDraft(ctx, revision.Key{Package: "p", Workspace: ws}, repository.CreateDraftOptions{Files: kptPkg("p", nil)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.Commit(ctx, revision.CommitOptions{}); err != nil {
			t.Fatalf("commit with the right credentials: %v", err)
		}
		// A failing operation still hides the password.
		_, err = r.Get(ctx, revision.Key{Package: "missing", Workspace: "x"})
		if err == nil || strings.Contains(err.Error(), pass) {
			t.Fatalf("Get of a missing revision: %v", err)
		}
		r.Close()
	}
	if strings.Contains(logs.String(), pass) {
		t.Fatalf("the log shows the password:\n%s", logs.String())
	}
	if got := git(t, dir, "for-each-ref", "--format=%(refname)", "refs/heads/drafts"); got != "refs/heads/drafts/p/ws-auth\nrefs/heads/drafts/p/ws-url" {
		t.Fatalf("drafts on the server: %q", got)
	}
}

func TestBadInput(t *testing.T) {
	ctx := context.Background()
	r := mustOpen(t, gitSpec(newBare(t)), nil)
	defer r.Close()
	// An empty package cannot be stored: git keeps no empty directory.
	d, err := r.CreateDraft(ctx, revision.Key{Package: "p", Workspace: "ws"}, repository.CreateDraftOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.Commit(ctx, revision.CommitOptions{})
	wantErr(t, err, repository.ErrInvalidInput, "Commit of an empty package")
	for _, k := range []revision.Key{
		{Package: "p", Workspace: "main"},    // the branch's workspace
		{Package: "a/../b", Workspace: "ws"}, // unsafe path
		{Package: "p", Workspace: "ws/x"},    // not a ref component
		{Package: "p", Workspace: "ws.lock"}, // not a DNS label
		{Package: "p/.git", Workspace: "ws"}, // .git
		{Repository: "other", Package: "p", Workspace: "ws"},
	} {
		_, err := r.CreateDraft(ctx, k, repository.CreateDraftOptions{})
		wantErr(t, err, repository.ErrInvalidInput, "CreateDraft("+k.String()+")")
	}
	_, err = r.Get(ctx, revision.Key{Repository: "other", Package: "p", Workspace: "ws"})
	wantErr(t, err, repository.ErrNotFound, "Get with another repository's key")
	revs, err := r.List(ctx, repository.ListOptions{})
	if err != nil || len(revs) != 0 {
		t.Fatalf("bad input left %d revisions (%v)", len(revs), err)
	}
}

// LocalPath reads git.repo values as Open does.
func TestLocalPath(t *testing.T) {
	for u, want := range map[string]string{
		"/srv/repos/a.git": "/srv/repos/a.git", "file:///srv/a": "/srv/a", "./a": "./a", "repos/a": "repos/a",
		"mem://": "", "https://h/a.git": "", "git@host:a.git": "", "ssh://h/a": "",
	} {
		p, local, err := gitrepo.LocalPath(u)
		if err != nil || p != want || local != (want != "") {
			t.Errorf("LocalPath(%q) = %q, %v, %v; want %q", u, p, local, err, want)
		}
	}
	if _, _, err := gitrepo.LocalPath("ftp://h/a"); !errors.Is(err, repository.ErrInvalidInput) {
		t.Errorf("ftp: %v, want ErrInvalidInput", err)
	}
}
