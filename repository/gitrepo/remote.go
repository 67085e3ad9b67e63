package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage"
)

// remote is the connection to a remote repository. Its local clone is a
// mirror: refs/heads/*, refs/tags/* and refs/cad/* (the metadata ref) as
// the remote has them.
type remote struct {
	url         string // without credentials
	redactedURL string
	auth        transport.AuthMethod
	secrets     []string
	insecure    bool
	caBundle    []byte
	// maxAge is Options.RemoteReadMaxAge; synced is when the mirror was
	// last brought up to date (both under the store's write lock).
	maxAge time.Duration
	synced time.Time
}

// syncForRead brings the mirror up to date for a read, unless it was
// within maxAge.
func (rm *remote) syncForRead(ctx context.Context, st *store) error {
	if rm.maxAge > 0 && !rm.synced.IsZero() && time.Since(rm.synced) < rm.maxAge {
		return nil
	}
	return rm.sync(ctx, st)
}

var mirrorRefSpecs = []config.RefSpec{"+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*", "+refs/cad/*:refs/cad/*"}

func newRemote(u string, o Options) (*remote, error) {
	clean, urlAuth := splitURLCredentials(u)
	if _, err := transport.NewEndpoint(clean); err != nil {
		return nil, fmt.Errorf("invalid URL %q", redactURL(u))
	}
	rm := &remote{url: clean, redactedURL: redactURL(clean), auth: o.Auth, insecure: o.InsecureSkipTLS, caBundle: o.CABundle,
		maxAge: o.RemoteReadMaxAge}
	if rm.auth == nil && urlAuth != nil {
		rm.auth = urlAuth
	}
	if urlAuth != nil {
		rm.secrets = append(rm.secrets, urlAuth.Password)
		if urlAuth.Password == "" {
			rm.secrets = append(rm.secrets, urlAuth.Username) // a token as user name
		}
	}
	switch a := rm.auth.(type) {
	case *githttp.BasicAuth:
		rm.secrets = append(rm.secrets, a.Password)
	case *githttp.TokenAuth:
		rm.secrets = append(rm.secrets, a.Token)
	}
	return rm, nil
}

// redact wraps err so that its message holds none of the credentials.
func (rm *remote) redact(err error) error {
	if err == nil {
		return nil
	}
	var secrets []string
	for _, s := range rm.secrets {
		if len(s) >= 3 {
			secrets = append(secrets, s)
		}
	}
	if len(secrets) == 0 {
		return err
	}
	return &redactedError{err: err, secrets: secrets}
}

type redactedError struct {
	err     error
	secrets []string
}

func (e *redactedError) Error() string {
	msg := e.err.Error()
	for _, s := range e.secrets {
		msg = strings.ReplaceAll(msg, s, "***")
	}
	return msg
}

func (e *redactedError) Unwrap() error { return e.err }

// sync brings the local mirror up to date: refs always, objects only
// those it lacks. The store must be locked for writing. A mirror on disk
// whose refs a crash damaged (go-git's fetch writes them in place) is a
// cache: its damaged refs are dropped and the fetch brings them back.
func (rm *remote) sync(ctx context.Context, st *store) error {
	start := time.Now()
	err := rm.fetch(ctx, st)
	if err == nil {
		rm.synced = start
	}
	if err == nil || st.fsrefs == nil || errors.Is(err, ctx.Err()) {
		return err
	}
	dropped, derr := st.fsrefs.dropDamaged()
	if derr != nil || dropped == 0 {
		return err
	}
	st.warn("dropped damaged refs of the local mirror", "refs", dropped)
	return rm.fetch(ctx, st)
}

func (rm *remote) fetch(ctx context.Context, st *store) error {
	rem := git.NewRemote(st.s, &config.RemoteConfig{Name: "origin", URLs: []string{rm.url}})
	err := rem.FetchContext(ctx, &git.FetchOptions{
		RemoteName:      "origin",
		RefSpecs:        mirrorRefSpecs,
		Auth:            rm.auth,
		Prune:           true,
		Tags:            git.NoTags,
		Force:           true,
		InsecureSkipTLS: rm.insecure,
		CABundle:        rm.caBundle,
	})
	switch {
	case err == nil, errors.Is(err, git.NoErrAlreadyUpToDate):
		return nil
	case errors.Is(err, transport.ErrEmptyRemoteRepository):
		return clearRefs(st.s)
	}
	return rm.classify("fetch from "+rm.redactedURL, err)
}

// classify wraps a transport error with the sentinel it matches.
func (rm *remote) classify(what string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	sentinel := errUnavailable
	if errors.Is(err, transport.ErrRepositoryNotFound) {
		sentinel = errRepoNotFound
	}
	return fmt.Errorf("%w: %s: %w", sentinel, what, rm.redact(err))
}

