package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/configasdata/cad/revision"
)

// TestRun starts the binary's run on a free loopback port, talks to it and
// shuts it down as SIGINT would.
func TestRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--listen", "127.0.0.1:0", "--data-dir", dir}, pw, io.Discard)
		pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	if !sc.Scan() {
		t.Fatalf("no output: %v", <-done)
	}
	first := sc.Text()
	i := strings.Index(first, "http://")
	if i < 0 {
		t.Fatalf("first line: %q", first)
	}
	url := strings.Fields(first[i:])[0]
	rest := make(chan string, 1)
	go func() {
		var b strings.Builder
		for sc.Scan() {
			b.WriteString(sc.Text() + "\n")
		}
		rest <- b.String()
	}()
	resp, err := http.Get(url + "/apis/config.porch.kpt.dev/v1alpha1/namespaces/default/repositories/default")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "default.git") {
		t.Fatalf("default repository: %d %s", resp.StatusCode, body)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("run did not stop")
	}
	if out := <-rest; !strings.Contains(out, "no authentication") || !strings.Contains(out, "server stopped") {
		t.Errorf("output: %q", out)
	}
}

// TestRunRefusals: the flag combinations the server refuses to start with.
func TestRunRefusals(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte("tok,alice,1,cad:admin\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--listen", "0.0.0.0:0"}, "refusing to listen on 0.0.0.0:0 without authentication"},
		{[]string{"--listen", "[::]:0"}, "refusing to listen"},
		{[]string{"--listen", "127.0.0.1:0", "--token-file", tokens}, "--token-file needs --tls-cert-file"},
		{[]string{"--listen", "127.0.0.1:0", "--client-ca-file", tokens}, "--client-ca-file needs --tls-cert-file"},
		{[]string{"--listen", "127.0.0.1:0", "--refuse-self-approval"}, "needs authentication"},
		{[]string{"--listen", "127.0.0.1:0", "--token-file", filepath.Join(dir, "missing")}, "token file"},
	} {
		err := run(context.Background(), append(tc.args, "--data-dir", dir), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
}

// TestRunTLSTokens starts the binary's run with TLS and a token file, and
// checks that a request needs the token.
func TestRunTLSTokens(t *testing.T) {
	tmp := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile, tokenFile := filepath.Join(tmp, "tls.crt"), filepath.Join(tmp, "tls.key"), filepath.Join(tmp, "tokens.csv")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	os.WriteFile(tokenFile, []byte("s3cret-token,alice,1,cad:viewer\n"), 0o600)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--listen", "127.0.0.1:0", "--data-dir", filepath.Join(tmp, "data"),
			"--tls-cert-file", certFile, "--tls-private-key-file", keyFile, "--token-file", tokenFile}, pw, io.Discard)
		pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	if !sc.Scan() {
		t.Fatalf("no output: %v", <-done)
	}
	first := sc.Text()
	i := strings.Index(first, "https://")
	if i < 0 {
		t.Fatalf("first line: %q", first)
	}
	url := strings.Fields(first[i:])[0]
	go io.Copy(io.Discard, pr)
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	get := func(token string) int {
		req, _ := http.NewRequest("GET", url+"/apis/porch.kpt.dev/v1alpha1/packagerevisions", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(""); code != http.StatusUnauthorized {
		t.Errorf("without a token: %d", code)
	}
	if code := get("s3cret-token"); code != http.StatusOK {
		t.Errorf("with the token: %d", code)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// startRun starts run with args on a free loopback port and returns its
// URL; the server stops when the test ends.
func startRun(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"--listen", "127.0.0.1:0", "--data-dir", filepath.Join(t.TempDir(), "data")}, args...), pw, io.Discard)
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	sc := bufio.NewScanner(pr)
	if !sc.Scan() {
		t.Fatalf("no output: %v", <-done)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	first := sc.Text()
	i := strings.Index(first, "http://")
	if i < 0 {
		t.Fatalf("first line: %q", first)
	}
	return strings.Fields(first[i:])[0]
}

// TestRunYAMLLimitFlags: --max-yaml-alias-nodes changes the bound a YAML
// request body is held to. A body whose aliases add 6 nodes passes the
// default bound (100,000) and is refused with 400 naming the bound under
// --max-yaml-alias-nodes 4.
func TestRunYAMLLimitFlags(t *testing.T) {
	body := "apiVersion: config.porch.kpt.dev/v1alpha1\nkind: Repository\nmetadata:\n  name: r\n  namespace: default\n" +
		"  x: &x [a, b]\n  y: [*x, *x]\n"
	for _, tc := range []struct {
		args    []string
		refused bool
	}{
		{nil, false},
		{[]string{"--max-yaml-alias-nodes", "4"}, true},
		{[]string{"--max-yaml-alias-nodes", "6"}, false},
	} {
		url := startRun(t, tc.args...)
		resp, err := http.Post(url+"/apis/config.porch.kpt.dev/v1alpha1/namespaces/default/repositories", "application/yaml", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if got := resp.StatusCode == http.StatusBadRequest && strings.Contains(string(b), "YAMLLimits.MaxAliasNodes"); got != tc.refused {
			t.Errorf("%v: %d %.300s; refused %v, want %v", tc.args, resp.StatusCode, b, got, tc.refused)
		}
	}
}

// TestYAMLLimitFlagsMapping: each flag sets the revision.YAMLLimits fields
// its documentation names; none set means nil (the defaults).
func TestYAMLLimitFlagsMapping(t *testing.T) {
	if l := (yamlLimitFlags{}).limits(); l != nil {
		t.Errorf("no flags: %+v, want nil", l)
	}
	got := yamlLimitFlags{documents: 5, nodes: 7, aliasNodes: -1}.limits()
	want := revision.YAMLLimits{MaxDocuments: 5, MaxPackageDocuments: 5, MaxNodes: 7, MaxPackageNodes: 7, MaxAliasNodes: -1}
	if got == nil || *got != want {
		t.Errorf("limits = %+v, want %+v", got, want)
	}
}

// TestMaintainIntervalFlag: --maintain-interval 0 turns the scheduled
// maintenance off (a negative Options.MaintainInterval, whose zero is the
// default); a duration is passed on.
func TestMaintainIntervalFlag(t *testing.T) {
	for _, tc := range []struct{ flag, want time.Duration }{
		{0, -1}, {-time.Second, -1}, {time.Minute, time.Minute},
	} {
		if got := maintainInterval(tc.flag); got != tc.want {
			t.Errorf("maintainInterval(%s) = %s, want %s", tc.flag, got, tc.want)
		}
	}
}

// --webhook-secret-file is read before anything starts: a missing or
// empty file is refused.
func TestWebhookSecretFlag(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{filepath.Join(dir, "missing"), empty} {
		err := run(context.Background(), []string{"--webhook-secret-file", f, "--data-dir", filepath.Join(dir, "d")}, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "--webhook-secret-file") {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// --allow-alpha-wasm starts the server with a wasm runtime (its compiled
// modules kept under the data directory's cache): it becomes ready. (As
// any apiserver, /readyz answers 500 until its post-start hooks are done,
// which may be after the address is printed on a loaded machine.)
func TestAllowWasmFlag(t *testing.T) {
	url := startRun(t, "--allow-alpha-wasm")
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Get(url + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("readyz after a minute: %s: %s", resp.Status, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
