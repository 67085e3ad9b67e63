package cli_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/configasdata/cad/examples/cadctl/internal/cli"
)

// A bearer token is never sent over plain http, as kubectl does not send
// credentials there: a --token with an http:// server is refused before
// any request, and a redirect from the https server to http:// fails
// instead of carrying the token.
func TestTokenNotSentOverPlainHTTP(t *testing.T) {
	var requests, withToken atomic.Int32
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if r.Header.Get("Authorization") != "" {
			withToken.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"kind":"PackageRevisionList","items":[]}`))
	}))
	defer plain.Close()

	for _, env := range []map[string]string{nil, {cli.EnvToken: "secret"}} {
		args := []string{"--server", plain.URL, "rpkg", "get"}
		if env == nil {
			args = append([]string{"--token", "secret"}, args...)
		}
		var vars []string
		for k, v := range env {
			vars = append(vars, k+"="+v)
		}
		var stdout, stderr bytes.Buffer
		code := cli.Invocation{Args: args, Stdout: &stdout, Stderr: &stderr, Dir: t.TempDir(), Env: vars}.Run(context.Background())
		if code == 0 || !strings.Contains(stderr.String(), "refusing to send a bearer token over plain http") {
			t.Errorf("token %v over http: exit %d, stderr %q", env, code, stderr.String())
		}
	}
	if _, err := cli.NewServerClient("http://127.0.0.1:1", "default", &cli.ServerOptions{Token: "secret"}); err == nil {
		t.Error("NewServerClient accepted a token with a loopback http:// server")
	}
	if n := requests.Load(); n != 0 {
		t.Fatalf("%d requests reached the plain http server", n)
	}

	secure := httptest.NewTLSServer(http.RedirectHandler(plain.URL+"/apis", http.StatusFound))
	defer secure.Close()
	c, err := cli.NewServerClient(secure.URL, "default", &cli.ServerOptions{Token: "secret", HTTPClient: secure.Client()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.ListPackageRevisions(context.Background(), cli.ListOptions{})
	if err == nil || !strings.Contains(err.Error(), "refusing to send a bearer token over plain http") {
		t.Errorf("redirect to http: %v", err)
	}
	if n := withToken.Load(); n != 0 {
		t.Fatalf("the token reached the plain http server %d times", n)
	}
}
