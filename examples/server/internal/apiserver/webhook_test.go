package apiserver

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/repository/repotest"
	"github.com/configasdata/cad/revision"
)

// A push to a remote git repository, announced by the git server's
// webhook, reaches a watch at once although the server polls once an
// hour; a webhook with a wrong signature is refused and reads nothing.
func TestWebhookTriggersRead(t *testing.T) {
	gs := repotest.NewGitServer(t, t.TempDir(), nil)
	url := gs.InitBare(t, "fleet.git")
	secret := []byte("hook-secret")
	ts := startServer(t, "", func(o *Options) {
		o.GitPollInterval = time.Hour
		o.WebhookSecret = secret
	})
	k := newKubectl(t, ts.URL)
	k.ok(repoYAML("fleet", url, ""), "create", "-f", "-")
	waitReady(t, k, "fleet", "True")

	// A watch of the namespace's revisions.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", ts.URL+prPath+"?watch=true", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()

	// Another writer publishes a package straight into the git server's
	// repository.
	other, err := gitrepo.Open(ctx, repository.Spec{Name: "fleet", Type: repository.TypeGit,
		Git: &repository.GitSpec{Repo: filepath.Join(gs.Root, "fleet.git"), Branch: "main"}}, nil)
	require.NoError(t, err)
	defer other.Close()
	eng, err := engine.New(&engine.Options{Repositories: engine.Repos{"fleet": other}})
	require.NoError(t, err)
	key := revision.Key{Package: "cluster-1", Workspace: "v1"}
	_, err = eng.Init(ctx, "fleet", key, engine.InitOptions{Description: "pushed"})
	require.NoError(t, err)

	saw := func(within time.Duration) bool {
		deadline := time.After(within)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					return false
				}
				if strings.Contains(l, "fleet.cluster-1.v1") {
					return true
				}
			case <-deadline:
				return false
			}
		}
	}
	hook := func(sig string) *http.Response {
		body := []byte(fmt.Sprintf(`{"ref":"refs/heads/main","repository":{"clone_url":%q}}`, url))
		req, err := http.NewRequest("POST", ts.URL+WebhookPath, bytes.NewReader(body))
		require.NoError(t, err)
		if sig == "" {
			mac := hmac.New(sha256.New, secret)
			mac.Write(body)
			sig = "sha256=" + hex.EncodeToString(mac.Sum(nil))
		}
		req.Header.Set("X-Hub-Signature-256", sig)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp
	}
	assert.False(t, saw(2*time.Second), "the server read the push before any webhook (its poll is an hour)")
	assert.Equal(t, http.StatusUnauthorized, hook("sha256=00").StatusCode)
	assert.False(t, saw(time.Second), "a refused webhook made the server read")
	assert.Equal(t, http.StatusOK, hook("").StatusCode)
	assert.True(t, saw(30*time.Second), "the webhook did not make the server read the push")
}

// Without Options.WebhookSecret there is no webhook path.
func TestWebhookOff(t *testing.T) {
	ts := startServer(t, "", nil)
	code, _ := ts.do("POST", WebhookPath, "application/json", []byte(`{}`))
	assert.NotEqual(t, http.StatusOK, code)
}
