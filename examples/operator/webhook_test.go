package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	configv1alpha1 "github.com/configasdata/cad/api/config/v1alpha1"
	porchv1alpha2 "github.com/configasdata/cad/api/porch/v1alpha2"
	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/repository/repotest"
	"github.com/configasdata/cad/revision"
)

// A push to a remote repository, announced by the git server's webhook,
// becomes a PackageRevision object at once although the operator polls
// once an hour; the webhook stamps the Repository, so any replica may
// take it.
func TestWebhookDiscovery(t *testing.T) {
	root := t.TempDir()
	srv := repotest.NewGitServer(t, root, nil)
	url := srv.InitBare(t, "fleet.git")
	e := newEnv(t)
	ctx := context.Background()
	require.NoError(t, e.c.Create(ctx, &configv1alpha1.Repository{
		ObjectMeta: metav1.ObjectMeta{Name: "fleet", Namespace: e.ns},
		Spec: configv1alpha1.RepositorySpec{Type: configv1alpha1.RepositoryTypeGit,
			Git: &configv1alpha1.GitRepository{Repo: url, Branch: "main", CreateBranch: true}},
	}))
	secret := []byte("hook-secret")
	e.run(Options{Poll: time.Hour, WebhookAddr: "127.0.0.1:0", WebhookSecret: secret})
	require.Eventually(t, func() bool {
		var r configv1alpha1.Repository
		return e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: "fleet"}, &r) == nil && r.Status.ObservedGeneration > 0
	}, 60*time.Second, 100*time.Millisecond, "the Repository was never reconciled")

	// Another writer publishes into the git server's repository.
	other, err := gitrepo.Open(ctx, repository.Spec{Name: "fleet", Type: repository.TypeGit,
		Git: &repository.GitSpec{Repo: filepath.Join(root, "fleet.git"), Branch: "main"}}, nil)
	require.NoError(t, err)
	defer other.Close()
	eng, err := engine.New(&engine.Options{Repositories: engine.Repos{"fleet": other}})
	require.NoError(t, err)
	key := revision.Key{Package: "cluster-1", Workspace: "v1"}
	_, err = eng.Init(ctx, "fleet", key, engine.InitOptions{Description: "pushed"})
	require.NoError(t, err)

	found := func() bool {
		var l porchv1alpha2.PackageRevisionList
		require.NoError(t, e.c.List(ctx, &l))
		for _, pr := range l.Items {
			if pr.Namespace == e.ns && pr.Spec.PackageName == "cluster-1" {
				return true
			}
		}
		return false
	}
	hook := func(sig string) int {
		body := []byte(fmt.Sprintf(`{"object_kind":"push","project":{"git_http_url":%q}}`, url))
		req, err := http.NewRequest("POST", e.webhookURL, bytes.NewReader(body))
		require.NoError(t, err)
		if sig == "" {
			mac := hmac.New(sha256.New, secret)
			mac.Write(body)
			req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
		} else {
			req.Header.Set("X-Gitlab-Token", sig)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	time.Sleep(2 * time.Second)
	require.False(t, found(), "discovered before any webhook, with an hour's poll")
	require.Equal(t, http.StatusUnauthorized, hook("wrong"))
	require.Equal(t, http.StatusOK, hook(""))
	require.Eventually(t, found, 60*time.Second, 100*time.Millisecond, "the webhook did not make the operator read the push")
	var r configv1alpha1.Repository
	require.NoError(t, e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: "fleet"}, &r))
	require.NotEmpty(t, r.Annotations[PushedAnnotation])
}