func clearRefs(s storage.Storer) error {
	iter, err := s.IterReferences()
	if err != nil {
		return err
	}
	var names []plumbing.ReferenceName
	_ = iter.ForEach(func(r *plumbing.Reference) error {
		if r.Name().IsBranch() || r.Name().IsTag() {
			names = append(names, r.Name())
		}
		return nil
	})
	for _, n := range names {
		if err := s.RemoveReference(n); err != nil {
			return err
		}
	}
	return nil
}

// push sends the objects written through v and the ref updates of t in
// one push whose commands carry the expected old values, atomic where the
// server supports it. It returns an error matching errRetry when a ref
// was not at its expected value.
func (rm *remote) push(ctx context.Context, v *view, t *txn) (err error) {
	ep, err := transport.NewEndpoint(rm.url)
	if err != nil {
		return err
	}
	ep.InsecureSkipTLS = rm.insecure
	ep.CaBundle = rm.caBundle
	cl, err := client.NewClient(ep)
	if err != nil {
		return rm.classify("push to "+rm.redactedURL, err)
	}
	sess, err := cl.NewReceivePackSession(ep, rm.auth)
	if err != nil {
		return rm.classify("push to "+rm.redactedURL, err)
	}
	defer func() {
		if cerr := sess.Close(); cerr != nil && err == nil {
			err = rm.classify("push to "+rm.redactedURL, cerr)
		}
	}()
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil && !errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return rm.classify("push to "+rm.redactedURL, err)
	}
	current := map[plumbing.ReferenceName]plumbing.Hash{}
	if ar != nil {
		refs, err := ar.AllReferences()
		if err != nil {
			return err
		}
		iter, _ := refs.IterReferences()
		_ = iter.ForEach(func(r *plumbing.Reference) error {
			if r.Type() == plumbing.HashReference {
				current[r.Name()] = r.Hash()
			}
			return nil
		})
	}
	for _, u := range t.updates {
		if current[u.name] != u.old {
			return fmt.Errorf("%w: %s is %s on the remote, expected %s", errRetry, u.name, hashOrNone(current[u.name]), hashOrNone(u.old))
		}
	}
	caps := capability.NewList()
	if ar != nil {
		caps = ar.Capabilities
	}
	req := packp.NewReferenceUpdateRequestFromCapabilities(caps)
	if len(t.updates) > 1 {
		if !caps.Supports(capability.Atomic) {
			return fmt.Errorf("%w: the remote does not support atomic pushes", errUnavailable)
		}
		_ = req.Capabilities.Set(capability.Atomic)
	}
	allDelete := true
	for _, u := range t.updates {
		req.Commands = append(req.Commands, &packp.Command{Name: u.name, Old: u.old, New: u.new})
		if !u.new.IsZero() {
			allDelete = false
		}
	}
	if allDelete && !caps.Supports(capability.DeleteRefs) {
		return fmt.Errorf("%w: the remote does not allow deleting refs", errUnavailable)
	}
	done := make(chan error, 1)
	if !allDelete {
		rd, wr := io.Pipe()
		req.Packfile = rd
		hashes := dedupe(v.written)
		go func() {
			_, err := packfile.NewEncoder(wr, v.s, false).Encode(hashes, 0)
			done <- wr.CloseWithError(err)
		}()
		defer rd.Close()
	} else {
		close(done)
	}
	rs, err := sess.ReceivePack(ctx, req)
	if perr := <-done; perr != nil && err == nil {
		err = perr
	}
	if err != nil {
		if rs != nil && rs.UnpackStatus == "ok" {
			return fmt.Errorf("%w: push rejected: %w", errRetry, rm.redact(err))
		}
		return rm.classify("push to "+rm.redactedURL, err)
	}
	if rs != nil {
		if rs.UnpackStatus != "ok" {
			return fmt.Errorf("push to %s: unpack error: %s", rm.redactedURL, rs.UnpackStatus)
		}
		for _, cs := range rs.CommandStatuses {
			if cs.Status != "ok" {
				return fmt.Errorf("%w: push rejected: %s: %s", errRetry, cs.ReferenceName, cs.Status)
			}
		}
	}
	return nil
}

func dedupe(hs []plumbing.Hash) []plumbing.Hash {
	seen := make(map[plumbing.Hash]bool, len(hs))
	out := hs[:0:0]
	for _, h := range hs {
		if !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	return out
}

func hashOrNone(h plumbing.Hash) string {
	if h.IsZero() {
		return "absent"
	}
	return h.String()
}
