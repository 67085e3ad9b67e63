package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	configv1alpha1 "github.com/configasdata/cad/api/config/v1alpha1"
	porchv1alpha2 "github.com/configasdata/cad/api/porch/v1alpha2"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/repository/repotest"
	"github.com/configasdata/cad/revision"
)

func TestSecretCredentials(t *testing.T) {
	sec := func(data map[string]string) *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds"}, Data: map[string][]byte{}}
		for k, v := range data {
			s.Data[k] = []byte(v)
		}
		return s
	}
	a, err := gitAuth(sec(map[string]string{"username": "u", "password": "p\n"}))
	require.NoError(t, err)
	require.Equal(t, &githttp.BasicAuth{Username: "u", Password: "p"}, a)
	a, err = gitAuth(sec(map[string]string{"bearerToken": "tok", "username": "ignored"}))
	require.NoError(t, err)
	require.Equal(t, &githttp.TokenAuth{Token: "tok"}, a)
	a, err = gitAuth(nil)
	require.NoError(t, err)
	require.Nil(t, a)
	_, err = gitAuth(sec(map[string]string{"token": "x"}))
	require.ErrorIs(t, err, repository.ErrInvalidInput)
	require.ErrorIs(t, err, errBadSecret)
	require.NotContains(t, err.Error(), "x\"")

	o, err := ociAuth(sec(map[string]string{"username": "u", "password": "p"}))
	require.NoError(t, err)
	require.Equal(t, &authn.Basic{Username: "u", Password: "p"}, o)
	o, err = ociAuth(sec(map[string]string{"bearerToken": "tok"}))
	require.NoError(t, err)
	require.Equal(t, &authn.Bearer{Token: "tok"}, o)
	_, err = ociAuth(sec(nil))
	require.ErrorIs(t, err, repository.ErrInvalidInput)
}

// TestRepositoryCredentialsFromSecret registers a repository on a git
// server that wants basic auth: without its Secret, and with a wrong
// password, the Repository is not Ready; with the right one revisions are
// created in the remote.
func TestRepositoryCredentialsFromSecret(t *testing.T) {
	srv := repotest.NewGitServer(t, t.TempDir(), &repotest.GitServerOptions{User: "alice", Password: "s3cret"})
	url := srv.InitBare(t, "private.git")
	e := newEnv(t)
	ctx := context.Background()
	repo := &configv1alpha1.Repository{
		ObjectMeta: metav1.ObjectMeta{Name: "private", Namespace: e.ns},
		Spec: configv1alpha1.RepositorySpec{Type: configv1alpha1.RepositoryTypeGit,
			Git: &configv1alpha1.GitRepository{Repo: url, Branch: "main", CreateBranch: true, SecretRef: configv1alpha1.SecretRef{Name: "git-creds"}}},
	}
	require.NoError(t, e.c.Create(ctx, repo))
	e.run(Options{CacheDir: filepath.Join(t.TempDir(), "cache")})

	readyMsg := func(want metav1.ConditionStatus, contains, lacks string) {
		t.Helper()
		require.Eventually(t, func() bool {
			var r configv1alpha1.Repository
			require.NoError(t, e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: "private"}, &r))
			c := meta.FindStatusCondition(r.Status.Conditions, configv1alpha1.RepositoryReady)
			return c != nil && c.Status == want && strings.Contains(c.Message, contains) &&
				(lacks == "" || !strings.Contains(c.Message, lacks))
		}, 30*time.Second, 100*time.Millisecond)
	}
	readyMsg(metav1.ConditionFalse, `secret "git-creds"`, "")

	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "git-creds", Namespace: e.ns}, Type: corev1.SecretTypeBasicAuth,
		StringData: map[string]string{"username": "alice", "password": "wrong"}}
	require.NoError(t, e.c.Create(ctx, s))
	readyMsg(metav1.ConditionFalse, "", "not found") // the wrong password was tried
	require.NoError(t, e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: "git-creds"}, s))
	s.Data["password"] = []byte("s3cret")
	require.NoError(t, e.c.Update(ctx, s))
	readyMsg(metav1.ConditionTrue, "", "")

	e.create("private.app.ws1", "app", "ws1", &porchv1alpha2.PackageSource{Init: &porchv1alpha2.PackageInitSpec{}})
	pr := e.wait("private.app.ws1", "a ready draft", readyAt(porchv1alpha2.LifecycleDraft))
	require.Equal(t, url, pr.Status.SelfLock.Git.Repo, "no credentials in the self lock")

	// The remote has the draft: read with the credentials, independently.
	r, err := gitrepo.Open(ctx, repository.Spec{Name: "private", Type: repository.TypeGit, Git: &repository.GitSpec{Repo: url}},
		&gitrepo.Options{Auth: &githttp.BasicAuth{Username: "alice", Password: "s3cret"}})
	require.NoError(t, err)
	defer r.Close()
	got, err := r.Get(ctx, revision.Key{Repository: "private", Package: "app", Workspace: "ws1"})
	require.NoError(t, err)
	require.Equal(t, revision.LifecycleDraft, got.Meta().Lifecycle)
}
