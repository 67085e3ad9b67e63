package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// Fetcher reads packages from git repositories for engine.Engine.Clone
// and Upgrade (a repository.UpstreamFetcher) and lists their refs for
// DiscoverGitUpgrades (a repository.UpstreamLister). Each Fetch lists the remote's refs, fetches
// the one ref it resolves into memory, shallow (depth 1), and reads the
// package directory's subtree; nothing is kept between calls. The zero
// value is ready to use. A Fetcher is safe for concurrent use.
type Fetcher struct {
	// Auth is the default credentials, used when the upstream's Auth is
	// nil; see Options.Auth. Credentials embedded in an http(s) URL are
	// used when both are nil.
	Auth transport.AuthMethod
	// InsecureSkipTLS and CABundle configure TLS to an https remote.
	InsecureSkipTLS bool
	CABundle        []byte
}

var _ repository.UpstreamFetcher = (*Fetcher)(nil)

// Fetch returns the files under up.Directory at up.Ref and the commit
// hash they were read from. The ref is resolved as Porch does: the tag,
// then the branch, "<directory>/<ref>", then the tag, then the branch,
// "<ref>"; a full ref name ("refs/...") is used as is. Symbolic links and
// submodules are skipped, as kpt pkg get skips them.
//
// up.Auth, when set, replaces f.Auth (see Fetcher.auth for the kinds it
// takes). Errors match repository.ErrInvalidInput for an empty or bad URL,
// an empty ref or credentials that cannot be used (mixed kinds, an
// unreadable ssh key); repository.ErrNotFound when the repository, the
// ref or the directory does not exist; repository.ErrNotSupported, with
// a *FormatError, for a remote that advertises an object format other
// than SHA-1; otherwise they are transport failures. No error carries
// credentials.
func (f *Fetcher) Fetch(ctx context.Context, up repository.GitUpstream) (revision.Files, string, error) {
	const op = "fetch upstream"
	fail := func(sentinel error, format string, args ...any) (revision.Files, string, error) {
		return revision.Files{}, "", repository.Errorf(op, redactURL(up.Repo), revision.Key{}, sentinel, format, args...)
	}
	if up.Repo == "" || up.Ref == "" {
		return fail(repository.ErrInvalidInput, "an upstream needs a repo and a ref")
	}
	auth, err := f.auth(up.Auth)
	if err != nil {
		return fail(repository.ErrInvalidInput, "%v", err)
	}
	rm, err := newRemote(up.Repo, Options{Auth: auth, InsecureSkipTLS: f.InsecureSkipTLS, CABundle: f.CABundle})
	if err != nil {
		return fail(repository.ErrInvalidInput, "%v", err)
	}
	dir := strings.Trim(path.Clean("/"+up.Directory), "/")

	st := memory.NewStorage()
	rem := git.NewRemote(st, &config.RemoteConfig{Name: "origin", URLs: []string{rm.url}})
	refs, err := rem.ListContext(ctx, &git.ListOptions{Auth: rm.auth, InsecureSkipTLS: rm.insecure, CABundle: rm.caBundle})
	if err != nil {
		if errors.Is(err, transport.ErrEmptyRemoteRepository) {
			return fail(repository.ErrNotFound, "%s is empty", rm.redactedURL)
		}
		return revision.Files{}, "", fetchError(op, rm, err)
	}
	name, ok := resolveRef(refs, dir, up.Ref)
	if !ok {
		return fail(repository.ErrNotFound, "no tag or branch %q in %s", candidates(dir, up.Ref)[0], rm.redactedURL)
	}
	spec := config.RefSpec("+" + name.String() + ":" + name.String())
	err = rem.FetchContext(ctx, &git.FetchOptions{
		RemoteName: "origin", RefSpecs: []config.RefSpec{spec}, Auth: rm.auth, Tags: git.NoTags, Depth: 1,
		Force: true, InsecureSkipTLS: rm.insecure, CABundle: rm.caBundle,
	})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return revision.Files{}, "", fetchError(op, rm, err)
	}
	ref, err := st.Reference(name)
	if err != nil {
		return fail(repository.ErrNotFound, "ref %s not fetched from %s", name, rm.redactedURL)
	}
	commit, err := peelCommit(st, ref.Hash())
	if err != nil {
		return fail(repository.ErrNotFound, "ref %s of %s: %v", name, rm.redactedURL, err)
	}
	tree, err := commit.Tree()
	if err != nil {
		return revision.Files{}, "", fmt.Errorf("%s %s: %w", op, rm.redactedURL, err)
	}
	if dir != "" {
		if tree, err = tree.Tree(dir); err != nil {
			return fail(repository.ErrNotFound, "no directory %q at %s in %s", dir, name.Short(), rm.redactedURL)
		}
	}
	m := map[string][]byte{}
	err = tree.Files().ForEach(func(file *object.File) error {
		if file.Mode != filemode.Regular && file.Mode != filemode.Executable {
			return nil
		}
		r, err := file.Reader()
		if err != nil {
			return err
		}
		defer r.Close()
		data, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		m[file.Name] = data
		return nil
	})
	if err != nil {
		return revision.Files{}, "", fmt.Errorf("%s %s: %w", op, rm.redactedURL, err)
	}
	files, err := revision.NewFiles(m)
	if err != nil {
		return revision.Files{}, "", fmt.Errorf("%s %s: %w", op, rm.redactedURL, err)
	}
	return files, commit.Hash.String(), nil
}

