package apiserver

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/configasdata/cad/examples/internal/porchapi"
)

func TestParseTokens(t *testing.T) {
	tokens, err := ParseTokens(strings.NewReader(`# token,user,uid,groups
tok-a,alice,u1,"cad:editor,team-a"

tok-b, bob ,u2
`))
	require.NoError(t, err)
	assert.Equal(t, Tokens{
		"tok-a": {Name: "alice", UID: "u1", Groups: []string{"cad:editor", "team-a"}},
		"tok-b": {Name: "bob", UID: "u2"},
	}, tokens)

	for _, bad := range []struct{ in, want string }{
		{"tok,alice\n", "line 1: want token,user,uid[,groups], got 2 columns"},
		{",alice,u1\n", "line 1: empty token or user"},
		{"secret-tok,alice,u1\nsecret-tok,bob,u2\n", `line 2: the token of user "bob" is given twice`},
		{"tok,\"alice,u1\n", "line 1"},
	} {
		_, err := ParseTokens(strings.NewReader(bad.in))
		if assert.Error(t, err, bad.in) {
			assert.Contains(t, err.Error(), bad.want)
			assert.NotContains(t, err.Error(), "secret-tok")
		}
	}
	_, err = LoadTokenFile(filepath.Join(t.TempDir(), "missing.csv"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestUserRoles(t *testing.T) {
	u := func(groups ...string) *User { return &User{Name: "u", Groups: groups} }
	assert.True(t, u("cad:viewer").Has(RoleViewer))
	assert.False(t, u("cad:viewer").Has(RoleEditor))
	assert.True(t, u("cad:editor").Has(RoleViewer))
	assert.False(t, u("cad:editor").Has(RoleApprover))
	assert.True(t, u("cad:approver").Has(RoleViewer))
	assert.False(t, u("cad:approver").Has(RoleEditor))
	for _, r := range []Role{RoleViewer, RoleEditor, RoleApprover, RoleAdmin} {
		assert.True(t, u("cad:admin").Has(r), r)
		assert.False(t, u("viewer", "admin", "team").Has(r), r)
	}
}

func TestSelfApprovalNeedsAuthentication(t *testing.T) {
	_, err := New(context.Background(), &Options{DataDir: t.TempDir(), RefuseSelfApproval: true})
	assert.ErrorContains(t, err, "needs authentication")
}

// Raw HTTP: 401 and 403 bodies are Kubernetes Status objects, and the
// health endpoints stay public.
func TestAuthStatusBodies(t *testing.T) {
	ts := startServer(t, "", func(o *Options) {
		o.Tokens = Tokens{"view-tok": {Name: "val", Groups: []string{"cad:viewer"}}, "none-tok": {Name: "nobody"}}
	})
	do := func(method, path, token string, body string) (int, []byte) {
		req, err := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, data
	}
	code, _ := do("GET", "/healthz", "", "")
	assert.Equal(t, 200, code)
	for _, tok := range []string{"", "wrong"} {
		code, body := do("GET", prPath, tok, "")
		assert.Equal(t, 401, code)
		st := decodeStatus(t, body)
		assert.Equal(t, "Unauthorized", string(st.Reason))
	}
	code, body := do("GET", "/apis", "none-tok", "")
	assert.Equal(t, 403, code)
	assert.Contains(t, decodeStatus(t, body).Message, `User "nobody" cannot get path "/apis": it has no role on this server`)
	code, _ = do("GET", prPath, "view-tok", "")
	assert.Equal(t, 200, code)
	pr, _ := json.Marshal(initPR("p", "ws"))
	code, body = do("POST", prPath, "view-tok", string(pr))
	assert.Equal(t, 403, code)
	st := decodeStatus(t, body)
	assert.Equal(t, "Forbidden", string(st.Reason))
	assert.Contains(t, st.Message, `User "val" cannot create resource "packagerevisions" in API group "porch.kpt.dev" in the namespace "default": it needs the role editor`)
}

const tokenCSV = `# token,user,uid,groups
viewer-token,vera,1,cad:viewer
alice-token,alice,2,cad:editor
bob-token,bob,3,cad:approver
carol-token,carol,4,"cad:editor,cad:approver"
admin-token,root,5,cad:admin
`

// approveKubectl approves a revision through the approval subresource,
// returning kubectl's stderr and error.
func approveKubectl(t *testing.T, k *kubectl, name string) (string, error) {
	t.Helper()
	var pr porchapi.PackageRevision
	require.NoError(t, json.Unmarshal([]byte(k.ok("", "get", "packagerevision", name, "-o", "json")), &pr))
	pr.Spec.Lifecycle = porchapi.LifecyclePublished
	body, _ := json.Marshal(&pr)
	_, errOut, err := k.run(string(body), "replace", "--subresource=approval", "-f", "-")
	return errOut, err
}

// initPRYAML is kubectlInitPR for package pkg, workspace ws.
func initPRYAML(pkg, ws string) string {
	return strings.NewReplacer("workspaceName: ws1", "workspaceName: "+ws, "packageName: basens", "packageName: "+pkg).Replace(kubectlInitPR)
}

// TestKubectlTokens drives the roles and the refusal of self-approval with
// the real kubectl and bearer tokens from a token file.
func TestKubectlTokens(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "tokens.csv")
	require.NoError(t, os.WriteFile(tokenFile, []byte(tokenCSV), 0o600))
	tokens, err := LoadTokenFile(tokenFile)
	require.NoError(t, err)
	// kubectl sends bearer tokens only over TLS.
	pki := newTestPKI(t)
	ts := startServerTLS(t, "", func(o *Options) { o.Tokens = tokens; o.RefuseSelfApproval = true }, pki.serverTLS(t, nil))
	ca := "certificate-authority-data: " + base64.StdEncoding.EncodeToString(pki.caPEM)
	as := func(token string) *kubectl { return newKubectlAs(t, ts.URL, "{token: "+token+"}", ca) }
	// (Without any credentials, kubectl prompts for a user name over
	// HTTPS; basic auth is what it sends then, which the server refuses.)
	anon := newKubectlAs(t, ts.URL, "{username: vera, password: viewer-token}", ca)
	vera, alice, bob, carol, root := as("viewer-token"), as("alice-token"), as("bob-token"), as("carol-token"), as("admin-token")

	// 401 without a token or with a wrong one.
	assert.Contains(t, anon.fails("", "get", "packagerevisions"), "You must be logged in to the server")
	assert.Contains(t, as("not-a-token").fails("", "get", "packagerevisions"), "You must be logged in to the server")

	// A viewer reads but does not write.
	out, errOut, err := vera.run("", "get", "packagerevisions")
	require.NoError(t, err, errOut)
	assert.Contains(t, out+errOut, "No resources found")
	errOut = vera.fails(kubectlInitPR, "create", "-f", "-")
	assert.Contains(t, errOut, "Forbidden")
	assert.Contains(t, errOut, `User "vera" cannot create resource "packagerevisions" in API group "porch.kpt.dev"`)

	// An editor creates and proposes; the server records the author.
	const ws1 = "default.basens.ws1"
	alice.ok(kubectlInitPR, "create", "-f", "-")
	assert.Equal(t, `["alice"]`, alice.ok("", "get", "rpkg", ws1, "-o", `jsonpath={.metadata.annotations.cad\.configasdata\.dev/authors}`))
	// The authors annotation cannot be forged.
	_, errOut, err = alice.run("", "annotate", "--overwrite", "rpkg", ws1, AuthorsAnnotation+"=[]")
	require.NoError(t, err)
	assert.Contains(t, errOut, "managed by the server")
	assert.Equal(t, `["alice"]`, alice.ok("", "get", "rpkg", ws1, "-o", `jsonpath={.metadata.annotations.cad\.configasdata\.dev/authors}`))
	alice.ok("", "patch", "rpkg", ws1, "--type", "merge", "-p", `{"spec":{"lifecycle":"Proposed"}}`)

	// An editor cannot approve, nor reject.
	errOut, err = approveKubectl(t, alice, ws1)
	require.Error(t, err)
	assert.Contains(t, errOut, "Forbidden")
	assert.Contains(t, errOut, `User "alice" cannot update resource "packagerevisions/approval" in API group "porch.kpt.dev"`)
	errOut = alice.fails("", "patch", "rpkg", ws1, "--type", "merge", "-p", `{"spec":{"lifecycle":"Draft"}}`)
	assert.Contains(t, errOut, "needs the role approver")

	// An approver approves another user's proposal; it is the publisher.
	errOut, err = approveKubectl(t, bob, ws1)
	require.NoError(t, err, errOut)
	assert.Equal(t, "Published bob", bob.ok("", "get", "rpkg", ws1, "-o", "jsonpath={.spec.lifecycle} {.status.publishedBy}"))

	// Self-approval: a user who created and proposed a revision may not
	// approve it, even with the approver role.
	const ws2 = "default.p2.ws2"
	carol.ok(initPRYAML("p2", "ws2"), "create", "-f", "-")
	carol.ok("", "patch", "rpkg", ws2, "--type", "merge", "-p", `{"spec":{"lifecycle":"Proposed"}}`)
	errOut, err = approveKubectl(t, carol, ws2)
	require.Error(t, err)
	assert.Contains(t, errOut, "Forbidden")
	assert.Contains(t, errOut, `User "carol" cannot approve a package revision it created, edited or proposed`)
	assert.Equal(t, "Proposed", carol.ok("", "get", "rpkg", ws2, "-o", "jsonpath={.spec.lifecycle}"))

	// ... nor one it only edited.
	const ws3 = "default.p3.ws3"
	alice.ok(initPRYAML("p3", "ws3"), "create", "-f", "-")
	prr := carol.ok("", "get", "prr", ws3, "-o", "yaml")
	edited := strings.Replace(prr, "    Kptfile: |", "    cm.yaml: |\n      apiVersion: v1\n      kind: ConfigMap\n      metadata:\n        name: edited\n    Kptfile: |", 1)
	carol.ok(edited, "replace", "-f", "-")
	assert.Equal(t, `["alice","carol"]`, alice.ok("", "get", "rpkg", ws3, "-o", `jsonpath={.metadata.annotations.cad\.configasdata\.dev/authors}`))
	alice.ok("", "patch", "rpkg", ws3, "--type", "merge", "-p", `{"spec":{"lifecycle":"Proposed"}}`)
	errOut, err = approveKubectl(t, carol, ws3)
	require.Error(t, err)
	assert.Contains(t, errOut, "self-approval")
	errOut, err = approveKubectl(t, bob, ws3)
	require.NoError(t, err, errOut)

	// A viewer and an editor cannot propose a published revision for
	// deletion, nor delete it; an approver can.
	errOut = alice.fails("", "patch", "rpkg", ws1, "--type", "merge", "-p", `{"spec":{"lifecycle":"DeletionProposed"}}`)
	assert.Contains(t, errOut, `User "alice" cannot change the lifecycle of a package revision from Published to DeletionProposed`)
	bob.ok("", "patch", "rpkg", ws1, "--type", "merge", "-p", `{"spec":{"lifecycle":"DeletionProposed"}}`)
	assert.Contains(t, vera.fails("", "delete", "rpkg", ws1), `User "vera" cannot delete`)
	assert.Contains(t, alice.fails("", "delete", "rpkg", ws1), `User "alice" cannot delete a DeletionProposed package revision`)
	assert.Contains(t, bob.ok("", "delete", "rpkg", ws1), "deleted")
	// An approver without the editor role cannot delete a draft.
	alice.ok(initPRYAML("p4", "ws4"), "create", "-f", "-")
	assert.Contains(t, bob.fails("", "delete", "rpkg", "default.p4.ws4"), "needs the role editor")
	assert.Contains(t, alice.ok("", "delete", "rpkg", "default.p4.ws4"), "deleted")

	// Repositories and namespaces are the admin's.
	errOut = alice.fails("", "create", "namespace", "team-a")
	assert.Contains(t, errOut, `User "alice" cannot create resource "namespaces" in API group "" at the cluster scope: it needs the role admin`)
	root.ok("", "create", "namespace", "team-a")
	repo := fmt.Sprintf(`apiVersion: config.porch.kpt.dev/v1alpha1
kind: Repository
metadata:
  name: team
  namespace: team-a
spec:
  type: git
  git:
    repo: %s
    createBranch: true
`, filepath.Join(ts.dataDir, "git", "default.git"))
	assert.Contains(t, carol.fails(repo, "create", "-f", "-"), "needs the role admin")
	root.ok(repo, "create", "-f", "-")
}

// testPKI is a CA with server and client certificates for tests.
type testPKI struct {
	caPEM   []byte
	caKey   *ecdsa.PrivateKey
	caCert  *x509.Certificate
	serial  int64
	tempDir string
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "cad test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return &testPKI{caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), caKey: key, caCert: cert, serial: 1, tempDir: t.TempDir()}
}

// issue returns a PEM certificate and key signed by the CA.
func (p *testPKI) issue(t *testing.T, cn string, orgs []string, server bool) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	p.serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(p.serial), Subject: pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature,
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	} else {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.caCert, &key.PublicKey, p.caKey)
	require.NoError(t, err)
	kder, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// serverTLS returns a TLS configuration with a server certificate for
// 127.0.0.1 and, when clientCAs is not nil, client certificate
// verification.
func (p *testPKI) serverTLS(t *testing.T, clientCAs *x509.CertPool) *tls.Config {
	t.Helper()
	certPEM, keyPEM := p.issue(t, "127.0.0.1", nil, true)
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	require.NoError(t, err)
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}}
	if clientCAs != nil {
		cfg.ClientCAs, cfg.ClientAuth = clientCAs, tls.VerifyClientCertIfGiven
	}
	return cfg
}

