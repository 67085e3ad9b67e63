package apiserver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/configasdata/cad/fnruntime"
	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/repository/repotest"
)

func gitInitBare(t *testing.T, dir string) {
	t.Helper()
	if out, err := exec.Command("git", "init", "--quiet", "--bare", "-b", "main", dir).CombinedOutput(); err != nil {
		t.Skipf("git init --bare: %v\n%s", err, out)
	}
}

func repoYAML(name, url string, extra string) string {
	return fmt.Sprintf(`apiVersion: config.porch.kpt.dev/v1alpha1
kind: Repository
metadata:
  name: %s
  namespace: default
spec:
  type: git
  git:
    repo: %s
    createBranch: true%s
`, name, url, extra)
}

// waitReady waits for the Ready condition of a repository to be status.
func waitReady(t *testing.T, k *kubectl, name, status string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		out := k.ok("", "get", "repository", name, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Ready")].message}`)
		if strings.HasPrefix(out, status+" ") || out == status {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("repository %s: Ready is %q, want %s", name, out, status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestKubectlRepositoryConfinement: a server opens local repositories only
// under its roots (its data directory by default, less its private
// directories), and clones from local paths only under them too.
func TestKubectlRepositoryConfinement(t *testing.T) {
	ts := startServer(t, "", func(o *Options) { o.RepositoryRoots = nil })
	k := newKubectl(t, ts.URL)

	outside := filepath.Join(t.TempDir(), "outside.git")
	gitInitBare(t, outside)
	for _, url := range []string{outside, "file://" + outside, filepath.Join(ts.dataDir, "..", filepath.Base(filepath.Dir(outside)), "outside.git")} {
		errOut := k.fails(repoYAML("outside", url, ""), "create", "-f", "-")
		assert.Contains(t, errOut, `The Repository "outside" is invalid: spec.git.repo`)
		assert.Contains(t, errOut, "outside the server's repository roots")
	}
	// A symbolic link under the root that leads outside does not escape.
	link := filepath.Join(ts.dataDir, "link.git")
	require.NoError(t, os.Symlink(outside, link))
	assert.Contains(t, k.fails(repoYAML("link", link, ""), "create", "-f", "-"), "outside the server's repository roots")
	// The server's own store and caches are not repositories to register.
	assert.Contains(t, k.fails(repoYAML("objects", filepath.Join(ts.dataDir, "objects"), ""), "create", "-f", "-"), "private objects directory")
	assert.Contains(t, k.fails(repoYAML("cache", filepath.Join(ts.dataDir, "cache", "default", "x"), ""), "create", "-f", "-"), "private cache directory")
	assert.Contains(t, k.fails(repoYAML("odd", "foo://host/r.git", ""), "create", "-f", "-"), "unsupported URL scheme")
	if out := k.ok("", "get", "repositories", "-o", "name"); strings.TrimSpace(out) != "repository.config.porch.kpt.dev/default" {
		t.Errorf("repositories after refusals: %q", out)
	}

	// Under the data directory: accepted.
	inside := filepath.Join(ts.dataDir, "git", "team.git")
	gitInitBare(t, inside)
	k.ok(repoYAML("team", inside, ""), "create", "-f", "-")
	waitReady(t, k, "team", "True")

	// A clone from a local path outside the roots is refused; inside, it
	// works.
	k.ok(kubectlInitPR, "create", "-f", "-")
	clone := func(ws, url string) string {
		return fmt.Sprintf(`apiVersion: porch.kpt.dev/v1alpha1
kind: PackageRevision
metadata:
  namespace: default
spec:
  packageName: copy-%s
  repository: default
  workspaceName: %s
  tasks:
  - type: clone
    clone:
      upstreamRef:
        type: git
        git:
          repo: %s
          ref: main
          directory: /
`, ws, ws, url)
	}
	for i, url := range []string{outside, "file://" + outside} {
		errOut := k.fails(clone(fmt.Sprintf("c%d", i), url), "create", "-f", "-")
		assert.Contains(t, errOut, "spec.tasks[0].clone.upstreamRef.git.repo")
		assert.Contains(t, errOut, "outside the server's repository roots")
	}
}

// TestKubectlCredentials: URLs that embed credentials are refused and
// never stored or printed; secretRefs resolve in the secrets directory.
func TestKubectlCredentials(t *testing.T) {
	gs := repotest.NewGitServer(t, t.TempDir(), &repotest.GitServerOptions{User: "nephio", Password: "s3cret-pw"})
	url := gs.InitBare(t, "private.git")
	secrets := t.TempDir()
	ts := startServer(t, "", func(o *Options) { o.SecretsDir = secrets })
	k := newKubectl(t, ts.URL)

	withPassword := strings.Replace(url, "http://", "http://nephio:s3cret-pw@", 1)
	errOut := k.fails(repoYAML("private", withPassword, ""), "create", "-f", "-")
	assert.Contains(t, errOut, "spec.git.repo: the URL embeds credentials")
	assert.NotContains(t, errOut, "s3cret-pw")
	withToken := strings.Replace(url, "http://", "http://ghp_s3cret@", 1)
	errOut = k.fails(repoYAML("private", withToken, ""), "create", "-f", "-")
	assert.Contains(t, errOut, "the URL embeds credentials")
	assert.NotContains(t, errOut, "s3cret")
	errOut = k.fails(strings.Replace(clonePR, "REPO", withPassword, 1), "create", "-f", "-")
	assert.Contains(t, errOut, "the URL embeds credentials")
	assert.NotContains(t, errOut, "s3cret-pw")

	// Without the secret, the repository does not open; with it, it does.
	secretRef := "\n    secretRef:\n      name: git-auth"
	k.ok(repoYAML("private", url, secretRef), "create", "-f", "-")
	msg := waitReady(t, k, "private", "False")
	assert.Contains(t, msg, `secret "git-auth" of namespace "default" not found`)
	dir := filepath.Join(secrets, "default", "git-auth")
	require.NoError(t, os.MkdirAll(dir, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "username"), []byte("nephio\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "password"), []byte("s3cret-pw\n"), 0o600))
	k.ok("", "delete", "repository", "private")
	k.ok(repoYAML("private", url, secretRef), "create", "-f", "-")
	waitReady(t, k, "private", "True")
	k.ok(strings.NewReplacer("repository: default", "repository: private").Replace(kubectlInitPR), "create", "-f", "-")
	assert.Contains(t, k.ok("", "get", "rpkg", "-o", "name"), "private.basens.ws1")
	// A clone from the private repository with the secret works.
	k.ok(strings.NewReplacer("REPO", url, "          directory: /", "          directory: /basens\n          secretRef:\n            name: git-auth", "ref: main", "ref: drafts/basens/ws1").Replace(clonePR), "create", "-f", "-")
	// A secret name cannot leave the secrets directory.
	k.ok(repoYAML("escape", gs.InitBare(t, "other.git"), "\n    secretRef:\n      name: ../default/git-auth"), "create", "-f", "-")
	assert.Contains(t, waitReady(t, k, "escape", "False"), `secretRef "../default/git-auth": must be a DNS-1123 subdomain`)

	// Nothing anywhere holds the password.
	for _, args := range [][]string{{"get", "repositories", "-o", "yaml"}, {"get", "rpkg", "-o", "yaml"}} {
		assert.NotContains(t, k.ok("", args...), "s3cret", args)
	}
	filepath.WalkDir(filepath.Join(ts.dataDir, "objects"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			data, _ := os.ReadFile(p)
			assert.NotContains(t, string(data), "s3cret", p)
		}
		return nil
	})
}

const clonePR = `apiVersion: porch.kpt.dev/v1alpha1
kind: PackageRevision
metadata:
  namespace: default
spec:
  packageName: cloned
  repository: default
  workspaceName: c1
  tasks:
  - type: clone
    clone:
      upstreamRef:
        type: git
        git:
          repo: REPO
          ref: main
          directory: /
`

// A repository stored with credentials in its URL by an earlier version
// loses them on the next start.
func TestStoredCredentialsStripped(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	ts := startServer(t, dir, nil)
	u, err := ts.store.Get(resRepositories, "default", "default")
	require.NoError(t, err)
	u.Object["spec"].(map[string]any)["git"].(map[string]any)["repo"] = "https://alice:s3cret@127.0.0.1:1/r.git"
	_, err = ts.store.Update(resRepositories, u)
	require.NoError(t, err)
	ts.stop()

	ts2 := startServer(t, dir, nil)
	code, body := ts2.do("GET", repoPath+"/default", "", nil)
	require.Equal(t, 200, code)
	assert.NotContains(t, string(body), "s3cret")
	assert.Contains(t, string(body), `"repo":"https://127.0.0.1:1/r.git"`)
}

// TestKubectlLimits: the request body cap, the starlark memory cap and the
// exec output cap, each refused through kubectl with a clear message.
func TestKubectlLimits(t *testing.T) {
	reg := fnruntime.NewRegistry(&fnruntime.Options{AllowExec: true, MaxOutput: 64 << 10, StarlarkMaxMemory: 32 << 20})
	ts := startServer(t, "", func(o *Options) {
		o.MaxBodyBytes = 256 << 10
		o.Pipeline = pipeline.NewKptfile(reg, nil)
	})
	k := newKubectl(t, ts.URL)
	const name = "default.basens.ws1"
	k.ok(kubectlInitPR, "create", "-f", "-")
	prr := k.ok("", "get", "prr", name, "-o", "yaml")

	// A body over the cap: 413.
	big := strings.Replace(prr, "    Kptfile: |", "    big.yaml: |\n      apiVersion: v1\n      kind: ConfigMap\n      metadata:\n        name: big\n      data:\n        x: "+strings.Repeat("x", 300<<10)+"\n    Kptfile: |", 1)
	errOut := k.fails(big, "replace", "-f", "-")
	assert.Contains(t, errOut, "RequestEntityTooLarge")
	assert.Contains(t, errOut, "Request entity too large: limit is 262144")

	withPipeline := func(fn string) string {
		return strings.Replace(prr, "      kind: Kptfile\n", "      kind: Kptfile\n      pipeline:\n        mutators:\n"+fn, 1)
	}
	// A starlark script that grows the heap without bound.
	starlark := `        - image: ghcr.io/kptdev/krm-functions-catalog/starlark:v0.5.0
          configMap:
            source: |
              keep = []
              for i in range(100000):
                  keep.append("x" * 100000 + str(i))
`
	errOut = k.fails(withPipeline(starlark), "replace", "-f", "-")
	assert.Contains(t, errOut, "is invalid")
	assert.Contains(t, errOut, "memory limit of 33554432 bytes")

	// An exec function whose output exceeds its cap: the typed error, not
	// a YAML parse error.
	if _, err := exec.LookPath("yes"); err == nil {
		errOut = k.fails(withPipeline("        - exec: yes\n"), "replace", "-f", "-")
		assert.Contains(t, errOut, "function output too large")
		assert.Contains(t, errOut, "stdout exceeded its cap of 65536 bytes")
		assert.NotContains(t, strings.ToLower(errOut), "yaml: ")
	}
	// Nothing was saved.
	assert.NotContains(t, k.ok("", "get", "prr", name, "-o", "yaml"), "pipeline:")
}

// Configured roots replace the data directory, but the server's own git
// directory stays allowed: the default repository opens.
func TestRepositoryRootsKeepDefault(t *testing.T) {
	root := t.TempDir()
	ts := startServer(t, "", func(o *Options) { o.RepositoryRoots = []string{root} })
	k := newKubectl(t, ts.URL)
	waitReady(t, k, "default", "True")
	other := filepath.Join(ts.dataDir, "other.git")
	gitInitBare(t, other)
	assert.Contains(t, k.fails(repoYAML("other", other, ""), "create", "-f", "-"), "outside the server's repository roots")
	inRoot := filepath.Join(root, "team.git")
	gitInitBare(t, inRoot)
	k.ok(repoYAML("team", inRoot, ""), "create", "-f", "-")
	waitReady(t, k, "team", "True")
}

func TestSecretsResolve(t *testing.T) {
	secrets := t.TempDir()
	write := func(name string, files map[string]string) {
		dir := filepath.Join(secrets, "team", name)
		require.NoError(t, os.MkdirAll(dir, 0o700))
		for k, v := range files {
			require.NoError(t, os.WriteFile(filepath.Join(dir, k), []byte(v), 0o600))
		}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	keyPEM := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	write("basic", map[string]string{"username": "nephio\n", "password": "s3cret\n"})
	write("token", map[string]string{"bearerToken": "tok-123"})
	write("ssh", map[string]string{"ssh-privatekey": keyPEM, "known_hosts": "git.example ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBEmKSENjQEezOmxkZMy7opKgwFB9nkt5YRrYMjNuG5N87uRgg6CLrbo5wAdT/y6v0mKV0U2w0WZ2YB/++Tpockg=\n"})
	write("badssh", map[string]string{"ssh-privatekey": "not a key"})
	write("empty", map[string]string{"other": "x"})
	s := &Server{opts: Options{SecretsDir: secrets}}

	a, err := s.gitAuth("team", "basic", "https://h/r.git")
	require.NoError(t, err)
	assert.Equal(t, &githttp.BasicAuth{Username: "nephio", Password: "s3cret"}, a)
	a, err = s.gitAuth("team", "token", "https://h/r.git")
	require.NoError(t, err)
	assert.Equal(t, &githttp.TokenAuth{Token: "tok-123"}, a)
	a, err = s.gitAuth("team", "ssh", "ssh://deploy@h/r.git")
	require.NoError(t, err)
	pk, ok := a.(*gitssh.PublicKeys)
	require.True(t, ok, "%T", a)
	assert.Equal(t, "deploy", pk.User)
	assert.NotNil(t, pk.HostKeyCallback)
	a, err = s.gitAuth("team", "ssh", "git@h:r.git")
	require.NoError(t, err)
	assert.Equal(t, "git", a.(*gitssh.PublicKeys).User)
	a, err = s.gitAuth("team", "", "https://h/r.git")
	assert.NoError(t, err)
	assert.Nil(t, a)

	for _, bad := range []struct{ ns, name, want string }{
		{"team", "badssh", "the ssh key does not parse"},
		{"team", "empty", "has none of the keys"},
		{"team", "missing", `secret "missing" of namespace "team" not found`},
		{"other", "basic", `secret "basic" of namespace "other" not found`},
		{"team", "../team/basic", "DNS-1123"},
		{"team", "..", "DNS-1123"},
	} {
		_, err := s.gitAuth(bad.ns, bad.name, "https://h/r.git")
		if assert.Error(t, err, bad.name) {
			assert.Contains(t, err.Error(), bad.want)
			assert.NotContains(t, err.Error(), "s3cret")
		}
	}
	_, err = (&Server{}).gitAuth("team", "basic", "https://h/r.git")
	assert.ErrorContains(t, err, "no secrets directory")

	o, err := s.ociAuth("team", "basic")
	require.NoError(t, err)
	assert.Equal(t, &authn.Basic{Username: "nephio", Password: "s3cret"}, o)
	o, err = s.ociAuth("team", "token")
	require.NoError(t, err)
	assert.Equal(t, &authn.Bearer{Token: "tok-123"}, o)
	_, err = s.ociAuth("team", "ssh")
	assert.ErrorContains(t, err, "has none of the keys")
}

// A repository registered outside the roots by an earlier version (or
// before the roots were narrowed) is not opened on start.
func TestStoredRepositoryOutsideRoots(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	outside := filepath.Join(t.TempDir(), "outside.git")
	gitInitBare(t, outside)
	ts := startServer(t, dir, nil) // roots: the test's temporary directories
	code, body := ts.do("POST", repoPath, "application/yaml", []byte(repoYAML("outside", outside, "")))
	require.Equal(t, 201, code, "%s", body)
	ts.stop()

	ts2 := startServer(t, dir, func(o *Options) { o.RepositoryRoots = nil })
	k := newKubectl(t, ts2.URL)
	assert.Contains(t, waitReady(t, k, "outside", "False"), "outside the server's repository roots")
	assert.NotContains(t, k.ok("", "get", "rpkg", "-o", "name"), "outside.")
}
