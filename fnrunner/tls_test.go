package fnrunner_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/configasdata/cad/fnrunner"
	"github.com/configasdata/cad/fnrunner/internal/testrunner"
)

// selfSignedCA makes a CA and a server certificate for 127.0.0.1 signed
// by it; it returns the CA's PEM and the server's TLS config.
func selfSignedCA(t *testing.T) ([]byte, *tls.Config) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "fnrunner test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "function-runner"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"function-runner.test"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS12}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), cfg
}

// A grpcs:// runner is reached over TLS with a CA given as a pool or as
// a file; without the CA the certificate is refused, and the error names
// the runner.
func TestTLS(t *testing.T) {
	caPEM, serverTLS := selfSignedCA(t)
	srv := testrunner.Start(t, testrunner.Options{TLS: serverTLS, Handlers: map[string]testrunner.Handler{"fn": testrunner.Echo("over tls\n")}})
	if !strings.HasPrefix(srv.URL, "grpcs://") {
		t.Fatalf("URL %s", srv.URL)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, opts := range map[string]*fnrunner.Options{
		"pool":        {RootCAs: pool},
		"file":        {CAFile: caFile},
		"server name": {CAFile: caFile, TLSServerName: "function-runner.test"},
	} {
		c := newClient(t, srv.URL, opts)
		var out strings.Builder
		stderr, err := c.Function("fn", "").RunStream(context.Background(), strings.NewReader(resourceList), &out)
		if err != nil || stderr != "over tls\n" || out.String() != resourceList {
			t.Errorf("%s: %q, %v", name, stderr, err)
		}
	}

	c := newClient(t, srv.URL, &fnrunner.Options{MaxAttempts: 2, Backoff: 10 * time.Millisecond})
	_, err := c.Function("fn", "").RunStream(context.Background(), strings.NewReader(resourceList), &strings.Builder{})
	var re *fnrunner.Error
	if !errors.As(err, &re) || re.Runner != srv.URL || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("without the CA: %v, want a certificate error naming the runner", err)
	}
	// A plain-text client of a TLS runner fails too.
	c = newClient(t, "grpc://"+srv.Addr, &fnrunner.Options{MaxAttempts: 1})
	if _, err := c.Function("fn", "").RunStream(context.Background(), strings.NewReader(resourceList), &strings.Builder{}); err == nil {
		t.Error("plain text against a TLS runner succeeded")
	}
}
