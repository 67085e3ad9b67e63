package apiserver

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	x509request "k8s.io/apiserver/pkg/authentication/request/x509"

	"github.com/configasdata/cad/examples/internal/porchapi"
	"github.com/configasdata/cad/examples/server/internal/store"
)

// The server behind a Kubernetes cluster.
//
// Where PackageRevisions are custom resources that an operator reconciles
// (examples/operator), the server is the part that stays an aggregated API:
// kube-apiserver's aggregation layer forwards porch.kpt.dev/v1alpha1 to it
// (an APIService), so that `kubectl get packagerevisionresources` and
// porchctl-style pull and push reach the files of the same revisions the
// CRs name. Four options make that mode:
//
//   - ExternalRepositories: Repository objects are the cluster's; the
//     server mirrors them through ApplyRepository and RemoveRepository
//     (fed by an informer) and refuses to change them over its own API.
//   - RequestHeader: the aggregator authenticates itself with a client
//     certificate and names the user in X-Remote-User and X-Remote-Group.
//   - Authorizer: the cluster decides what the user may do (a
//     SubjectAccessReview per request, k8s.io/apiserver's delegating
//     authorizer) instead of the server's cad:* roles.
//   - Secrets: secretRefs resolve to the cluster's Secrets.

// RequestHeader authenticates requests forwarded by an authenticating
// proxy, as kube-apiserver's aggregation layer forwards them: the proxy
// presents a TLS client certificate signed by ClientCAs (with a common name
// in AllowedNames, when that is not empty), and names the user and its
// groups in headers. The http.Server's tls.Config must ask for client
// certificates (tls.RequestClientCert or stronger).
type RequestHeader struct {
	// ClientCAs verify the proxy's client certificate.
	ClientCAs *x509.CertPool
	// AllowedNames are the common names a proxy certificate may have;
	// empty allows any that ClientCAs verify.
	AllowedNames []string
	// UsernameHeaders name the user, the first present wins; default
	// X-Remote-User.
	UsernameHeaders []string
	// GroupHeaders carry the user's groups, each header repeatable;
	// default X-Remote-Group.
	GroupHeaders []string
}

// authenticate returns the user a verified proxy names (k8s.io/apiserver's
// request header authenticator behind its client certificate verifier),
// nil and no error when the request does not come through the proxy (no
// client certificate, one the proxy CAs do not verify, or no user header:
// another authenticator may know it), and an error for a proxy
// certificate whose name is not allowed.
func (h *RequestHeader) authenticate(r *http.Request) (*User, error) {
	or := func(v []string, def string) headerrequest.StaticStringSlice {
		if len(v) == 0 {
			return headerrequest.StaticStringSlice{def}
		}
		return v
	}
	hdr := headerrequest.NewDynamic(or(h.UsernameHeaders, "X-Remote-User"), headerrequest.StaticStringSlice{},
		or(h.GroupHeaders, "X-Remote-Group"), headerrequest.StaticStringSlice{})
	opts := x509.VerifyOptions{Roots: h.ClientCAs, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	res, ok, err := x509request.NewVerifier(opts, hdr, sets.NewString(h.AllowedNames...)).AuthenticateRequest(r)
	var unknown x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	switch {
	case errors.As(err, &unknown), errors.As(err, &invalid):
		return nil, nil // not the proxy
	case err != nil:
		return nil, fmt.Errorf("request header proxy: %w", err)
	case !ok:
		return nil, nil
	}
	return &User{Name: res.User.GetName(), Groups: res.User.GetGroups()}, nil
}

// errExternalRepositories refuses a change of a mirrored Repository.
func errExternalRepositories(name string) error {
	return errForbidden(grRepositories, name,
		"repositories are managed in the Kubernetes cluster (config.porch.kpt.dev Repository objects there): this server mirrors them")
}

// ApplyRepository registers or updates a Repository that the cluster holds
// (ExternalRepositories): u is the cluster's object. The server keeps a
// copy (without the cluster's resourceVersion, uid or status) so that its
// own API lists it, and opens the repository when its spec is new or
// changed. The repository's namespace is created in the server when
// missing. It returns an error when u is not a valid Repository or cannot
// be stored; a repository that fails to open is not an error (its entry
// records why, and it is retried).
func (s *Server) ApplyRepository(ctx context.Context, u *unstructured.Unstructured) error {
	if !s.opts.ExternalRepositories {
		return errors.New("apiserver: ApplyRepository needs Options.ExternalRepositories")
	}
	r, err := repositoryFrom(u)
	if err != nil {
		return fmt.Errorf("apiserver: repository %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	ns, name := u.GetNamespace(), u.GetName()
	if ns == "" || name == "" {
		return errors.New("apiserver: a Repository needs a namespace and a name")
	}
	if _, err := s.store.Get(resNamespaces, "", ns); errors.Is(err, store.ErrNotFound) {
		if _, err := s.store.Create(resNamespaces, newNamespace(ns)); err != nil && !errors.Is(err, store.ErrAlreadyExists) {
			return fmt.Errorf("apiserver: namespace %s: %w", ns, err)
		}
	}
	c := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(),
		"metadata": map[string]any{"name": name, "namespace": ns},
	}}
	if spec, ok := u.Object["spec"]; ok {
		c.Object["spec"] = spec
	}
	c.SetLabels(u.GetLabels())
	c.SetAnnotations(u.GetAnnotations())

	old, err := s.store.Get(resRepositories, ns, name)
	switch {
	case errors.Is(err, store.ErrNotFound):
		if _, err := s.store.Create(resRepositories, c); err != nil {
			return fmt.Errorf("apiserver: repository %s/%s: %w", ns, name, err)
		}
	case err != nil:
		return err
	default:
		o, oerr := repositoryFrom(old)
		if oerr == nil && reflect.DeepEqual(porchapi.RepositoryToSpec(o), porchapi.RepositoryToSpec(r)) {
			if e, ok := s.entry(ns, name); ok && e.openErr() == nil {
				return nil // unchanged and open
			}
		}
		c.SetResourceVersion(old.GetResourceVersion())
		if _, err := s.store.Update(resRepositories, c); err != nil {
			return fmt.Errorf("apiserver: repository %s/%s: %w", ns, name, err)
		}
	}
	s.setRepositoryStatus(s.register(ctx, r))
	return nil
}

// RemoveRepository forgets a Repository the cluster no longer holds
// (ExternalRepositories) and closes it. Removing one that is not
// registered does nothing.
func (s *Server) RemoveRepository(ns, name string) {
	if _, err := s.store.Delete(resRepositories, ns, name, ""); err != nil && !errors.Is(err, store.ErrNotFound) {
		s.log.Warn("mirrored repository not removed", "namespace", ns, "name", name, "err", err)
	}
	s.unregister(ns, name)
}