// candidates are the ref names Fetch tries, in order.
func candidates(dir, ref string) []plumbing.ReferenceName {
	if strings.HasPrefix(ref, "refs/") {
		return []plumbing.ReferenceName{plumbing.ReferenceName(ref)}
	}
	var out []plumbing.ReferenceName
	if dir != "" {
		out = append(out, plumbing.NewTagReferenceName(dir+"/"+ref), plumbing.NewBranchReferenceName(dir+"/"+ref))
	}
	return append(out, plumbing.NewTagReferenceName(ref), plumbing.NewBranchReferenceName(ref))
}

func resolveRef(refs []*plumbing.Reference, dir, ref string) (plumbing.ReferenceName, bool) {
	have := make(map[plumbing.ReferenceName]bool, len(refs))
	for _, r := range refs {
		have[r.Name()] = true
	}
	for _, c := range candidates(dir, ref) {
		if have[c] {
			return c, true
		}
	}
	return "", false
}

// peelCommit returns the commit h names, through annotated tags.
func peelCommit(st *memory.Storage, h plumbing.Hash) (*object.Commit, error) {
	for range 10 {
		obj, err := object.GetObject(st, h)
		if err != nil {
			return nil, err
		}
		switch o := obj.(type) {
		case *object.Commit:
			return o, nil
		case *object.Tag:
			h = o.Target
		default:
			return nil, fmt.Errorf("%s is a %s, not a commit", h, obj.Type())
		}
	}
	return nil, fmt.Errorf("tag chain from %s too long", h)
}

func fetchError(op string, rm *remote, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if errors.Is(err, transport.ErrRepositoryNotFound) {
		return repository.Errorf(op, rm.redactedURL, revision.Key{}, repository.ErrNotFound, "%v", rm.redact(err))
	}
	if ferr := checkRemoteFormat(rm.redactedURL, nil, err); ferr != nil {
		return repository.Errorf(op, rm.redactedURL, revision.Key{}, repository.ErrNotSupported, "%w", ferr)
	}
	return fmt.Errorf("%s %s: %w", op, rm.redactedURL, rm.redact(err))
}

var _ repository.UpstreamLister = (*Fetcher)(nil)

// Refs returns the branches and tags of up.Repo by short name, each with
// the commit it names: an annotated tag is peeled when the server
// advertises the peeled value, else its tag object id is returned. Only
// up.Repo and up.Auth are used. Errors are as Fetch's.
func (f *Fetcher) Refs(ctx context.Context, up repository.GitUpstream) (map[string]string, error) {
	const op = "list upstream"
	if up.Repo == "" {
		return nil, repository.Errorf(op, "", revision.Key{}, repository.ErrInvalidInput, "an upstream needs a repo")
	}
	auth, err := f.auth(up.Auth)
	if err != nil {
		return nil, repository.Errorf(op, redactURL(up.Repo), revision.Key{}, repository.ErrInvalidInput, "%v", err)
	}
	rm, err := newRemote(up.Repo, Options{Auth: auth, InsecureSkipTLS: f.InsecureSkipTLS, CABundle: f.CABundle})
	if err != nil {
		return nil, repository.Errorf(op, redactURL(up.Repo), revision.Key{}, repository.ErrInvalidInput, "%v", err)
	}
	rem := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{rm.url}})
	refs, err := rem.ListContext(ctx, &git.ListOptions{Auth: rm.auth, InsecureSkipTLS: rm.insecure, CABundle: rm.caBundle, PeelingOption: git.AppendPeeled})
	if err != nil {
		if errors.Is(err, transport.ErrEmptyRemoteRepository) {
			return map[string]string{}, nil
		}
		return nil, fetchError(op, rm, err)
	}
	out := make(map[string]string, len(refs))
	peeled := map[string]string{}
	for _, r := range refs {
		name := r.Name()
		if r.Type() != plumbing.HashReference || !(name.IsBranch() || name.IsTag()) {
			continue
		}
		short := shortName(name)
		if base, ok := strings.CutSuffix(short, "^{}"); ok {
			peeled[base] = r.Hash().String()
			continue
		}
		out[short] = r.Hash().String()
	}
	for name, h := range peeled {
		out[name] = h
	}
	return out, nil
}

// auth returns the go-git credentials for an upstream: f.Auth when c is
// nil, else c as a *http.BasicAuth (user name and password or token), a
// *http.TokenAuth (bearer token) or *ssh.PublicKeys (a PEM private key,
// user Username or "git"). The error never carries a secret.
func (f *Fetcher) auth(c *repository.Credentials) (transport.AuthMethod, error) {
	if c == nil {
		return f.Auth, nil
	}
	switch c.Kind() {
	case "":
		return f.Auth, nil
	case repository.CredentialsBasic:
		return &githttp.BasicAuth{Username: c.Username, Password: c.Password}, nil
	case repository.CredentialsBearer:
		return &githttp.TokenAuth{Token: c.BearerToken}, nil
	case repository.CredentialsSSH:
		user := c.Username
		if user == "" {
			user = "git"
		}
		k, err := gitssh.NewPublicKeys(user, c.SSHPrivateKey, c.SSHPassphrase)
		if err != nil {
			return nil, errors.New("the ssh private key cannot be read (bad PEM or passphrase)")
		}
		return k, nil
	default:
		return nil, fmt.Errorf("%v: set one kind of credentials", c)
	}
}
