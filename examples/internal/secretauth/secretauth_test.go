package secretauth

import (
	"testing"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/configasdata/cad/repository"
)

func TestCredentials(t *testing.T) {
	a, err := Git("s", map[string][]byte{"bearerToken": []byte("tok\n"), "username": []byte("ignored")}, "https://h/r.git")
	require.NoError(t, err)
	require.Equal(t, &githttp.TokenAuth{Token: "tok"}, a)
	a, err = Git("s", map[string][]byte{"username": []byte("u"), "password": []byte("p\r\n")}, "")
	require.NoError(t, err)
	require.Equal(t, &githttp.BasicAuth{Username: "u", Password: "p"}, a)
	_, err = Git("s", map[string][]byte{"ssh-privatekey": []byte("not a key")}, "")
	require.ErrorIs(t, err, repository.ErrInvalidInput)
	require.ErrorContains(t, err, "the ssh key does not parse")
	_, err = Git("s", map[string][]byte{"other": []byte("secret-value")}, "")
	require.ErrorIs(t, err, ErrNoCredentials)
	require.NotContains(t, err.Error(), "secret-value")

	o, err := OCI("s", map[string][]byte{"username": []byte("u"), "password": []byte("p")})
	require.NoError(t, err)
	require.Equal(t, &authn.Basic{Username: "u", Password: "p"}, o)
	_, err = OCI("s", nil)
	require.ErrorIs(t, err, repository.ErrInvalidInput)
	require.ErrorIs(t, err, ErrNoCredentials)

	sec := &corev1.Secret{Data: map[string][]byte{"username": []byte("u"), "password": []byte("old")},
		StringData: map[string]string{"password": "new"}}
	require.Equal(t, map[string][]byte{"username": []byte("u"), "password": []byte("new")}, Data(sec))
	require.Equal(t, []byte("old"), sec.Data["password"], "the Secret is left as it was")
}
