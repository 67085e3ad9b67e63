package ocirepo

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

const (
	testUser     = "alice"
	testPassword = "s3cr3t-Pa55w0rd"
)

// authRegistry serves ggcr's registry behind HTTP basic auth.
func authRegistry(t *testing.T) string {
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		u, p, ok := req.BasicAuth()
		if !ok || u != testUser || p != testPassword {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
			return
		}
		inner.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

type staticKeychain struct{ auth authn.Authenticator }

func (k staticKeychain) Resolve(authn.Resource) (authn.Authenticator, error) { return k.auth, nil }

func TestCredentialsNeverInErrorsOrLogs(t *testing.T) {
	ctx := context.Background()
	host := authRegistry(t)
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))

	// Right credentials, by basic auth and by keychain: writes work and
	// are logged without the password.
	for name, opts := range map[string]*Options{
		"basic":    {Auth: &authn.Basic{Username: testUser, Password: testPassword}, Logger: logger},
		"keychain": {Keychain: staticKeychain{&authn.Basic{Username: testUser, Password: testPassword}}, Logger: logger},
	} {
		r := mustOpen(t, ociSpec(host+"/"+name), opts)
		d, err := r.CreateDraft(ctx, revision.Key{Package: "p", Workspace: "ws"}, repository.CreateDraftOptions{Files: revision.MustFiles(map[string]string{"Kptfile": "k"})})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := d.Commit(ctx, revision.CommitOptions{}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if revs, err := r.List(ctx, repository.ListOptions{}); err != nil || len(revs) != 1 {
			t.Fatalf("%s: List = %d, %v", name, len(revs), err)
		}
	}
	if logs.Len() == 0 {
		t.Fatal("nothing was logged at debug level")
	}

	// Wrong password: every error is ErrUnavailable and names no secret.
	wrong := "wr0ng-" + testPassword
	r := mustOpen(t, ociSpec(host+"/basic"), &Options{Auth: &authn.Basic{Username: testUser, Password: wrong}, Logger: logger})
	var errs []error
	_, err := r.List(ctx, repository.ListOptions{})
	errs = append(errs, err)
	_, err = r.Get(ctx, revision.Key{Package: "p", Workspace: "ws"})
	errs = append(errs, err)
	d, err := r.CreateDraft(ctx, revision.Key{Package: "q", Workspace: "ws"}, repository.CreateDraftOptions{})
	errs = append(errs, err)
	if d != nil {
		_, err = d.Commit(ctx, revision.CommitOptions{})
		errs = append(errs, err)
	}
	err = repository.Watch(canceledSoon(t), r, repository.ListOptions{}, func(repository.Event) error { return nil })
	if err != nil {
		errs = append(errs, err)
	}
	anon := mustOpen(t, ociSpec(host+"/basic"), &Options{Logger: logger})
	_, err = anon.List(ctx, repository.ListOptions{})
	errs = append(errs, err)
	for _, err := range errs {
		if err == nil {
			t.Fatal("a call with bad credentials succeeded")
		}
		if !errors.Is(err, repository.ErrUnavailable) {
			t.Errorf("error %v does not match ErrUnavailable", err)
		}
		for _, secret := range []string{testPassword, wrong} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error shows a password: %v", err)
			}
		}
	}
	for _, secret := range []string{testPassword, wrong} {
		if strings.Contains(logs.String(), secret) {
			t.Fatalf("logs show a password:\n%s", logs.String())
		}
	}
}

func canceledSoon(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 300e6)
	t.Cleanup(cancel)
	return c
}
