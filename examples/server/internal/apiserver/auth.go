package apiserver

import (
	"context"
	"crypto/subtle"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
)

// Role is what an authenticated user may do. A user's roles are the groups
// it belongs to that are named RoleGroupPrefix + role ("cad:approver").
// Every role may read (get, list, watch); RoleAdmin may do everything.
type Role string

// The roles.
const (
	// RoleViewer reads: get, list and watch of every resource.
	RoleViewer Role = "viewer"
	// RoleEditor creates package revisions, edits Drafts (their
	// resources, labels, readiness gates and conditions), proposes them,
	// deletes Drafts and Proposed revisions, and manages PackageVariants
	// and PackageVariantSets.
	RoleEditor Role = "editor"
	// RoleApprover approves and rejects proposals, proposes Published
	// revisions for deletion, rejects such proposals and deletes revisions
	// proposed for deletion: the approval subresource, and the same
	// lifecycle changes through spec.lifecycle.
	RoleApprover Role = "approver"
	// RoleAdmin may do everything, including registering repositories
	// and managing namespaces.
	RoleAdmin Role = "admin"
)

// RoleGroupPrefix prefixes the group names that grant roles.
const RoleGroupPrefix = "cad:"

// User is an authenticated caller.
type User struct {
	// Name identifies the user: the token file's user column or the
	// client certificate's subject common name. It is the author of the
	// user's commits and the PublishedBy of its approvals.
	Name string
	// UID is the token file's uid column; empty for certificates.
	UID string
	// Groups are the token file's groups or the certificate's subject
	// organizations; those named RoleGroupPrefix+role grant the role.
	Groups []string

	// external: an Options.Authorizer authorized the request; roles do
	// not apply.
	external bool
}

// Has reports whether u holds role r: directly, through RoleAdmin, or for
// RoleViewer through any role.
func (u *User) Has(r Role) bool {
	has := func(r Role) bool { return slices.Contains(u.Groups, RoleGroupPrefix+string(r)) }
	switch {
	case has(RoleAdmin) || has(r):
		return true
	case r == RoleViewer:
		return has(RoleEditor) || has(RoleApprover)
	}
	return false
}

// Tokens are the bearer tokens a server accepts, by token.
type Tokens map[string]User

// LoadTokenFile reads a token file; see ParseTokens for its format. Its
// errors name the file and line, never a token.
func LoadTokenFile(path string) (Tokens, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	defer f.Close()
	t, err := ParseTokens(f)
	if err != nil {
		return nil, fmt.Errorf("token file %s: %w", path, err)
	}
	return t, nil
}

// ParseTokens reads tokens in the format of kube-apiserver's static token
// file: CSV, one user a line, `token,user,uid,"group1,group2"`; the groups
// column is optional, lines starting with # and empty lines are skipped.
// Roles come from the groups (see Role):
//
//	# token,user,uid,groups
//	0c5f6a...,alice,u1,"cad:editor"
//	9b2e41...,bob,u2,"cad:approver,team-a"
//
// It returns an error naming the line for a line with fewer than three
// columns, an empty token or user, or a token given twice; no error
// carries a token.
func ParseTokens(r io.Reader) (Tokens, error) {
	cr := csv.NewReader(r)
	cr.Comment = '#'
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	out := Tokens{}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		line, _ := cr.FieldPos(0)
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, fmt.Errorf("line %d: %v", pe.Line, pe.Err)
			}
			return nil, err
		}
		if len(rec) < 3 {
			return nil, fmt.Errorf("line %d: want token,user,uid[,groups], got %d columns", line, len(rec))
		}
		token, name := strings.TrimSpace(rec[0]), strings.TrimSpace(rec[1])
		if token == "" || name == "" {
			return nil, fmt.Errorf("line %d: empty token or user", line)
		}
		if _, dup := out[token]; dup {
			return nil, fmt.Errorf("line %d: the token of user %q is given twice", line, name)
		}
		u := User{Name: name, UID: strings.TrimSpace(rec[2])}
		if len(rec) > 3 {
			for _, g := range strings.Split(rec[3], ",") {
				if g = strings.TrimSpace(g); g != "" {
					u.Groups = append(u.Groups, g)
				}
			}
		}
		out[token] = u
	}
}

// lookup returns the user of token, comparing in constant time.
func (t Tokens) lookup(token string) (*User, bool) {
	var found *User
	for k, u := range t {
		if subtle.ConstantTimeCompare([]byte(k), []byte(token)) == 1 {
			u := u
			found = &u
		}
	}
	return found, found != nil
}

type userKey struct{}

// userFrom returns the authenticated user of a request's context; nil when
// the server runs without authentication.
func userFrom(ctx context.Context) *User {
	u, _ := ctx.Value(userKey{}).(*User)
	return u
}

// authEnabled reports whether the server authenticates requests.
func (s *Server) authEnabled() bool {
	return s.opts.Tokens != nil || s.opts.ClientCertificates || s.opts.RequestHeader != nil
}

// authenticateRequest returns the user of r: from a bearer token, else
// from the client certificate the TLS handshake verified. It returns nil
// and no error for a request without credentials, and an error for
// credentials that do not authenticate.
func (s *Server) authenticateRequest(r *http.Request) (*User, error) {
	if s.opts.RequestHeader != nil {
		if u, err := s.opts.RequestHeader.authenticate(r); u != nil || err != nil {
			return u, err
		}
	}
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, token, _ := strings.Cut(h, " ")
		if !strings.EqualFold(scheme, "Bearer") || s.opts.Tokens == nil {
			return nil, errors.New("unsupported authorization scheme")
		}
		u, ok := s.opts.Tokens.lookup(strings.TrimSpace(token))
		if !ok {
			return nil, errors.New("invalid bearer token")
		}
		return u, nil
	}
	if s.opts.ClientCertificates && r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && len(r.TLS.VerifiedChains[0]) > 0 {
		cert := r.TLS.VerifiedChains[0][0]
		if cert.Subject.CommonName == "" {
			return nil, errors.New("the client certificate has no common name")
		}
		return &User{Name: cert.Subject.CommonName, Groups: slices.Clone(cert.Subject.Organization)}, nil
	}
	return nil, nil
}

// publicPaths are served without authentication, as kube-apiserver serves
// them to anyone.
var publicPaths = map[string]bool{"/healthz": true, "/livez": true, "/readyz": true, "/version": true}

func roleGroups() string {
	var gs []string
	for _, r := range []Role{RoleViewer, RoleEditor, RoleApprover, RoleAdmin} {
		gs = append(gs, RoleGroupPrefix+string(r))
	}
	return strings.Join(gs, ", ")
}

// errDenied is the 403 of a user who lacks the roles for what it asked.
func errDenied(rq *request, u *User, what string, roles ...Role) error {
	var names []string
	for _, r := range roles {
		names = append(names, string(r))
	}
	msg := fmt.Sprintf("User %q cannot %s: it needs the role %s", u.Name, what, strings.Join(names, " or "))
	e := errForbidden(rq.def.gr, rq.name, msg)
	if rq.name == "" {
		e.ErrStatus.Message = msg
	}
	return e
}

// requireRole returns nil when the request's user holds one of roles (or the
// server has no authentication), else the 403 for doing what.
func requireRole(ctx context.Context, rq *request, what string, roles ...Role) error {
	u := userFrom(ctx)
	if u == nil || u.external {
		return nil
	}
	for _, r := range roles {
		if u.Has(r) {
			return nil
		}
	}
	return errDenied(rq, u, what, roles...)
}