// TestKubectlClientCertificates authenticates kubectl by TLS client
// certificates: the user is the CN, the roles come from O.
func TestKubectlClientCertificates(t *testing.T) {
	pki := newTestPKI(t)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pki.caPEM)
	hs := startServerTLS(t, "", func(o *Options) { o.ClientCertificates = true }, pki.serverTLS(t, pool))

	b64 := func(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
	ca := "certificate-authority-data: " + b64(pki.caPEM)
	as := func(cn string, orgs ...string) *kubectl {
		c, k := pki.issue(t, cn, orgs, false)
		return newKubectlAs(t, hs.URL, fmt.Sprintf("{client-certificate-data: %s, client-key-data: %s}", b64(c), b64(k)), ca)
	}

	// No certificate: 401 (kubectl sends basic auth when it has nothing
	// else, rather than prompting; the server does not accept it).
	assert.Contains(t, newKubectlAs(t, hs.URL, "{username: frank, password: x}", ca).fails("", "get", "packagerevisions"), "You must be logged in to the server")
	// A certificate of another CA does not authenticate.
	other := newTestPKI(t)
	c, k := other.issue(t, "mallory", []string{"cad:admin"}, false)
	errOut := newKubectlAs(t, hs.URL, fmt.Sprintf("{client-certificate-data: %s, client-key-data: %s}", b64(c), b64(k)), ca).fails("", "get", "packagerevisions")
	assert.NotContains(t, errOut, "No resources")

	viewer := as("frank", "cad:viewer")
	out, errOut, err := viewer.run("", "get", "packagerevisions")
	require.NoError(t, err, errOut)
	assert.Contains(t, out+errOut, "No resources found")
	assert.Contains(t, viewer.fails(kubectlInitPR, "create", "-f", "-"), `User "frank" cannot create resource "packagerevisions" in API group "porch.kpt.dev"`)

	editor := as("erin", "team-a", "cad:editor")
	assert.Contains(t, editor.ok(kubectlInitPR, "create", "-f", "-"), "created")
	editor.ok("", "patch", "rpkg", "default.basens.ws1", "--type", "merge", "-p", `{"spec":{"lifecycle":"Proposed"}}`)
	approver := as("grace", "cad:approver")
	errOut, err = approveKubectl(t, approver, "default.basens.ws1")
	require.NoError(t, err, errOut)
	assert.Equal(t, "grace", approver.ok("", "get", "rpkg", "default.basens.ws1", "-o", "jsonpath={.status.publishedBy}"))
}
