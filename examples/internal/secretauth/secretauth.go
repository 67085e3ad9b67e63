// Package secretauth turns the data of a credentials Secret, in the keys
// Porch's repository Secrets use, into go-git and registry credentials.
// The reference server (Secrets it stores, a secrets directory or the
// cluster's) and the operator (the cluster's Secrets) share it.
package secretauth

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"github.com/google/go-containerregistry/pkg/authn"
	gossh "golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"

	"github.com/configasdata/cad/repository"
)

// The keys of a credentials Secret, as in Kubernetes' basic-auth and
// ssh-auth Secrets and Porch's bearer token Secret.
const (
	Username      = "username"
	Password      = "password"
	BearerToken   = "bearerToken"
	SSHPrivateKey = "ssh-privatekey"
	SSHPassphrase = "ssh-passphrase"
	KnownHosts    = "known_hosts"
)

// ErrNoCredentials is matched by the error of a Secret that holds none of
// the keys of the credentials asked for.
var ErrNoCredentials = errors.New("the secret holds no credentials")

// Data returns the data of sec with its stringData, as the API server
// stores them (stringData wins).
func Data(sec *corev1.Secret) map[string][]byte {
	data := maps.Clone(sec.Data)
	if data == nil {
		data = map[string][]byte{}
	}
	for k, v := range sec.StringData {
		data[k] = []byte(v)
	}
	return data
}

// value returns the value of key in data, without trailing newlines.
func value(data map[string][]byte, key string) string {
	return strings.TrimRight(string(data[key]), "\r\n")
}

// Git returns the go-git credentials of the Secret name whose data is
// data, for the repository at repoURL: an ssh key (ssh-privatekey, with
// ssh-passphrase and known_hosts when present; the user is the URL's, else
// "git"), else a bearer token, else basic auth (username and password).
// Its errors match repository.ErrInvalidInput, and ErrNoCredentials for a
// Secret with none of those keys; they name the Secret, never its values.
func Git(name string, data map[string][]byte, repoURL string) (transport.AuthMethod, error) {
	switch {
	case data[SSHPrivateKey] != nil:
		user := "git"
		if ep, err := transport.NewEndpoint(repoURL); err == nil && ep.User != "" {
			user = ep.User
		}
		keys, err := gitssh.NewPublicKeys(user, data[SSHPrivateKey], value(data, SSHPassphrase))
		if err != nil {
			return nil, fmt.Errorf("%w: secret %q: the ssh key does not parse", repository.ErrInvalidInput, name)
		}
		if hosts, ok := data[KnownHosts]; ok {
			if keys.HostKeyCallback, err = knownHosts(hosts); err != nil {
				return nil, fmt.Errorf("%w: secret %q: known_hosts: %v", repository.ErrInvalidInput, name, err)
			}
		}
		return keys, nil
	case data[BearerToken] != nil:
		return &githttp.TokenAuth{Token: value(data, BearerToken)}, nil
	case data[Username] != nil || data[Password] != nil:
		return &githttp.BasicAuth{Username: value(data, Username), Password: value(data, Password)}, nil
	}
	return nil, fmt.Errorf("%w: secret %q has none of the keys %s, %s, %s, %s: %w", repository.ErrInvalidInput, name,
		Username, Password, BearerToken, SSHPrivateKey, ErrNoCredentials)
}

// OCI returns the registry credentials of the Secret name whose data is
// data: a bearer token, else basic auth. Its errors are Git's.
func OCI(name string, data map[string][]byte) (authn.Authenticator, error) {
	switch {
	case data[BearerToken] != nil:
		return &authn.Bearer{Token: value(data, BearerToken)}, nil
	case data[Username] != nil || data[Password] != nil:
		return &authn.Basic{Username: value(data, Username), Password: value(data, Password)}, nil
	}
	return nil, fmt.Errorf("%w: secret %q has none of the keys %s, %s, %s: %w", repository.ErrInvalidInput, name,
		Username, Password, BearerToken, ErrNoCredentials)
}

// knownHosts returns the host key check of a known_hosts file's content,
// through a temporary file, since the parser reads files.
func knownHosts(content []byte) (gossh.HostKeyCallback, error) {
	f, err := os.CreateTemp("", "cad-known-hosts-")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	return gitssh.NewKnownHostsCallback(f.Name())
}
