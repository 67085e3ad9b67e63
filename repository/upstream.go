package repository

import (
	"context"
	"fmt"

	"github.com/configasdata/cad/revision"
)

// GitUpstream is a package in a git repository that no Repository of the
// caller manages: kpt's and Porch's upstream git{repo, directory, ref},
// plus credentials. engine.Engine.Clone and Upgrade read it through an
// [UpstreamFetcher].
type GitUpstream struct {
	// Repo is the repository URL, as the fetcher understands it.
	Repo string
	// Directory is the package's directory in the repository; empty or
	// "/" is the root.
	Directory string
	// Ref is a tag or branch, resolved as Porch does: "<Directory>/<Ref>"
	// first (a package-scoped tag such as "net/istio/v1"), then Ref.
	Ref string
	// Auth is the credentials for Repo; nil means the fetcher's default.
	// They are never written to the package.
	Auth *Credentials
}

// UpstreamFetcher reads a package from a git upstream. gitrepo.Fetcher
// implements it with go-git; the engine itself speaks no git.
// Implementations must be safe for concurrent use.
type UpstreamFetcher interface {
	// Fetch returns the files of up.Directory at up.Ref (relative to the
	// directory) and the commit they were read from. Errors should match
	// ErrNotFound when the ref or directory does not exist, and
	// ErrInvalidInput for credentials of a kind the fetcher cannot use.
	Fetch(ctx context.Context, up GitUpstream) (files revision.Files, commit string, err error)
}

// UpstreamLister lists the refs of a git repository that no Repository
// of the caller manages, to discover upgrades. gitrepo.Fetcher implements
// it. Implementations must be safe for concurrent use.
type UpstreamLister interface {
	// Refs returns the branches and tags of up.Repo by short name ("main",
	// "net/istio/v2"), each with the commit it points at (peeled through
	// annotated tags). Errors should match ErrNotFound for a repository
	// that does not exist.
	Refs(ctx context.Context, up GitUpstream) (map[string]string, error)
}

// Credentials authenticate to a remote store (a git remote, a chart
// repository, a registry). Set one kind: Username and Password (a
// password, or a token sent as the password, as git hosts take them), a
// BearerToken, or an SSHPrivateKey (PEM) with its SSHPassphrase and
// Username as the ssh user (default "git"). A consumer that cannot use
// the kind given returns an error matching ErrInvalidInput.
//
// Formatting Credentials with fmt (%v, %+v, %#v, %s) prints which kinds
// are set, never a secret, so they are safe in errors and logs.
type Credentials struct {
	Username      string
	Password      string
	BearerToken   string
	SSHPrivateKey []byte
	SSHPassphrase string
}

// Credential kinds, as Kind returns them.
const (
	CredentialsBasic  = "basic"
	CredentialsBearer = "bearer"
	CredentialsSSH    = "ssh"
	CredentialsMixed  = "mixed"
)

// Kind returns which kind of credentials c holds: CredentialsBasic,
// CredentialsBearer, CredentialsSSH, or "" for none. It returns
// CredentialsMixed when more than one kind is set, which no consumer
// accepts.
func (c Credentials) Kind() string {
	var kinds []string
	if len(c.SSHPrivateKey) > 0 || c.SSHPassphrase != "" {
		kinds = append(kinds, CredentialsSSH)
	}
	if c.BearerToken != "" {
		kinds = append(kinds, CredentialsBearer)
	}
	if c.Password != "" || (c.Username != "" && len(kinds) == 0) {
		kinds = append(kinds, CredentialsBasic)
	}
	switch len(kinds) {
	case 0:
		return ""
	case 1:
		return kinds[0]
	default:
		return CredentialsMixed
	}
}

// String returns the kind of credentials and the user name, never a
// secret.
func (c Credentials) String() string {
	if c.Kind() == "" {
		return "<no credentials>"
	}
	if c.Username != "" {
		return fmt.Sprintf("<%s credentials for %s>", c.Kind(), c.Username)
	}
	return fmt.Sprintf("<%s credentials>", c.Kind())
}

// Format prints c as String does for every verb, so that no format verb
// (%+v, %#v included) reveals a secret.
func (c Credentials) Format(f fmt.State, _ rune) { fmt.Fprint(f, c.String()) }
