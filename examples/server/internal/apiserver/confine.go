package apiserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/google/go-containerregistry/pkg/authn"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/configasdata/cad/examples/internal/confine"
	"github.com/configasdata/cad/examples/internal/porchapi"
	"github.com/configasdata/cad/examples/internal/secretauth"
	"github.com/configasdata/cad/examples/internal/urlcred"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
)

// resolveRoots returns the repository roots: roots, or the data directory
// when roots is empty, and always the data directory's git directory,
// where the server keeps its own default repository; its objects and
// cache directories are private. Roots are created when missing.
func resolveRoots(dataDir string, roots []string) (*confine.Roots, error) {
	if len(roots) == 0 {
		roots = []string{dataDir}
	}
	roots = append(slices.Clone(roots), filepath.Join(dataDir, "git"))
	r, err := confine.New("server", roots, map[string]string{
		"objects": filepath.Join(dataDir, "objects"), "cache": filepath.Join(dataDir, "cache")})
	if err != nil {
		return nil, fmt.Errorf("apiserver: %w", err)
	}
	return r, nil
}

// checkLocalPath refuses a local repository path outside the repository
// roots, or inside the server's object store or caches.
func (s *Server) checkLocalPath(p string) error {
	return s.roots.CheckPath(p)
}

// checkGitURL checks a git URL a client gave: no credentials in it, and
// a local path only under the roots. what names it in messages.
func (s *Server) checkGitURL(u string) error {
	if urlcred.Has(u) {
		return fmt.Errorf("%w: the URL embeds credentials (%s); they are never stored: register the URL without them and name a secret in secretRef",
			repository.ErrInvalidInput, urlcred.Redact(u))
	}
	p, local, err := gitrepo.LocalPath(u)
	if err != nil {
		return fmt.Errorf("%w: unsupported URL scheme in %q", repository.ErrInvalidInput, urlcred.Redact(u))
	}
	if local {
		return s.checkLocalPath(p)
	}
	return nil
}

// checkRepositorySpec checks a repository spec against the server's rules
// (see checkGitURL).
func (s *Server) checkRepositorySpec(spec repository.Spec) error {
	if spec.Git != nil {
		return s.checkGitURL(spec.Git.Repo)
	}
	if spec.OCI != nil && urlcred.Has("oci://"+spec.OCI.Registry) {
		return fmt.Errorf("%w: the registry embeds credentials; name a secret in secretRef", repository.ErrInvalidInput)
	}
	return nil
}

// stripStoredCredentials removes credentials that an earlier version let
// a client store in a repository's URL, from the store and from r.
func (s *Server) stripStoredCredentials(u *unstructured.Unstructured, r *porchapi.Repository) (*porchapi.Repository, error) {
	if r.Spec.Git == nil || !urlcred.Has(r.Spec.Git.Repo) {
		return r, nil
	}
	s.log.Warn("removed the credentials embedded in a registered repository's URL; give them in a secretRef",
		"namespace", r.Namespace, "name", r.Name, "url", urlcred.Redact(r.Spec.Git.Repo))
	r.Spec.Git.Repo = urlcred.Strip(r.Spec.Git.Repo)
	if err := unstructured.SetNestedField(u.Object, r.Spec.Git.Repo, "spec", "git", "repo"); err != nil {
		return nil, err
	}
	if _, err := s.store.Update(resRepositories, u); err != nil {
		return nil, fmt.Errorf("apiserver: remove credentials from repository %s/%s: %w", r.Namespace, r.Name, err)
	}
	return r, nil
}

// resolveSecret returns the data of secret name of namespace ns: from
// Options.Secrets (cluster mode), else the Secret object the server
// stores, else the secrets directory: the directory <SecretsDir>/<ns>/<name>,
// one file a key (the layout of a Kubernetes Secret mounted as a volume).
// Errors name the secret, never its content.
func (s *Server) resolveSecret(ns, name string) (map[string][]byte, error) {
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return nil, fmt.Errorf("%w: secretRef %q: must be a DNS-1123 subdomain: %s", repository.ErrInvalidInput, name, strings.Join(errs, "; "))
	}
	if s.opts.Secrets != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		data, err := s.opts.Secrets(ctx, ns, name)
		if err != nil {
			return nil, fmt.Errorf("secret %q of namespace %q: %w", name, ns, err)
		}
		return data, nil
	}
	if s.store != nil {
		// A Secret object the server serves comes first.
		data, ok, err := s.storedSecret(ns, name)
		switch {
		case err != nil:
			return nil, err
		case ok:
			return data, nil
		case s.opts.SecretsDir == "":
			return nil, fmt.Errorf("%w: secret %q of namespace %q not found (create the Secret, or give the server a --secrets-dir)", repository.ErrNotFound, name, ns)
		}
	}
	if s.opts.SecretsDir == "" {
		return nil, fmt.Errorf("%w: secretRef %q: the server has no secrets directory (--secrets-dir)", repository.ErrInvalidInput, name)
	}
	dir := filepath.Join(s.opts.SecretsDir, ns, name)
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: secret %q of namespace %q not found in the secrets directory", repository.ErrNotFound, name, ns)
		}
		return nil, fmt.Errorf("secret %q of namespace %q: %w", name, ns, err)
	}
	data := map[string][]byte{}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			continue // Kubernetes' ..data links
		}
		if v, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil { // not a directory
			data[e.Name()] = v
		}
	}
	return data, nil
}

// gitAuth resolves secretRef name of namespace ns into go-git credentials
// for repoURL (see secretauth.Git). Nil for no secretRef.
func (s *Server) gitAuth(ns, name, repoURL string) (transport.AuthMethod, error) {
	if name == "" {
		return nil, nil
	}
	data, err := s.resolveSecret(ns, name)
	if err != nil {
		return nil, err
	}
	return secretauth.Git(name, data, repoURL)
}

// ociAuth resolves secretRef name of namespace ns into registry
// credentials (see secretauth.OCI). Nil for no secretRef.
func (s *Server) ociAuth(ns, name string) (authn.Authenticator, error) {
	if name == "" {
		return nil, nil
	}
	data, err := s.resolveSecret(ns, name)
	if err != nil {
		return nil, err
	}
	return secretauth.OCI(name, data)
}
