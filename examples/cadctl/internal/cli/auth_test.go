package cli_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/configasdata/cad/examples/cadctl/internal/cli"
)

// writeCert writes a PEM certificate and key for cn signed by parent (self
// signed when parent is nil) and returns them.
func writeCert(t *testing.T, dir, name, cn string, orgs []string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature}
	switch {
	case parent == nil:
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage |= x509.KeyUsageCertSign
		parent, parentKey = tmpl, key
	case cn == "127.0.0.1":
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	default:
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	os.WriteFile(filepath.Join(dir, name+".crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(filepath.Join(dir, name+".key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	return cert, key
}

// TestServerAuthentication: cadctl in server mode with a bearer token or a
// client certificate over TLS, and the server's 401 and 403 as cadctl
// prints them.
func TestServerAuthentication(t *testing.T) {
	bin := serverBinary(t)
	work := newWorkDir(t)
	ca, caKey := writeCert(t, work, "ca", "cad test CA", nil, nil, nil)
	writeCert(t, work, "server", "127.0.0.1", nil, ca, caKey)
	writeCert(t, work, "admin", "root", []string{"cad:admin"}, ca, caKey)
	if err := os.WriteFile(filepath.Join(work, "tokens.csv"), []byte("viewer-tok,vera,1,cad:viewer\neditor-tok,alice,2,cad:editor\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	url := startServer(t, bin, filepath.Join(work, ".server"), "--tls-cert-file", filepath.Join(work, "server.crt"),
		"--tls-private-key-file", filepath.Join(work, "server.key"), "--client-ca-file", filepath.Join(work, "ca.crt"),
		"--token-file", filepath.Join(work, "tokens.csv"))
	if !strings.HasPrefix(url, "https://") {
		t.Fatalf("server URL %q", url)
	}
	run := func(env map[string]string, args ...string) (string, string, int) {
		var stdout, stderr bytes.Buffer
		vars := []string{"HOME=" + work}
		for k, v := range env {
			vars = append(vars, k+"="+v)
		}
		inv := cli.Invocation{Args: append([]string{"--server", url, "--certificate-authority", "ca.crt"}, args...),
			Stdout: &stdout, Stderr: &stderr, Dir: work, Env: vars}
		code := inv.Run(context.Background())
		return stdout.String(), stderr.String(), code
	}
	if _, stderr, code := run(nil, "rpkg", "get"); code != 1 || !strings.Contains(stderr, "Unauthorized") {
		t.Errorf("without credentials: %d %q", code, stderr)
	}
	if _, stderr, code := run(nil, "--token", "viewer-tok", "rpkg", "get"); code != 0 {
		t.Errorf("viewer get: %d %q", code, stderr)
	}
	if _, stderr, code := run(map[string]string{cli.EnvToken: "viewer-tok"}, "rpkg", "init", "hello", "--repository", "default", "--workspace", "v1"); code != 1 ||
		!strings.Contains(stderr, `User "vera" cannot create resource "packagerevisions" in API group "porch.kpt.dev"`) {
		t.Errorf("viewer init: %d %q", code, stderr)
	}
	if _, stderr, code := run(map[string]string{cli.EnvToken: "editor-tok"}, "rpkg", "init", "hello", "--repository", "default", "--workspace", "v1"); code != 0 {
		t.Errorf("editor init: %d %q", code, stderr)
	}
	if out, stderr, code := run(nil, "--client-certificate", "admin.crt", "--client-key", "admin.key", "repo", "get"); code != 0 || !strings.Contains(out, "default") {
		t.Errorf("admin repo get: %d %q %q", code, out, stderr)
	}
	if _, stderr, code := run(nil, "--client-certificate", "admin.crt", "rpkg", "get"); code == 0 || !strings.Contains(stderr, "--client-key") {
		t.Errorf("certificate without key: %d %q", code, stderr)
	}
}
