package apiserver

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/configasdata/cad/repository/repotest"
)

// In standalone mode the server serves core v1 Secrets, kept in its data
// directory, and a Repository's secretRef names one: what porchctl repo
// reg --repo-basic-username/--repo-basic-password does, creating the
// Secret with client-go's typed client in protobuf, as porchctl sends it.
func TestSecretsRegisterPrivateRepository(t *testing.T) {
	gs := repotest.NewGitServer(t, t.TempDir(), &repotest.GitServerOptions{User: "nephio", Password: "s3cret-pw"})
	url := gs.InitBare(t, "private.git")
	dataDir := t.TempDir()
	ts := startServer(t, dataDir, nil)
	k := newKubectl(t, ts.URL)

	cs, err := kubernetes.NewForConfig(&rest.Config{Host: ts.URL, ContentConfig: rest.ContentConfig{
		ContentType: "application/vnd.kubernetes.protobuf", AcceptContentTypes: "application/vnd.kubernetes.protobuf,application/json"}})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sec, err := cs.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "private-auth"},
		Type:       corev1.SecretTypeBasicAuth,
		Data:       map[string][]byte{"username": []byte("nephio"), "password": []byte("s3cret-pw")},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, corev1.SecretTypeBasicAuth, sec.Type)
	got, err := cs.CoreV1().Secrets("default").Get(ctx, "private-auth", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "s3cret-pw", string(got.Data["password"]))

	k.ok(repoYAML("private", url, "\n    secretRef:\n      name: private-auth"), "create", "-f", "-")
	waitReady(t, k, "private", "True")
	k.ok(strings.NewReplacer("repository: default", "repository: private").Replace(kubectlInitPR), "create", "-f", "-")
	assert.Contains(t, k.ok("", "get", "rpkg", "-o", "name"), "private.basens.ws1")

	// stringData is merged into data, as Kubernetes does.
	k.ok(`apiVersion: v1
kind: Secret
metadata:
  name: token
  namespace: default
stringData:
  bearerToken: tok-1
`, "create", "-f", "-")
	assert.Equal(t, "dG9rLTE=", k.ok("", "get", "secret", "token", "-o", "jsonpath={.data.bearerToken}"))
	assert.Empty(t, k.ok("", "get", "secret", "token", "-o", "jsonpath={.stringData}"))
	assert.Contains(t, k.fails("", "patch", "secret", "token", "--type=merge", "-p", `{"type":"kubernetes.io/basic-auth"}`), "immutable")

	// The Secret survives a restart; credentials never show in the
	// Repository.
	assert.NotContains(t, k.ok("", "get", "repository", "private", "-o", "yaml"), "s3cret")
	k.ok("", "delete", "secret", "token")
	assert.Contains(t, k.fails("", "get", "secret", "token"), "NotFound")
}

// Secrets are an admin's: a viewer neither reads nor lists them.
func TestSecretsNeedAdmin(t *testing.T) {
	tokens, err := ParseTokens(strings.NewReader(tokenCSV))
	require.NoError(t, err)
	pki := newTestPKI(t)
	ts := startServerTLS(t, "", func(o *Options) { o.Tokens = tokens }, pki.serverTLS(t, nil))
	ca := "certificate-authority-data: " + base64.StdEncoding.EncodeToString(pki.caPEM)
	viewer := newKubectlAs(t, ts.URL, "{token: viewer-token}", ca)
	assert.Contains(t, viewer.fails("", "get", "secrets"), "it needs the role admin")
	admin := newKubectlAs(t, ts.URL, "{token: admin-token}", ca)
	admin.ok("", "create", "secret", "generic", "s", "--from-literal=a=b")
	assert.Contains(t, viewer.fails("", "get", "secret", "s", "-o", "yaml"), "it needs the role admin")
}
