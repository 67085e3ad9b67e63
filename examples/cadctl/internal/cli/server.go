package cli

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/configasdata/cad/examples/internal/porchapi"
)

// maxResponseBytes bounds what the server client reads of one response.
const maxResponseBytes = 256 << 20

// ServerOptions configure NewServerClient. The zero value, and nil, mean
// the defaults.
type ServerOptions struct {
	// HTTPClient makes the requests; default a client with a 5 minute
	// timeout (renders run during requests) and the TLS settings below.
	HTTPClient *http.Client
	// Token is sent as "Authorization: Bearer <token>", only over https:
	// NewServerClient refuses a Token with an http:// URL, and a request
	// redirected to http:// fails rather than carry it. Empty sends none.
	Token string
	// CAFile, when set, holds the PEM CAs that verify an https server
	// instead of the system's.
	CAFile string
	// CertFile and KeyFile, when set, are the PEM client certificate and
	// key of TLS client authentication.
	CertFile, KeyFile string
}

// tlsConfig returns the TLS configuration of o; nil for the defaults.
func (o *ServerOptions) tlsConfig() (*tls.Config, error) {
	if o.CAFile == "" && o.CertFile == "" && o.KeyFile == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.CAFile != "" {
		data, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("--certificate-authority: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(data) {
			return nil, fmt.Errorf("--certificate-authority %s holds no PEM certificate", o.CAFile)
		}
	}
	if o.CertFile != "" || o.KeyFile != "" {
		if o.CertFile == "" || o.KeyFile == "" {
			return nil, usagef("--client-certificate and --client-key go together")
		}
		cert, err := tls.LoadX509KeyPair(o.CertFile, o.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// bearer adds a bearer token to every request to the server's host over
// https; it refuses a request over plain http (a redirect to an http://
// URL) and sends none to another host.
type bearer struct {
	token string
	host  string
	next  http.RoundTripper
}

func (b *bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Scheme != "https" {
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, fmt.Errorf("refusing to send a bearer token over plain http to %s", r.URL.Host)
	}
	if r.URL.Host != b.host {
		return b.next.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// ServerClient is the Client of server mode: the reference server's
// Kubernetes-style REST API (porch.kpt.dev/v1alpha1 and
// config.porch.kpt.dev/v1alpha1), spoken with net/http and JSON.
type ServerClient struct {
	base *url.URL
	ns   string
	http *http.Client
}

var _ Client = (*ServerClient)(nil)

// NewServerClient returns a client of the server at rawURL for namespace
// ns. It returns a usage error for a URL that is not http:// or https://
// and for a bearer token (opts.Token) with an http:// URL.
func NewServerClient(rawURL, ns string, opts *ServerOptions) (*ServerClient, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usagef("--server must be an http:// or https:// URL, got %q", rawURL)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	var o ServerOptions
	if opts != nil {
		o = *opts
	}
	hc := o.HTTPClient
	if hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		cfg, err := o.tlsConfig()
		if err != nil {
			return nil, err
		}
		if cfg != nil {
			tr.TLSClientConfig = cfg
		}
		hc = &http.Client{Timeout: 5 * time.Minute, Transport: tr}
	}
	if o.Token != "" {
		if u.Scheme != "https" {
			// kubectl does not send credentials over plain http either.
			return nil, usagef("refusing to send a bearer token over plain http to %s: use an https:// --server (or drop --token and $%s)", u.Host, EnvToken)
		}
		c := *hc
		next := c.Transport
		if next == nil {
			next = http.DefaultTransport
		}
		c.Transport = &bearer{token: o.Token, host: u.Host, next: next}
		hc = &c
	}
	return &ServerClient{base: u, ns: ns, http: hc}, nil
}

// Close releases idle connections.
func (s *ServerClient) Close() error {
	s.http.CloseIdleConnections()
	return nil
}

func (s *ServerClient) path(gv, resource, name string, allNamespaces bool, sub ...string) string {
	p := "/apis/" + gv
	if !allNamespaces {
		p += "/namespaces/" + url.PathEscape(s.ns)
	}
	p += "/" + resource
	if name != "" {
		p += "/" + url.PathEscape(name)
	}
	for _, x := range sub {
		p += "/" + x
	}
	return p
}

func (s *ServerClient) prPath(name string, sub ...string) string {
	return s.path(porchapi.SchemeGroupVersion.String(), porchapi.ResourcePackageRevisions, name, false, sub...)
}

func (s *ServerClient) prrPath(name string) string {
	return s.path(porchapi.SchemeGroupVersion.String(), porchapi.ResourcePackageRevisionResources, name, false)
}

func (s *ServerClient) repoPath(name string) string {
	return s.path(porchapi.ConfigGroupVersion.String(), porchapi.ResourceRepositories, name, false)
}

// do sends one request; in, when not nil, is sent as JSON and the response
// is decoded into out, when not nil. A response that is not a success is
// returned as a *StatusError built from its Status body.
func (s *ServerClient) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(data)
	}
	u := *s.base
	u.Path += path
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return fmt.Errorf("cannot reach the server: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return fmt.Errorf("reading the server's response: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return statusFromResponse(resp.StatusCode, data, method, path)
	}
	if out == nil || len(data) == 0 {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("the server's response to %s %s is not valid: %w", method, path, err)
	}
	return nil
}

func statusFromResponse(code int, data []byte, method, path string) error {
	var st metav1.Status
	if err := json.Unmarshal(data, &st); err == nil && st.Kind == "Status" && st.Message != "" {
		reason := st.Reason
		if reason == "" {
			reason = reasonForCode(code)
		}
		return &StatusError{Code: code, Reason: reason, Message: st.Message}
	}
	msg := strings.TrimSpace(string(data))
	if msg == "" || len(msg) > 512 {
		msg = http.StatusText(code)
	}
	return &StatusError{Code: code, Reason: reasonForCode(code),
		Message: fmt.Sprintf("the server responded to %s %s with %d: %s", method, path, code, msg)}
}

func reasonForCode(code int) metav1.StatusReason {
	switch code {
	case http.StatusNotFound:
		return metav1.StatusReasonNotFound
	case http.StatusConflict:
		return metav1.StatusReasonConflict
	case http.StatusUnprocessableEntity:
		return metav1.StatusReasonInvalid
	case http.StatusForbidden:
		return metav1.StatusReasonForbidden
	case http.StatusBadRequest:
		return metav1.StatusReasonBadRequest
	case http.StatusMethodNotAllowed:
		return metav1.StatusReasonMethodNotAllowed
	}
	return metav1.StatusReasonInternalError
}

// ListRepositories lists the Repository objects of the namespace.
func (s *ServerClient) ListRepositories(ctx context.Context) ([]porchapi.Repository, error) {
	var list porchapi.RepositoryList
	if err := s.do(ctx, http.MethodGet, s.repoPath(""), nil, &list); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// CreateRepository creates a Repository object.
func (s *ServerClient) CreateRepository(ctx context.Context, repo *porchapi.Repository) (*porchapi.Repository, error) {
	r := *repo
	r.Namespace = s.ns
	r.TypeMeta = metav1.TypeMeta{APIVersion: porchapi.ConfigGroupVersion.String(), Kind: porchapi.KindRepository}
	var out porchapi.Repository
	if err := s.do(ctx, http.MethodPost, s.repoPath(""), &r, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteRepository deletes a Repository object.
func (s *ServerClient) DeleteRepository(ctx context.Context, name string) error {
	return s.do(ctx, http.MethodDelete, s.repoPath(name), nil, nil)
}

// ListPackageRevisions lists the PackageRevision objects.
func (s *ServerClient) ListPackageRevisions(ctx context.Context, opts ListOptions) ([]porchapi.PackageRevision, error) {
	var list porchapi.PackageRevisionList
	p := s.path(porchapi.SchemeGroupVersion.String(), porchapi.ResourcePackageRevisions, "", opts.AllNamespaces)
	if err := s.do(ctx, http.MethodGet, p, nil, &list); err != nil {
		return nil, err
	}
	sortPackageRevisions(list.Items)
	return list.Items, nil
}

// GetPackageRevision reads one PackageRevision.
func (s *ServerClient) GetPackageRevision(ctx context.Context, name string) (*porchapi.PackageRevision, error) {
	var pr porchapi.PackageRevision
	if err := s.do(ctx, http.MethodGet, s.prPath(name), nil, &pr); err != nil {
		return nil, err
	}
	return &pr, nil
}

// CreatePackageRevision creates a PackageRevision from its creation task.
func (s *ServerClient) CreatePackageRevision(ctx context.Context, pr *porchapi.PackageRevision) (*porchapi.PackageRevision, error) {
	in := *pr
	in.Namespace = s.ns
	in.TypeMeta = metav1.TypeMeta{APIVersion: porchapi.SchemeGroupVersion.String(), Kind: porchapi.KindPackageRevision}
	var out porchapi.PackageRevision
	if err := s.do(ctx, http.MethodPost, s.prPath(""), &in, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// UpdatePackageRevision replaces a PackageRevision (PUT).
func (s *ServerClient) UpdatePackageRevision(ctx context.Context, pr *porchapi.PackageRevision) (*porchapi.PackageRevision, error) {
	var out porchapi.PackageRevision
	if err := s.do(ctx, http.MethodPut, s.prPath(pr.Name), pr, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// UpdateApproval replaces a PackageRevision through its approval
// subresource.
func (s *ServerClient) UpdateApproval(ctx context.Context, pr *porchapi.PackageRevision) (*porchapi.PackageRevision, error) {
	var out porchapi.PackageRevision
	if err := s.do(ctx, http.MethodPut, s.prPath(pr.Name, porchapi.SubresourceApproval), pr, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeletePackageRevision deletes a PackageRevision.
func (s *ServerClient) DeletePackageRevision(ctx context.Context, name string) error {
	return s.do(ctx, http.MethodDelete, s.prPath(name), nil, nil)
}

// GetResources reads a PackageRevisionResources.
func (s *ServerClient) GetResources(ctx context.Context, name string) (*porchapi.PackageRevisionResources, error) {
	var prr porchapi.PackageRevisionResources
	if err := s.do(ctx, http.MethodGet, s.prrPath(name), nil, &prr); err != nil {
		return nil, err
	}
	return &prr, nil
}

// UpdateResources replaces a PackageRevisionResources (PUT).
func (s *ServerClient) UpdateResources(ctx context.Context, prr *porchapi.PackageRevisionResources) (*porchapi.PackageRevisionResources, error) {
	in := *prr
	in.Namespace = s.ns
	in.TypeMeta = metav1.TypeMeta{APIVersion: porchapi.SchemeGroupVersion.String(), Kind: porchapi.KindPackageRevisionResources}
	var out porchapi.PackageRevisionResources
	if err := s.do(ctx, http.MethodPut, s.prrPath(prr.Name), &in, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
